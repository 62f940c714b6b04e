// The claims of one lock as the decision sees them: which are valid, which wait, in which
// order they are served, and who is served next. Part of the pure decision (decision.h).
//
// Order: priority (Foreground first), then when the claim started waiting (its creation, or
// when it last lost the lock), then its age, then its name. A holder is never pre-empted.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "controller/decision.h"

namespace eslease::controller {

// One claim as the decision sees it.
struct ClaimView {
  const LeaseRecord* lease = nullptr;
  std::string invalid;            // why it cannot be served ("" when valid)
  bool timed_out = false;         // terminal, or its wait ran out now
  bool released = false;          // terminal for its (finished) pod
  WallTime waiting_since{};       // queue order
  const PodState* pod = nullptr;  // the pod it would be granted to now (nullptr: none is live)
  bool waiting = false;           // in the queue: valid, not terminal, not deleted, not holding
  // A try-lock (acquireTimeoutSeconds 0) not decided yet (no phase): it waits in this decision
  // only, to be granted in it or to end TimedOut (status_projection), never timed out before
  // its grant was considered.
  bool try_lock = false;
};

// The one ordering of waiting claims.
std::tuple<Priority, WallTime, WallTime, const std::string&> queue_rank(const ClaimView& claim,
                                                                        WallTime waiting_since);
inline auto queue_rank(const ClaimView& claim) {
  return queue_rank(claim, claim.waiting_since);
}

struct ClaimQueue {
  std::vector<ClaimView> claims;  // every claim, in queue order
  // The claim the lock document names (same Lease and UID), if any.
  const ClaimView* owner = nullptr;
  // The earliest moment a waiting claim times out.
  std::optional<MonoTime> next_timeout;
  // A lock of capacity above 1: who gets a grant's slots is decided for all of them at once
  // (slot_allocation.h), so the grant rules only say whether a grant ends now.
  bool successors_by_allocation = false;
};

// True when `lease`'s grant is the document's (or one of the lock's grants) and we still
// renew it.
bool held_by(const LockWorld& world, const LeaseRecord& lease);

// A lock's capacity is what its oldest live claim states (1 without one); a claim stating
// another is Invalid, its message naming both values. The claim it comes from, if any, of
// the claims naming `lock` (every claim when empty).
const LeaseRecord* capacity_source(const std::vector<LeaseRecord>& claims, const std::string& lock = "");
std::int64_t lock_capacity(const std::vector<LeaseRecord>& claims, const std::string& lock = "");
// Whether any of the claims is on a lock set: its locks are then decided together.
bool any_lock_set(const std::vector<LeaseRecord>& claims);

ClaimQueue classify_claims(const LockWorld& world);

// Who gets the lock next, and which pod it goes to.
struct NextGrant {
  const ClaimView* claim = nullptr;
  const PodState* pod = nullptr;
  WallTime waiting_since{};
};

// The next claim to grant. An election claim that held the lock fails over to another of
// its pods before anyone else is served; a claim-mode owner that is losing the lock queues
// again behind those already waiting, from now. `losing_owner` is the queue's owner when the
// document's grant is ending, nullptr for a free lock.
std::optional<NextGrant> next_claim(const LockWorld& world, const ClaimQueue& queue,
                                    const ClaimView* losing_owner);

// The best live pod for an election claim: Ready before not-yet-Ready, then oldest, then
// name; never the pod with `exclude_uid`.
const PodState* election_pod(const LockWorld& world, const LeaseRecord& lease,
                             const std::string& exclude_uid);

// "name" from "ns/name" (a holder pod, a Lease).
std::string name_of(const std::string& holder);

}  // namespace eslease::controller
