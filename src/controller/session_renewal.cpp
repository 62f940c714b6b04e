// A tick's renewal of the documents it holds, a batch at a time, and its check of what the
// Leases show against it (SessionKeeper; the session write itself is in session_keeper.cpp).
#include <algorithm>
#include <unordered_set>

#include "common/log.h"
#include "controller/claim_queue.h"
#include "controller/session_coverage.h"

namespace eslease::controller {

void SessionKeeper::record_renewal(LockEntry& entry, lock::BatchRenewal& result, const api::GrantRef& grant,
                                   MonoTime after, Coverage& coverage) {
  switch (result.result) {
    case lock::RenewalResult::kRenewed:
      entry.renewed(std::move(*result.held));
      coverage.covered.emplace(grant, entry.id());
      coverage.any_answer = true;
      break;
    case lock::RenewalResult::kLost:
      log::warn("held lock was taken by someone else", {{"lock", entry.id()}});
      entry.lost();
      coverage.any_answer = true;
      // A grant of several documents that lost one is over, however its others fared.
      coverage.stale.emplace(grant, entry.id());
      if (options_.enqueue) options_.enqueue(entry.key().id());
      break;
    case lock::RenewalResult::kFailed: {
      coverage.any_unavailable = coverage.any_unavailable || (result.error && result.error->unavailable());
      std::optional<lock::LockState> still_ours;
      if (result.held) still_ours = result.held->state;
      if (entry.renewal_not_confirmed(still_ours, after)) {
        observer_.renewal_failed();
        log::warn("lock renewal failed until the grant expired",
                  {{"lock", entry.id()}, {"error", result.error ? result.error->describe() : ""}});
        if (options_.enqueue) options_.enqueue(entry.key().id());
      } else {
        coverage.failed.emplace(grant, entry.id());
      }
      break;
    }
  }
}

void SessionKeeper::renew_held(const std::string& ns, WallTime renewal, Coverage& coverage) {
  // Each batch is locked for its own _bulk only: a reconcile of one of its locks waits for
  // that renewal (an entry gone meanwhile, released and forgotten, is not made again).
  const std::vector<std::string> ids = table_.renewing_ids(ns);
  // Nearly every grant is covered: sized once rather than rehashed as it fills.
  coverage.covered.reserve(ids.size());
  coverage.durations.reserve(ids.size());
  const std::size_t batch = std::max<std::size_t>(1, options_.renewal_batch);
  std::set<std::string> spread;  // documents of grants that span batches: renewed together, last
  for (std::size_t begin = 0; begin < ids.size(); begin += batch) {
    std::vector<std::string> part;
    for (std::size_t i = begin; i < std::min(ids.size(), begin + batch); ++i)
      if (!spread.contains(ids[i])) part.push_back(ids[i]);
    std::vector<LockTable::Handle> held = table_.lock_existing_all(std::move(part));
    renew_documents(ns, renewal, held, coverage, &spread);
  }
  if (spread.empty()) return;
  std::vector<LockTable::Handle> held = table_.lock_existing_all({spread.begin(), spread.end()});
  renew_documents(ns, renewal, held, coverage, nullptr);
}

void SessionKeeper::renew_documents(const std::string& ns, WallTime renewal,
                                    std::vector<LockTable::Handle>& held, Coverage& coverage,
                                    std::set<std::string>* spread) {
  // The documents of grants of several documents (only those name others): which are in this
  // batch, and which of those we renew.
  std::unordered_set<std::string> batch_ids;
  std::unordered_set<std::string> renewing_ids;
  for (const LockTable::Handle& entry : held) {
    const std::optional<lock::LockState>& doc = entry->document();
    if (!doc || doc->doc.grant_docs.empty()) continue;
    batch_ids.insert(entry->id());
    if (entry->renewing() && entry->held()) renewing_ids.insert(entry->id());
  }
  std::vector<lock::Renewal> batch;
  std::vector<LockEntry*> renewing;
  std::vector<api::GrantRef> renewing_grants;
  for (LockTable::Handle& entry : held) {
    if (!entry->renewing() || !entry->held()) continue;
    const lock::LockState& doc = entry->held()->state;
    api::GrantRef grant{name_of(doc.doc.lease), std::to_string(doc.token)};
    coverage.saw(grant, Millis(doc.doc.ttl_millis));
    // A grant is renewed whole or not at all: one of several documents that is no longer
    // renewed (revoked, replaced) means the grant is over; its reconcile revokes the rest.
    const bool in_batch = std::all_of(doc.doc.grant_docs.begin(), doc.doc.grant_docs.end(),
                                      [&](const std::string& id) { return batch_ids.contains(id); });
    if (!in_batch && spread) {
      spread->insert(entry->id());
      spread->insert(doc.doc.grant_docs.begin(), doc.doc.grant_docs.end());
      continue;
    }
    const bool whole = std::all_of(doc.doc.grant_docs.begin(), doc.doc.grant_docs.end(),
                                   [&](const std::string& id) { return renewing_ids.contains(id); });
    if (!whole) {
      coverage.stale.emplace(std::move(grant), entry->id());
      if (options_.enqueue) options_.enqueue(entry->key().id());
      continue;
    }
    if (doc.doc.renewed_at >= renewal) {
      coverage.covered.emplace(std::move(grant), entry->id());  // written at or after the tick's moment
      continue;
    }
    batch.push_back(lock::Renewal{*entry->held(), Millis(0), renewal});
    renewing.push_back(&*entry);
    renewing_grants.push_back(std::move(grant));
  }
  if (batch.empty()) return;
  std::vector<lock::BatchRenewal> results = store_.renew_all(batch);
  const MonoTime after = clock_.monotonic();
  for (std::size_t i = 0; i < renewing.size() && i < results.size(); ++i)
    record_renewal(*renewing[i], results[i], renewing_grants[i], after, coverage);
  // A grant is renewed only when every one of its documents is.
  for (const auto& [grant, id] : coverage.failed) coverage.covered.erase(grant);
  for (const auto& [grant, id] : coverage.stale) coverage.covered.erase(grant);
}

void SessionKeeper::check_published(const std::string& ns, WallTime renewal, Coverage& coverage) {
  // What each Lease shown Held says, copied out: the lock entries are taken outside the cache's lock.
  struct Shown {
    api::GrantRef grant;
    Millis duration;
    std::string lock_id;  // the document its status names
  };
  std::vector<Shown> shown;
  cluster_.for_each_held_lease(ns, [&](const LeaseRecord& lease) {
    if (lease.status.phase == Phase::kHeld && !lease.status.fencing_token.empty())
      shown.push_back(Shown{api::GrantRef{lease.meta.name, lease.status.fencing_token},
                            api::lease_duration(lease.spec.lease_duration_seconds),
                            lock::slot_document_id(lease.lock_id(), lease.status.slot.value_or(0))});
  });
  for (const auto& [grant, duration, lock_id] : shown) {
    coverage.saw(grant, duration);
    // Covered, waited for, or (stale: part of it is no longer renewed) listed by this tick.
    if (coverage.covered.contains(grant) || coverage.failed.contains(grant) || coverage.stale.contains(grant))
      continue;
    std::optional<LockTable::Handle> entry = table_.try_lock(lock_id);
    if (!entry || !(*entry)->known()) {
      coverage.pending.emplace(grant, lock_id);  // not read yet, or being reconciled
      continue;
    }
    const auto& doc = (*entry)->document();
    const bool same_grant =
        doc && is_object_key(doc->doc.lease, ns, grant.lease) && names_fencing_token(grant.token, doc->token);
    if (same_grant && (*entry)->renewing() && doc->doc.renewed_at >= renewal) {
      coverage.covered.emplace(grant, lock_id);  // granted after the tick's moment
    } else if (same_grant && !(*entry)->revoked()) {
      coverage.pending.emplace(grant, lock_id);  // to be adopted (or just granted)
    } else {
      coverage.stale.emplace(grant, lock_id);  // the document holds another grant, or ours was revoked
    }
  }
}

}  // namespace eslease::controller
