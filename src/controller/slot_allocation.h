// Which waiting claims get which slots now, for locks of every shape (the design's "Lock
// shapes"): one lock of capacity N, Shared and Exclusive access, and lock sets that overlap.
// Pure, like the rest of the decision (decision.h): the caller says what is free and who
// waits, and carries the grants out.
//
// One rule for every shape. Waiting claims are walked once, in queue_rank's order:
//   - a claim that can be served now takes its slots: an Exclusive claim every slot of each of
//     its locks, a Shared claim the lowest free slot of each; a set all of them or none;
//   - a claim that cannot be served yet keeps for itself what it needs of what is still free on
//     each of its locks (every free slot for Exclusive, the lowest one for Shared), so no claim
//     ranked below it takes that: no writer starves behind readers, no set behind single locks;
//   - a claim with no live pod to grant to takes and keeps nothing (see allocate_slots).
// Holders are never pre-empted: a taken slot is only ever given by its holder leaving, or taken
// again by the holder's own claim in a new shape (SlotHolder::reusable_by). As the rank is a
// total order and nobody holds part of a set, no two claims wait for each other.
//
// Slots are numbered as in direct mode (lock/slots.h): slot k of a lock is its k-th document.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/model.h"
#include "lock/slots.h"

namespace eslease::controller {

// Who holds a taken slot: a claim (its id) or a holder the controller did not grant (direct
// mode, a document from before), and how.
struct SlotHolder {
  std::string holder;
  lock::Access access = lock::Access::kExclusive;
  // The claim that may take this slot as if it were free (""): its holder's own claim, being
  // granted again in a new shape while its old grant still runs, to the same pod.
  std::string reusable_by = {};
};

// One lock: slot k at index k, k in [0, capacity). nullopt: free now (no document, or one
// that may be handed over now). A grant being revoked still counts as taken until it may be
// handed over: a holder is never pre-empted.
struct LockOccupancy {
  std::string name;
  std::vector<std::optional<SlotHolder>> slots;
};

// The fields of queue_rank (claim_queue.h), compared in the same order, the claim's id last;
// before them all, whether the claim fails over: an election claim whose holder pod is gone
// passes the lock to another of its pods before anyone else is served.
struct ClaimRank {
  bool fails_over = false;
  Priority priority = Priority::kForeground;
  WallTime waiting_since{};
  WallTime created{};
};

// One claim. A claim that holds is seen only through the slots it holds (its grant), so the
// two can never disagree; only waiting claims are walked.
struct SlotClaim {
  std::string id;
  std::vector<std::string> locks;                  // one lock, or a set of 2 to lock::kMaxLockSet
  lock::Access access = lock::Access::kExclusive;  // as it holds: api::effective_access
  ClaimRank rank;
  bool waits = false;      // in the queue: valid, not ended, not holding
  bool grantable = false;  // it has a live pod to be granted to now
  // Not served now, it keeps its place and what it needs (false: a try-lock, which ends when
  // it cannot be served at once).
  bool keeps = true;
};

// A grant to make now: every slot it takes, in the order of the claim's locks, each lock's
// slots from the lowest.
struct SlotGrant {
  std::string claim;
  std::vector<SlotRef> slots;
};

// Why a waiting claim cannot have one of its locks now.
struct Shortfall {
  std::string lock;
  std::vector<std::string> holders;   // of the slots it needs, each once, by slot
  std::vector<std::string> kept_for;  // claims ranked ahead keeping the free slots it needs
};

// Where a waiting claim stands after the grants are made.
struct QueueStanding {
  std::string claim;
  // The design's queuePosition: the claims with a live pod still waiting ahead of it on the
  // lock where it stands furthest back; 0 = next. nullopt without a live pod: a claim that
  // cannot be served has no place in line (as status_projection shows it).
  std::optional<std::int64_t> position;
  std::string position_lock;  // that lock (the first of its locks, on a tie)
  // Each of its locks whose need is not met when its turn came (claims ranked below it take
  // nothing it needs), in the claim's order; empty when only its pod is missing.
  std::vector<Shortfall> waits_for;
};

struct SlotAllocation {
  std::vector<SlotGrant> grants;       // in rank order
  std::vector<QueueStanding> waiting;  // every waiting claim not granted now, in rank order
};

// kInvalidArgument when a claim names no lock, more than lock::kMaxLockSet, one twice, or
// one not among `locks`, or a lock has no slot: the caller checks claims before this.
Result<SlotAllocation> allocate_slots(const std::vector<LockOccupancy>& locks,
                                      const std::vector<SlotClaim>& claims);

}  // namespace eslease::controller
