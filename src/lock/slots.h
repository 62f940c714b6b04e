// Which documents a claim writes, decided from its locks' slot documents as read (the
// design's "Lock shapes"). Pure: the waiting loop (acquirer.h) reads, sights and calls
// this; everything it decides is tested table-driven.
//
//   Shared claim      one slot of each lock: the lowest k whose document is absent or expired
//   Exclusive claim   every slot [0, capacity) of each lock: an Exclusive holder and any other
//                     holder can never coexist, because its creates meet every slot held
//   lock set          the union over its locks, granted in one _bulk
//
// Every claim on a lock states the same capacity: a live document of another capacity makes
// the claim invalid. Expired documents are taken over (conditionally, in the same _bulk).
// A claimant that already holds exactly this grant (same holder identity, same shape) has it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/lock_store.h"

namespace eslease::lock {

// Lock sets: 2 to 32 distinct locks, as the API's spec.lockNames.
using api::kMaxLockSet;

struct ClaimShape {
  std::int64_t capacity = 1;
  Access access = Access::kExclusive;
};

// One slot as the claimant sees it.
struct SlotSight {
  std::optional<LockState> state;  // nullopt: free
  bool expired = false;            // on the claimant's own clock (expiry.h)
};

struct LockSlots {
  LockKey key;
  std::vector<SlotSight> slots;  // slot k at index k, k in [0, capacity)
};

struct ClaimPlan {
  enum class Kind {
    kGrant,    // write `writes` in one grant
    kBusy,     // some slot it needs is held; `why` says by whom
    kOwn,      // the claimant holds exactly this grant already: `own`, in lock and slot order
    kInvalid,  // a live document states another capacity; `why` names both values
  };
  Kind kind = Kind::kBusy;
  std::vector<SlotWrite> writes;
  std::vector<HeldDocument> own;
  std::string why;
  std::optional<LockState> holder;  // kBusy: the document it waits behind
};

ClaimPlan plan_claim(const std::vector<LockSlots>& locks, const ClaimShape& shape, const std::string& holder);

// Checks a claim's locks and shape before anything is contacted: 1 to 32 distinct locks
// (several make a set), capacity 1..1000, at most kMaxGrantDocuments documents per grant.
Status check_claim(const std::vector<LockKey>& keys, const ClaimShape& shape);

// The writes of a claim that finds every slot free: what a first attempt sends unread.
std::vector<SlotWrite> writes_if_free(const std::vector<LockKey>& keys, const ClaimShape& shape);

}  // namespace eslease::lock
