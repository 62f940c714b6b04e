#include "controller/slot_allocation.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace eslease::controller {
namespace {

using lock::Access;

// A slot during the walk: free, taken (by its holder, or by a claim granted in this walk),
// or kept for a claim ranked higher that cannot be served yet.
struct Slot {
  enum class Use { kFree, kTaken, kKept } use = Use::kFree;
  std::string by;
  std::string reusable_by = {};  // SlotHolder::reusable_by, while taken by its holder
};
using Table = std::map<std::string, std::vector<Slot>>;

Result<Table> table_of(const std::vector<LockOccupancy>& locks) {
  Table table;
  for (const LockOccupancy& lock : locks) {
    if (lock.slots.empty())
      return make_error(ErrorCode::kInvalidArgument, "lock " + lock.name + " has no slot");
    std::vector<Slot>& slots = table[lock.name];
    if (!slots.empty())
      return make_error(ErrorCode::kInvalidArgument, "lock " + lock.name + " is given twice");
    for (const std::optional<SlotHolder>& held : lock.slots)
      slots.push_back(held ? Slot{Slot::Use::kTaken, held->holder, held->reusable_by} : Slot{});
  }
  return table;
}

Status check_claims(const Table& table, const std::vector<SlotClaim>& claims) {
  std::set<std::string> ids;
  for (const SlotClaim& claim : claims) {
    if (!ids.insert(claim.id).second)
      return make_error(ErrorCode::kInvalidArgument, "claim " + claim.id + " is given twice");
    if (claim.locks.empty() || claim.locks.size() > lock::kMaxLockSet)
      return make_error(ErrorCode::kInvalidArgument, "claim " + claim.id + " names " +
                                                         std::to_string(claim.locks.size()) +
                                                         " locks; a claim names one lock or a set of 2 to " +
                                                         std::to_string(lock::kMaxLockSet));
    std::set<std::string> names;
    for (const std::string& name : claim.locks) {
      if (!names.insert(name).second)
        return make_error(ErrorCode::kInvalidArgument,
                          "claim " + claim.id + " names lock " + name + " twice");
      if (!table.contains(name))
        return make_error(ErrorCode::kInvalidArgument,
                          "claim " + claim.id + " names lock " + name + ", which is not given");
    }
  }
  return {};
}

// The waiting claims in queue_rank's order; the id last makes it a total order.
std::vector<const SlotClaim*> in_rank_order(const std::vector<SlotClaim>& claims) {
  std::vector<const SlotClaim*> order;
  for (const SlotClaim& claim : claims)
    if (claim.waits) order.push_back(&claim);
  std::sort(order.begin(), order.end(), [](const SlotClaim* a, const SlotClaim* b) {
    return std::tie(b->rank.fails_over, a->rank.priority, a->rank.waiting_since, a->rank.created, a->id) <
           std::tie(a->rank.fails_over, b->rank.priority, b->rank.waiting_since, b->rank.created, b->id);
  });
  return order;
}

// Whether `claim` may take `slot`: it is free, or its holder's own grant it may reuse.
bool free_for(const Slot& slot, const SlotClaim& claim) {
  return slot.use == Slot::Use::kFree ||
         (slot.use == Slot::Use::kTaken && !slot.reusable_by.empty() && slot.reusable_by == claim.id);
}

// What a claim wants of a lock's free slots, from the lowest: every free slot for Exclusive,
// the lowest for Shared. When its need is met this is what it takes; when not, what it keeps.
std::vector<std::int64_t> wanted(const std::vector<Slot>& slots, const SlotClaim& claim) {
  std::vector<std::int64_t> want;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    if (!free_for(slots[k], claim)) continue;
    want.push_back(static_cast<std::int64_t>(k));
    if (claim.access == Access::kShared) break;
  }
  return want;
}

bool need_met(const std::vector<Slot>& slots, const SlotClaim& claim) {
  const std::size_t free = wanted(slots, claim).size();
  return claim.access == Access::kShared ? free == 1 : free == slots.size();
}

bool all_met(const Table& table, const SlotClaim& claim) {
  return std::all_of(claim.locks.begin(), claim.locks.end(),
                     [&](const std::string& name) { return need_met(table.at(name), claim); });
}

// Marks what the claim wants of each of its locks as `use` by it, and says which slots.
SlotGrant mark(Table& table, const SlotClaim& claim, Slot::Use use) {
  SlotGrant grant{claim.id, {}};
  for (const std::string& name : claim.locks) {
    std::vector<Slot>& slots = table.at(name);
    for (const std::int64_t k : wanted(slots, claim)) {
      slots[static_cast<std::size_t>(k)] = Slot{use, claim.id};
      grant.slots.push_back(SlotRef{name, k});
    }
  }
  return grant;
}

void add_once(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

// Whoever has the slots of a lock whose need is not met: every slot the claim lacks is taken
// or kept (a Shared claim lacks them all, an Exclusive one those not free).
Shortfall shortfall_on(const std::string& name, const std::vector<Slot>& slots) {
  Shortfall why{name, {}, {}};
  for (const Slot& slot : slots) {
    if (slot.use == Slot::Use::kTaken) add_once(why.holders, slot.by);
    if (slot.use == Slot::Use::kKept) add_once(why.kept_for, slot.by);
  }
  return why;
}

// Where a claim not granted now stands: `waiting_ahead` counts, per lock, the claims with a
// live pod walked so far that still wait.
QueueStanding standing_of(const Table& table, const SlotClaim& claim,
                          const std::map<std::string, std::int64_t>& waiting_ahead) {
  QueueStanding standing{claim.id, std::nullopt, claim.locks.front(), {}};
  std::int64_t furthest = -1;
  for (const std::string& name : claim.locks) {
    const auto ahead = waiting_ahead.find(name);
    const std::int64_t count = ahead == waiting_ahead.end() ? 0 : ahead->second;
    if (count > furthest) {
      furthest = count;
      standing.position_lock = name;
    }
    const std::vector<Slot>& slots = table.at(name);
    if (!need_met(slots, claim)) standing.waits_for.push_back(shortfall_on(name, slots));
  }
  if (claim.grantable) standing.position = furthest;
  return standing;
}

}  // namespace

Result<SlotAllocation> allocate_slots(const std::vector<LockOccupancy>& locks,
                                      const std::vector<SlotClaim>& claims) {
  Result<Table> table = table_of(locks);
  if (!table) return table.error();
  if (Status checked = check_claims(*table, claims); !checked) return checked.error();
  SlotAllocation allocation;
  std::map<std::string, std::int64_t> waiting_ahead;
  for (const SlotClaim* claim : in_rank_order(claims)) {
    if (claim->grantable && all_met(*table, *claim)) {
      allocation.grants.push_back(mark(*table, *claim, Slot::Use::kTaken));
      continue;
    }
    allocation.waiting.push_back(standing_of(*table, *claim, waiting_ahead));
    // A claim with no live pod keeps nothing and holds no place in line: its pod may never
    // come (a claim made before its pod, a pod stuck Pending), and what it kept would stay
    // free for nobody for as long. Its rank is kept, so once its pod is live it stands where
    // it stood and keeps what it needs from then on.
    if (!claim->grantable || !claim->keeps) continue;
    mark(*table, *claim, Slot::Use::kKept);
    for (const std::string& name : claim->locks) ++waiting_ahead[name];
  }
  return allocation;
}

}  // namespace eslease::controller
