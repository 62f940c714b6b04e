// The shaped reconcile (the design's "Lock shapes"): a lock of capacity above 1, or the locks
// that lock sets link together, decided as one world. One lock-table entry per slot document,
// all held for the reconcile (taken in the order of their ids, as the session keeper and every
// other reconcile take them, so overlapping sets never make two workers wait for each other),
// read together in one _mget, grouped into grants (a grant of several documents names its id
// in each), decided by decide_shaped, and written one grant per step: a grant of one or
// several documents, on one lock or across a set, in one _bulk (undone when partly applied);
// the release or revocation of every document of a grant.
#include <algorithm>

#include "common/log.h"
#include "controller/claim_queue.h"
#include "controller/reconciler.h"

namespace eslease::controller {
namespace {

// Adds one more document of a grant to its view. The grant is handed over no earlier than
// its latest document expires; it is renewed only while every document is; it is revoked
// when any document is.
void merge_document(DocumentView& grant, const DocumentView& doc, bool& any_renewing) {
  grant.slots.push_back(doc.slots.front());
  if (doc.state.token > grant.state.token) grant.state.token = doc.state.token;
  grant.expires_at = std::max(grant.expires_at, doc.expires_at);
  any_renewing = any_renewing || doc.renewing;
  grant.renewing = grant.renewing && doc.renewing;
  if (!grant.revoked) grant.revoked = doc.revoked;
}

// Every document of the locks, in the order of their ids: the one order all take them in.
std::vector<std::pair<std::size_t, std::int64_t>> id_order(const std::vector<lock::LockKey>& keys,
                                                           const std::vector<std::int64_t>& slots) {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::int64_t>>> ids;
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (std::int64_t k = 0; k < slots[i]; ++k)
      ids.push_back({lock::slot_document_id(keys[i].id(), k), {i, k}});
  std::sort(ids.begin(), ids.end());
  std::vector<std::pair<std::size_t, std::int64_t>> order;
  order.reserve(ids.size());
  for (const auto& [id, where] : ids) order.push_back(where);
  return order;
}

}  // namespace

std::vector<lock::LockKey> Reconciler::linked_locks(const lock::LockKey& key) const {
  std::vector<lock::LockKey> keys{key};
  std::set<std::string> seen{key.name()};
  for (std::size_t i = 0; i < keys.size(); ++i) {
    for (const LeaseRecord& lease : claims_of(keys[i], clock_.monotonic())) {
      for (const std::string& name : lease.spec.locks()) {
        if (!seen.insert(name).second) continue;
        if (auto linked = lock::parse_lock_id(object_key(key.ns(), name)); linked.ok())
          keys.push_back(*linked);
      }
    }
  }
  return keys;
}

Reconciler::ShapedEntries Reconciler::lock_slots(const std::vector<lock::LockKey>& keys,
                                                 const std::vector<std::int64_t>& slots) {
  std::vector<std::vector<std::optional<LockTable::Handle>>> taken(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) taken[i].resize(static_cast<std::size_t>(slots[i]));
  for (const auto& [i, k] : id_order(keys, slots))
    taken[i][static_cast<std::size_t>(k)].emplace(table_.lock(keys[i], k));
  ShapedEntries locks;
  locks.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    LockSlots lock{keys[i], 1, {}};
    lock.entries.reserve(taken[i].size());
    for (auto& handle : taken[i]) lock.entries.push_back(std::move(*handle));
    locks.push_back(std::move(lock));
  }
  return locks;
}

void Reconciler::read_slots(ShapedEntries& locks) {
  // One _mget per number of slots (every lock of a set of single locks: one).
  std::map<std::size_t, std::vector<LockSlots*>> by_slots;
  for (LockSlots& lock : locks)
    if (std::any_of(lock.entries.begin(), lock.entries.end(),
                    [](const LockTable::Handle& e) { return !e->known(); }))
      by_slots[lock.entries.size()].push_back(&lock);
  for (const auto& [slots, group] : by_slots) {
    std::vector<lock::LockKey> keys;
    for (const LockSlots* lock : group) keys.push_back(lock->key);
    auto read = store_.read_slots(keys, static_cast<std::int64_t>(slots));
    const MonoTime answered = clock_.monotonic();
    if (!read.ok()) {
      if (read.error().code == ErrorCode::kProtocol) {
        backend_available_.store(true);  // the index answered, with something that is not a lock document
        for (LockSlots* lock : group)
          for (LockTable::Handle& entry : lock->entries)
            if (!entry->known()) entry->read_malformed(read.error().message);
        continue;
      }
      note_error(read.error());
      log::warn("cannot read lock documents",
                {{"lock", keys.front().id()}, {"error", read.error().describe()}});
      continue;
    }
    backend_available_.store(true);
    for (std::size_t i = 0; i < group.size() && i < read->size(); ++i) {
      const auto& docs = (*read)[i];
      std::vector<LockTable::Handle>& entries = group[i]->entries;
      for (std::size_t k = 0; k < entries.size() && k < docs.size(); ++k)
        if (!entries[k]->known()) entries[k]->read(docs[k], answered);
    }
  }
}

