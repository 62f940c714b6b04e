// Acquiring a lock of any shape outside Kubernetes (the design's "Lock shapes"): a semaphore
// slot, a shared or exclusive hold, a lock set. The first attempt of a claim that takes
// whole locks (Exclusive) is one _bulk of creates, unread, as a single acquire is one create;
// after that, each round reads every slot of the claim's locks in one _mget, decides with
// plan_claim and grants in one _bulk when it can. Expired documents (expiry.h, on our own
// monotonic clock) are taken over in that _bulk. Waits with backoff as acquire_waiting does.
#pragma once

#include <stop_token>
#include <vector>

#include "common/clock.h"
#include "lock/acquirer.h"
#include "lock/lock_store.h"
#include "lock/slots.h"

namespace eslease::lock {

struct ShapedClaim {
  std::vector<LockKey> keys;  // one lock, or a set (check_claim)
  ClaimShape shape;
  Grantee grantee;
};

// The grant, or an Error: kBusy naming a holder when the wait ran out, kInvalid when the
// locks' holders state another capacity, kCancelled when stopped, or the last error worth
// another round (worth_another_round) when it persists to the end of the wait. A claimant that holds exactly
// this grant already (same holder identity) gets it back, renewed.
Result<HeldGrant> acquire_shaped(LockStore& store, Clock& clock, const ShapedClaim& claim,
                                 const WaitOptions& options, std::stop_token stop = {});

}  // namespace eslease::lock
