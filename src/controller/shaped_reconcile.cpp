// The reconcile of a lock of capacity above 1 (the design's "Lock shapes"): one lock-table
// entry per slot document, all held for the reconcile (taken in the order of their ids, as
// the session keeper takes them), read together in one _mget, grouped into grants (a grant
// of several documents names its id in each), decided by decide_shaped, and written one grant
// per step: a grant of one or several slots in one _bulk (undone when partly applied), the
// release or revocation of every document of a grant.
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

}  // namespace

Reconciler::SlotEntries Reconciler::lock_slots(const lock::LockKey& key, std::int64_t slots) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(slots));
  for (std::int64_t k = 0; k < slots; ++k) order[static_cast<std::size_t>(k)] = k;
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return lock::slot_document_id(key.id(), a) < lock::slot_document_id(key.id(), b);
  });
  std::vector<std::optional<LockTable::Handle>> taken(static_cast<std::size_t>(slots));
  for (const std::int64_t k : order) taken[static_cast<std::size_t>(k)].emplace(table_.lock(key, k));
  SlotEntries entries;
  entries.reserve(taken.size());
  for (auto& handle : taken) entries.push_back(std::move(*handle));
  return entries;
}

void Reconciler::read_slots(const lock::LockKey& key, SlotEntries& entries) {
  const bool any_unknown =
      std::any_of(entries.begin(), entries.end(), [](const LockTable::Handle& e) { return !e->known(); });
  if (!any_unknown) return;
  auto read = store_.read_slots({key}, static_cast<std::int64_t>(entries.size()));
  const MonoTime answered = clock_.monotonic();
  if (!read.ok()) {
    if (read.error().code == ErrorCode::kProtocol) {
      backend_available_.store(true);  // the index answered, with something that is not a lock document
      for (LockTable::Handle& entry : entries)
        if (!entry->known()) entry->read_malformed(read.error().message);
      return;
    }
    note_error(read.error());
    log::warn("cannot read lock documents", {{"lock", key.id()}, {"error", read.error().describe()}});
    return;
  }
  backend_available_.store(true);
  const auto& slots = read->front();
  for (std::size_t k = 0; k < entries.size() && k < slots.size(); ++k)
    if (!entries[k]->known()) entries[k]->read(slots[k], answered);
}