LockWorld Reconciler::gather_slots(const ShapedEntries& locks,
                                   const std::optional<RecentGrant>& recent) const {
  std::vector<lock::LockKey> keys;
  for (const LockSlots& lock : locks) keys.push_back(lock.key);
  LockWorld world = world_around(keys, recent);
  world.shaped = true;
  std::vector<std::string> holders;
  for (const LockSlots& lock : locks) {
    world.locks.push_back(LockShape{lock.key.name(), lock.capacity});
    for (const LockTable::Handle& entry : lock.entries) {
      if (!entry->known()) world.document_known = false;
      if (!entry->malformed().empty()) world.malformed_document = entry->malformed();
      if (entry->known() && entry->document()) holders.push_back(entry->document()->doc.holder);
    }
  }
  world.capacity = world.locks.front().capacity;
  gather_pods(world, holders);
  std::map<std::string, std::size_t> by_grant;  // a grant of several documents: its id -> index
  std::vector<bool> any_renewing;
  for (const LockSlots& lock : locks) {
    for (const LockTable::Handle& entry : lock.entries) {
      std::optional<DocumentView> view = document_view(world, *entry);
      if (!view) continue;
      view->slots = {SlotRef{lock.key.name(), entry->slot()}};
      const std::string& id = view->state.doc.grant;
      auto known = id.empty() ? by_grant.end() : by_grant.find(id);
      if (known == by_grant.end()) {
        if (!id.empty()) by_grant[id] = world.grants.size();
        any_renewing.push_back(view->renewing);
        world.grants.push_back(std::move(*view));
        continue;
      }
      bool renewing = any_renewing[known->second];
      merge_document(world.grants[known->second], *view, renewing);
      any_renewing[known->second] = renewing;
    }
  }
  for (std::size_t i = 0; i < world.grants.size(); ++i) {
    DocumentView& grant = world.grants[i];
    // Fewer documents than it was written with, or not all renewed: another writer has
    // replaced part of it.
    const bool missing = grant.state.doc.grant_docs.size() > grant.slots.size();
    grant.broken = any_renewing[i] && (!grant.renewing || missing);
  }
  return world;
}

std::vector<LockEntry*> Reconciler::entries_of(ShapedEntries& locks,
                                               const std::vector<SlotRef>& slots) const {
  std::vector<LockEntry*> entries;
  for (const SlotRef& ref : slots) {
    auto lock = std::find_if(locks.begin(), locks.end(),
                             [&](const LockSlots& l) { return l.key.name() == ref.lock; });
    if (lock != locks.end() && ref.slot >= 0 && static_cast<std::size_t>(ref.slot) < lock->entries.size())
      entries.push_back(&*lock->entries[static_cast<std::size_t>(ref.slot)]);
  }
  return entries;
}

Status Reconciler::grant_slots(ShapedEntries& locks, const Decision& decision, const LockWorld& world,
                               std::optional<RecentGrant>& recent) {
  const GrantPlan& plan = decision.grant;
  const std::vector<LockEntry*> entries = entries_of(locks, plan.slots);
  if (entries.size() != plan.slots.size()) return {};  // not a slot of this world: decided again
  lock::GrantRequest request;
  request.grantee = grantee(world, plan);
  request.capacity = capacity_of(world, plan.slots.front().lock);
  request.access = plan.access;
  for (std::size_t i = 0; i < entries.size(); ++i)
    request.writes.push_back(lock::SlotWrite{entries[i]->key(), plan.slots[i].slot, entries[i]->document()});
  auto outcome = store_.grant(request);
  if (!outcome.ok()) return outcome.error();
  if (!outcome->grant) {
    // Someone else wrote first (409), or part of it: decide again on what is there now.
    observer_.backend_conflict(decision.action == Action::kAcquire ? "acquire" : "take_over");
    for (std::size_t i = 0; i < entries.size() && i < outcome->current.size(); ++i)
      entries[i]->read(outcome->current[i], outcome->observed_at);
    return {};
  }
  const lock::HeldGrant& held = *outcome->grant;
  for (std::size_t i = 0; i < entries.size() && i < held.docs.size(); ++i)
    entries[i]->granted(held.docs[i].grant);
  announce_grant(entries.front()->key().id(), held.token, decision, world);
  recent = RecentGrant{plan.lease, plan.takeover_reason, plan.from_pod, world.now};
  return {};
}

Status Reconciler::carry_out_slots(ShapedEntries& locks, const Decision& decision, const LockWorld& world,
                                   std::optional<RecentGrant>& recent) {
  const std::vector<LockEntry*> concerned = entries_of(locks, decision.slots);
  switch (decision.action) {
    case Action::kNone:
      return {};
    case Action::kAcquire:
    case Action::kTakeOver:
      return grant_slots(locks, decision, world, recent);
    case Action::kRelease:
      return concerned.empty() ? Status{} : release(concerned, decision);
    case Action::kRevoke:
      return concerned.empty() ? Status{} : revoke(concerned, decision, world);
    case Action::kAdopt:
      for (LockEntry* entry : concerned) entry->adopted();
      if (!concerned.empty()) {
        sessions_.wake(world.ns, Millis(concerned.front()->document()->doc.ttl_millis));
        log::info("adopted existing grant",
                  {{"lock", concerned.front()->key().id()}, {"slots", concerned.size()}});
      }
      return {};
  }
  return {};
}

