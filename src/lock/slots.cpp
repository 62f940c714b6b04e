#include "lock/slots.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "common/duration.h"
#include "common/text.h"

namespace eslease::lock {
namespace {

bool live(const SlotSight& slot) {
  return slot.state && !slot.expired;
}

std::string describe(const LockState& s) {
  std::string out = "lock " + s.doc.lock + " is held by " + s.doc.holder + " (token " +
                    std::to_string(s.token) + ", renewed " + format_rfc3339_millis(s.doc.renewed_at) +
                    ", ttl " + format_duration(Millis(s.doc.ttl_millis));
  if (s.doc.capacity > 1) {
    out += ", slot " + std::to_string(s.doc.slot) + " of " + std::to_string(s.doc.capacity) + ", " +
           to_string(s.doc.access);
  }
  return out + ")";
}

// The claim waits behind `s`: why, and who.
void busy(ClaimPlan& plan, const LockState& s) {
  plan.why = describe(s);
  plan.holder = s;
  plan.writes.clear();
}

// A Shared claim finds every slot of `lock` taken: the holders of them all, not just the first
// (each once: a writer holds them all).
void full(ClaimPlan& plan, const LockSlots& lock) {
  std::vector<std::string> holders;
  for (const SlotSight& slot : lock.slots)
    if (live(slot) && std::find(holders.begin(), holders.end(), slot.state->doc.holder) == holders.end())
      holders.push_back(slot.state->doc.holder);
  busy(plan, *lock.slots.front().state);
  plan.why = "lock " + lock.key.id() + " is full: its " + std::to_string(lock.slots.size()) +
             " slots are held by " + join(holders, ", ");
}

// The claimant's own grant, when the documents it holds are exactly what it claims.
std::optional<std::vector<HeldDocument>> own_grant(const std::vector<LockSlots>& locks,
                                                   const ClaimShape& shape, const std::string& holder) {
  std::vector<HeldDocument> own;
  std::set<std::string> ids;
  for (const LockSlots& lock : locks) {
    std::size_t held = 0;
    for (const SlotSight& slot : lock.slots) {
      if (!slot.state || slot.state->doc.holder != holder) continue;
      const LockDocument& doc = slot.state->doc;
      if (doc.access != shape.access || doc.capacity != shape.capacity) return std::nullopt;
      if (!own.empty()) {
        const LockDocument& first = own.front().state.doc;
        if (std::tie(doc.grant, doc.lease_uid, doc.acquired_at) !=
            std::tie(first.grant, first.lease_uid, first.acquired_at))
          return std::nullopt;  // documents of two grants
      }
      ++held;
      ids.insert(document_id(doc));
      own.push_back(HeldDocument{lock.key, *slot.state, MonoTime{}});
    }
    const std::size_t needed = shape.access == Access::kExclusive ? lock.slots.size() : 1;
    if (held != needed) return std::nullopt;
  }
  const LockDocument& first = own.front().state.doc;
  if (first.grant.empty() ? own.size() != 1
                          : std::set<std::string>(first.grant_docs.begin(), first.grant_docs.end()) != ids)
    return std::nullopt;
  return own;
}

}  // namespace

Status check_claim(const std::vector<LockKey>& keys, const ClaimShape& shape) {
  if (keys.empty() || keys.size() > kMaxLockSet)
    return make_error(ErrorCode::kInvalidArgument, "a claim names one lock, or a set of 2 to " +
                                                       std::to_string(kMaxLockSet) + " locks; not " +
                                                       std::to_string(keys.size()));
  if (shape.capacity < 1 || shape.capacity > kMaxCapacity)
    return make_error(ErrorCode::kInvalidArgument, "capacity must be 1 to " + std::to_string(kMaxCapacity));
  std::set<std::string> seen;
  for (const LockKey& key : keys) {
    if (!seen.insert(key.id()).second)
      return make_error(ErrorCode::kInvalidArgument, "lock " + key.name() + " is named twice in the set");
  }
  const std::size_t per_lock = shape.access == Access::kExclusive ? std::size_t(shape.capacity) : 1;
  if (per_lock * keys.size() > kMaxGrantDocuments)
    return make_error(ErrorCode::kInvalidArgument,
                      "an Exclusive claim holds every slot of each lock: " + std::to_string(keys.size()) +
                          " locks of capacity " + std::to_string(shape.capacity) + " are " +
                          std::to_string(per_lock * keys.size()) + " documents, more than the " +
                          std::to_string(kMaxGrantDocuments) + " one grant may write");
  return {};
}

std::vector<SlotWrite> writes_if_free(const std::vector<LockKey>& keys, const ClaimShape& shape) {
  std::vector<SlotWrite> writes;
  const std::int64_t slots = shape.access == Access::kExclusive ? shape.capacity : 1;
  for (const LockKey& key : keys)
    for (std::int64_t k = 0; k < slots; ++k) writes.push_back(SlotWrite{key, k, std::nullopt});
  return writes;
}

ClaimPlan plan_claim(const std::vector<LockSlots>& locks, const ClaimShape& shape,
                     const std::string& holder) {
  ClaimPlan plan;
  for (const LockSlots& lock : locks) {
    for (const SlotSight& slot : lock.slots) {
      if (live(slot) && slot.state->doc.capacity != shape.capacity) {
        plan.kind = ClaimPlan::Kind::kInvalid;
        plan.why = "lock " + lock.key.id() + " has capacity " + std::to_string(slot.state->doc.capacity) +
                   " (held by " + slot.state->doc.holder + "), but this claim states capacity " +
                   std::to_string(shape.capacity) + "; every claim on a lock must state the same capacity";
        return plan;
      }
    }
  }
  if (auto own = own_grant(locks, shape, holder)) {
    plan.kind = ClaimPlan::Kind::kOwn;
    plan.own = std::move(*own);
    return plan;
  }
  for (const LockSlots& lock : locks) {
    const auto take = [&](std::int64_t k) {
      plan.writes.push_back(SlotWrite{lock.key, k, lock.slots[std::size_t(k)].state});
    };
    if (shape.access == Access::kShared) {
      std::optional<std::int64_t> free;
      for (std::size_t k = 0; k < lock.slots.size() && !free; ++k)
        if (!live(lock.slots[k])) free = std::int64_t(k);
      if (!free) {
        full(plan, lock);
        return plan;
      }
      take(*free);
      continue;
    }
    for (std::size_t k = 0; k < lock.slots.size(); ++k) {
      if (live(lock.slots[k])) {
        busy(plan, *lock.slots[k].state);
        return plan;
      }
      take(std::int64_t(k));
    }
  }
  plan.kind = ClaimPlan::Kind::kGrant;
  return plan;
}

}  // namespace eslease::lock