LockWorld Reconciler::gather_slots(const lock::LockKey& key, std::int64_t capacity,
                                   const SlotEntries& entries,
                                   const std::optional<RecentGrant>& recent) const {
  LockWorld world = world_around(key, recent);
  world.shaped = true;
  world.capacity = capacity;
  std::vector<std::string> holders;
  for (const LockTable::Handle& entry : entries) {
    if (!entry->known()) world.document_known = false;
    if (!entry->malformed().empty()) world.malformed_document = entry->malformed();
    if (entry->known() && entry->document()) holders.push_back(entry->document()->doc.holder);
  }
  gather_pods(world, holders);
  std::map<std::string, std::size_t> by_grant;  // a grant of several documents: its id -> index
  std::vector<bool> any_renewing;
  for (const LockTable::Handle& entry : entries) {
    std::optional<DocumentView> view = document_view(world, *entry);
    if (!view) continue;
    view->slots = {entry->slot()};
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
  for (std::size_t i = 0; i < world.grants.size(); ++i) {
    DocumentView& grant = world.grants[i];
    // Fewer documents than it was written with, or not all renewed: another writer has
    // replaced part of it.
    const bool missing = grant.state.doc.grant_docs.size() > grant.slots.size();
    grant.broken = any_renewing[i] && (!grant.renewing || missing);
  }
  return world;
}

Status Reconciler::grant_slots(const lock::LockKey& key, SlotEntries& entries, const Decision& decision,
                               const LockWorld& world, std::optional<RecentGrant>& recent) {
  const GrantPlan& plan = decision.grant;
  lock::GrantRequest request;
  request.grantee = grantee(world, plan);
  request.capacity = world.capacity;
  request.access = plan.access;
  for (const std::int64_t k : plan.slots)
    request.writes.push_back(lock::SlotWrite{key, k, entries[static_cast<std::size_t>(k)]->document()});
  auto outcome = store_.grant(request);
  if (!outcome.ok()) return outcome.error();
  if (!outcome->grant) {
    // Someone else wrote first (409), or part of it: decide again on what is there now.
    observer_.backend_conflict(decision.action == Action::kAcquire ? "acquire" : "take_over");
    for (std::size_t i = 0; i < plan.slots.size() && i < outcome->current.size(); ++i)
      entries[static_cast<std::size_t>(plan.slots[i])]->read(outcome->current[i], outcome->observed_at);
    return {};
  }
  const lock::HeldGrant& held = *outcome->grant;
  for (std::size_t i = 0; i < plan.slots.size() && i < held.docs.size(); ++i)
    entries[static_cast<std::size_t>(plan.slots[i])]->granted(held.docs[i].grant);
  announce_grant(key.id(), held.token, decision, world);
  recent = RecentGrant{plan.lease, plan.takeover_reason, plan.from_pod, world.now};
  return {};
}

Status Reconciler::carry_out_slots(const lock::LockKey& key, SlotEntries& entries, const Decision& decision,
                                   const LockWorld& world, std::optional<RecentGrant>& recent) {
  std::vector<LockEntry*> concerned;
  for (const std::int64_t k : decision.slots)
    if (k >= 0 && static_cast<std::size_t>(k) < entries.size())
      concerned.push_back(&*entries[static_cast<std::size_t>(k)]);
  switch (decision.action) {
    case Action::kNone:
      return {};
    case Action::kAcquire:
    case Action::kTakeOver:
      return grant_slots(key, entries, decision, world, recent);
    case Action::kRelease:
      return concerned.empty() ? Status{} : release(concerned, decision);
    case Action::kRevoke:
      return concerned.empty() ? Status{} : revoke(concerned, decision, world);
    case Action::kAdopt:
      for (LockEntry* entry : concerned) entry->adopted();
      if (!concerned.empty()) {
        sessions_.wake(world.ns, Millis(concerned.front()->document()->doc.ttl_millis));
        log::info("adopted existing grant", {{"lock", key.id()}, {"slots", concerned.size()}});
      }
      return {};
  }
  return {};
}

ReconcileOutcome Reconciler::reconcile_slots(const lock::LockKey& key, std::int64_t capacity,
                                             std::int64_t slots, std::stop_token stop) {
  ReconcileOutcome outcome;
  LockWorld world;
  Decision decision;
  const std::string lock_id = key.id();
  {
    SlotEntries entries = lock_slots(key, std::max(slots, table_.slots_in_use(lock_id)));
    read_slots(key, entries);
    const Steps steps{
        [&](const std::optional<RecentGrant>& recent) {
          return gather_slots(key, capacity, entries, recent);
        },
        [&](const Decision& d, const LockWorld& w, std::optional<RecentGrant>& recent) {
          return carry_out_slots(key, entries, d, w, recent);
        },
        [&](const Decision& d) {
          for (const std::int64_t k :
               d.action == Action::kAcquire || d.action == Action::kTakeOver ? d.grant.slots : d.slots)
            if (k >= 0 && static_cast<std::size_t>(k) < entries.size())
              entries[static_cast<std::size_t>(k)]->outcome_unknown();
        }};
    // One step per grant at most, twice over (a release, then a grant of its slots).
    const int max_steps = kMaxSteps + 2 * static_cast<int>(entries.size());
    if (!run_steps(lock_id, steps, max_steps, world, decision, outcome, stop)) return outcome;
    const bool all_known =
        std::all_of(entries.begin(), entries.end(), [](const LockTable::Handle& e) { return e->known(); });
    if (!all_known && outcome.status.ok())
      outcome.status =
          make_error(ErrorCode::kUnavailable, "lock documents of " + lock_id + " could not be read");
    // Slots above the capacity (left from an earlier one) go once empty; all of them with no claim.
    for (LockTable::Handle& entry : entries)
      if (world.claims.empty() || entry->slot() >= capacity) entry.drop_when_idle();
  }
  if (stop.stop_requested()) return outcome;
  outcome.requeue_at = decision.requeue_at;
  Status written = write_to_cluster(world, decision, outcome.requeue_at);
  if (outcome.status.ok() && !written.ok()) outcome.status = written;
  return outcome;
}

}  // namespace eslease::controller