Reconciler::ShapedEntries Reconciler::take_slots(const std::vector<lock::LockKey>& keys, std::int64_t slots) {
  std::vector<std::int64_t> capacities;
  std::vector<std::int64_t> counts;
  for (const lock::LockKey& key : keys) {
    capacities.push_back(lock_capacity(claims_of(key, clock_.monotonic()), key.name()));
    counts.push_back(std::max({slots, capacities.back(), table_.slots_in_use(key.id())}));
  }
  ShapedEntries locks = lock_slots(keys, counts);
  read_slots(locks);
  // A slot-0 document stating a larger capacity (a direct-mode holder's) has holders on slots
  // beside it: those are read and decided on too, all taken again in the one order.
  bool larger = false;
  for (std::size_t i = 0; i < locks.size(); ++i) {
    const LockTable::Handle& first = locks[i].entries.front();
    if (first->known() && first->document() && first->document()->doc.capacity > counts[i]) {
      counts[i] = first->document()->doc.capacity;
      larger = true;
    }
  }
  if (larger) {
    locks.clear();
    locks = lock_slots(keys, counts);
    read_slots(locks);
  }
  for (std::size_t i = 0; i < locks.size(); ++i) locks[i].capacity = capacities[i];
  return locks;
}

ReconcileOutcome Reconciler::reconcile_linked(const lock::LockKey& key, std::stop_token stop) {
  const std::vector<lock::LockKey> keys = linked_locks(key);
  std::vector<std::string> ids;
  ids.reserve(keys.size());
  for (const lock::LockKey& linked : keys) ids.push_back(linked.id());
  const ReconcileGates::Passage passage = gates_.enter(ids);
  return reconcile_shaped(keys, 1, stop);
}

ReconcileOutcome Reconciler::reconcile_shaped(const std::vector<lock::LockKey>& keys, std::int64_t slots,
                                              std::stop_token stop) {
  ReconcileOutcome outcome;
  LockWorld world;
  Decision decision;
  const std::string lock_id = keys.front().id();
  {
    ShapedEntries locks = take_slots(keys, slots);
    std::size_t documents = 0;
    for (const LockSlots& lock : locks) documents += lock.entries.size();
    const Steps steps{[&](const std::optional<RecentGrant>& recent) { return gather_slots(locks, recent); },
                      [&](const Decision& d, const LockWorld& w, std::optional<RecentGrant>& recent) {
                        return carry_out_slots(locks, d, w, recent);
                      },
                      [&](const Decision& d) {
                        const bool grants = d.action == Action::kAcquire || d.action == Action::kTakeOver;
                        for (LockEntry* entry : entries_of(locks, grants ? d.grant.slots : d.slots))
                          entry->outcome_unknown();
                      }};
    // One step per grant at most, twice over (a release, then a grant of its slots).
    const int max_steps = kMaxSteps + 2 * static_cast<int>(documents);
    if (!run_steps(lock_id, steps, max_steps, world, decision, outcome, stop)) return outcome;
    if (!world.document_known && outcome.status.ok())
      outcome.status =
          make_error(ErrorCode::kUnavailable, "lock documents of " + lock_id + " could not be read");
    // Slots above the capacity (left from an earlier one) go once empty; all of a lock's with no claim.
    for (LockSlots& lock : locks) {
      const bool claimed = std::any_of(world.claims.begin(), world.claims.end(), [&](const LeaseRecord& l) {
        return l.spec.claims_lock(lock.key.name());
      });
      for (LockTable::Handle& entry : lock.entries)
        if (!claimed || entry->slot() >= lock.capacity) entry.drop_when_idle();
    }
  }
  if (stop.stop_requested()) return outcome;
  outcome.requeue_at = decision.requeue_at;
  Status written = write_to_cluster(world, decision, outcome.requeue_at);
  if (outcome.status.ok() && !written.ok()) outcome.status = written;
  return outcome;
}

Result<WriteOutcome> Reconciler::update_holds(const LockWorld& world, const Decision& decision) {
  if (world.locks.size() <= 1) return holds_.update(world, decision.statuses);
  // The annotation is kept per lock, each Lease's under the lock it is filed under (its first).
  Result<WriteOutcome> result = WriteOutcome::kSent;
  for (const LockShape& lock : world.locks) {
    LockWorld filed;
    filed.ns = world.ns;
    filed.lock_name = lock.name;
    filed.pods = world.pods;
    for (const LeaseRecord& lease : world.claims)
      if (lease.spec.lock_name == lock.name) filed.claims.push_back(lease);
    Result<WriteOutcome> one = holds_.update(filed, decision.statuses);
    if (!one.ok() && result.ok()) result = one;
    if (one.ok() && result.ok() && *one == WriteOutcome::kDeferred) result = one;
  }
  return result;
}

}  // namespace eslease::controller
