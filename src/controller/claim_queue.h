// The claims of some locks as the decision sees them: which are valid, which wait, and the
// one order they are served in. Part of the pure decision (decision.h).
//
// Order: priority (Foreground first), then when the claim started waiting (when the
// controller first saw it, to the microsecond, or when it last lost the lock), then its age,
// then its name. A holder is never pre-empted.
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
  // The grant it has on the locks, renewed or not (nullptr: none).
  const GrantView* grant = nullptr;
  // A try-lock (acquireTimeoutSeconds 0) not decided yet (no phase): served in this decision
  // only if it can be at once, else it ends TimedOut (status_projection), never timed out
  // before its grant was considered and never kept waiting.
  bool try_lock = false;
  // Renewed for it and not revoked: it holds the lock.
  bool holds() const { return grant && grant->renewing && !grant->revoked; }
  // May be served: valid, not ended, not being deleted.
  bool eligible() const { return invalid.empty() && !timed_out && !released && !lease->being_deleted; }
  // In the queue: eligible and holding nothing.
  bool waiting() const { return eligible() && !grant; }
};

// The one ordering of waiting claims.
std::tuple<Priority, WallTime, WallTime, const std::string&> queue_rank(const ClaimView& claim);

struct ClaimQueue {
  std::vector<ClaimView> claims;  // every claim, in queue order
  // The earliest moment a waiting claim times out.
  std::optional<MonoTime> next_timeout;
  // The claim a grant names (same Lease and UID), if any.
  const ClaimView* owner_of(const LockWorld& world, const GrantView& grant) const;
  const ClaimView* named(const std::string& lease) const;
};

ClaimQueue classify_claims(const LockWorld& world);

// A lock's capacity is what its oldest live claim states (1 without one); a claim stating
// another is Invalid, its message naming both values. Shown the claims on one lock one by
// one, in any order, it works that out without keeping them.
class CapacityOf {
 public:
  void consider(const LeaseRecord& claim);
  LockShape shape(const std::string& lock) const;

 private:
  std::optional<std::tuple<WallTime, std::string, std::int64_t>> oldest_;  // created, name, capacity
};

// Each lock's capacity, worked out once per reconcile.
std::vector<LockShape> lock_shapes(const std::vector<LeaseRecord>& claims,
                                   const std::vector<std::string>& locks);

// The best live pod for an election claim: Ready before not-yet-Ready, then oldest, then
// name; never the pod with `exclude_uid`.
const PodState* election_pod(const LockWorld& world, const LeaseRecord& lease,
                             const std::string& exclude_uid);

// "name" from "ns/name" (a holder pod, a Lease).
std::string name_of(const std::string& holder);

}  // namespace eslease::controller
