// Acquiring a lock of any shape outside Kubernetes (the design's "Lock shapes"): one lock, a
// semaphore slot, a shared or exclusive hold, a lock set. The first attempt of a claim that
// takes whole locks (every capacity-1 lock, every Exclusive claim) is sent unread: one create
// for one document, one _bulk of creates for several. After that, each round plans on the
// documents as last read (the failed attempt's own read, or one _mget of every slot of the
// claim's locks) with plan_claim, and grants in one write when it can. Expired documents
// (expiry.h, on our own monotonic clock) are taken over in that write. While the locks are
// busy it waits with backoff, and no longer than until the earliest holder would expire.
// Used by the `eslease` tool and by library users.
#pragma once

#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "lock/lock_store.h"
#include "lock/slots.h"

namespace eslease::lock {

// A wait without a time limit.
inline constexpr Millis kWaitForever = Millis::max();

struct WaitOptions {
  Millis wait{0};  // how long to keep trying; 0 = one attempt (plus a takeover if due); or kWaitForever
  BackoffPolicy backoff{Millis(100), Millis(2000), 2.0};
  // Called before waiting behind a holder not seen waiting behind before (to say who it is).
  std::function<void(const LockState& holder)> on_wait = {};
};

// What a claimant asks for: its locks (one, or a set: check_claim), how, and as whom.
struct Claim {
  std::vector<LockKey> keys;
  ClaimShape shape;
  Grantee grantee;
};

// A grantee outside Kubernetes: `holder`, with a fresh random lease UID (each acquire is a
// grant of its own) and `ttl`.
Grantee direct_grantee(std::string holder, Millis ttl = kDefaultTtl);

// Whether another round of acquiring may succeed where `error` failed: the backend was away,
// someone moved between our read and our write (kConflict), or grants were paused until the
// next fencing token is proven larger (kGrantsPaused). The acquirer retries these until its
// wait runs out; any other error ends the wait at once.
bool worth_another_round(const Error& error);

// The grant, or an Error: kBusy naming a holder when the wait ran out (an unreachable backend
// is kUnavailable), kInvalid when the locks' holders state another capacity, kCancelled when
// stopped, or the last error worth another round when it persists to the end of the wait
// (errors that retrying cannot fix - bad credentials, bad input - return at once). A claimant
// that holds exactly this grant already (same holder identity) gets it back, renewed.
Result<HeldGrant> acquire(LockStore& store, Clock& clock, const Claim& claim, const WaitOptions& options,
                          std::stop_token stop = {});

}  // namespace eslease::lock
