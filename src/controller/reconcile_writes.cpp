// The reconcile's writes to Elasticsearch: one step's action carried out on the slot
// documents it concerns, in one request (a grant of one document or several, the release of
// a grant), or none at all (a revocation, listed in the namespace's session; an adoption).
#include <algorithm>

#include "common/log.h"
#include "controller/claim_queue.h"
#include "controller/reconciler.h"

namespace eslease::controller {
namespace {

double seconds_between(WallTime from, WallTime to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

lock::Grantee grantee(const LockWorld& world, const GrantPlan& plan) {
  lock::Grantee to;
  to.lease = object_key(world.ns, plan.lease);
  to.lease_uid = plan.lease_uid;
  to.holder = object_key(world.ns, plan.pod);
  to.holder_uid = plan.pod_uid;
  to.node = plan.node;
  to.priority = to_string(plan.priority);
  to.ttl = plan.ttl;
  return to;
}

// The documents the entries hold now, as one grant.
lock::HeldGrant held_grant(const std::vector<LockEntry*>& entries) {
  std::vector<lock::HeldDocument> docs;
  for (const LockEntry* entry : entries)
    if (entry->document())
      docs.push_back(lock::HeldDocument{entry->key(), *entry->document(), entry->expires_at()});
  return lock::grant_of(std::move(docs));
}

}  // namespace

lock::GrantRequest Reconciler::grant_request(const std::vector<LockEntry*>& entries, const Decision& decision,
                                             const LockWorld& world) const {
  const GrantPlan& plan = decision.grant;
  lock::GrantRequest request;
  request.grantee = grantee(world, plan);
  request.capacity = world.capacity_of(plan.slots.front().lock);
  request.access = plan.access;
  for (const LockEntry* entry : entries)
    request.writes.push_back(lock::SlotWrite{entry->key(), entry->slot(), entry->document()});
  return request;
}

bool Reconciler::record_grant(const std::vector<LockEntry*>& entries, const lock::GrantOutcome& outcome,
                              const Decision& decision) {
  if (!outcome.grant) {
    // Someone else wrote first (409), or part of it: decide again on what is there now.
    observer_.backend_conflict(decision.grant.takes_over() ? "take_over" : "acquire");
    for (std::size_t i = 0; i < entries.size() && i < outcome.current.size(); ++i)
      entries[i]->read(outcome.current[i], outcome.observed_at);
    return false;
  }
  for (std::size_t i = 0; i < entries.size() && i < outcome.grant->docs.size(); ++i)
    entries[i]->granted(outcome.grant->docs[i]);
  return true;
}

Status Reconciler::grant(const Group& group, Entries& entries, const Decision& decision,
                         const LockWorld& world, std::vector<RecentGrant>& recent) {
  const GrantPlan& plan = decision.grant;
  const std::vector<LockEntry*> taking = entries_of(group, entries, plan.slots);
  if (taking.empty() || taking.size() != plan.slots.size())
    return {};  // not slots of this world: decided again
  // The grants this one is written over have ended: the rest of their documents are no longer
  // renewed, and their end is counted once, whichever grant takes their last slot.
  std::vector<LockEntry*> rest;
  bool end_counted = false;
  for (const GrantView& old : world.grants) {
    if (!share_a_slot(old.slots, plan.slots)) continue;
    for (LockEntry* entry : entries_of(group, entries, old.slots)) {
      end_counted = end_counted || entry->end_counted();
      if (std::find(taking.begin(), taking.end(), entry) == taking.end()) rest.push_back(entry);
    }
  }
  auto outcome = lock::grant_one(store_, grant_request(taking, decision, world));
  if (!outcome.ok()) return outcome.error();
  if (!record_grant(taking, *outcome, decision)) return {};
  for (LockEntry* entry : rest) {
    entry->ended();
    entry->count_end();
  }
  announce_grant(taking.front()->key().id(), outcome->grant->token, decision, world.ns, world.now,
                 !end_counted);
  recent.push_back(RecentGrant{plan.lease, plan.takeover_reason, plan.from_pod, world.now});
  return {};
}

void Reconciler::announce_grant(const std::string& lock_id, std::int64_t token, const Decision& decision,
                                const std::string& ns, WallTime decided_at, bool ended_grant_expired) {
  const MonoTime now = clock_.monotonic();
  const GrantPlan& plan = decision.grant;
  sessions_.wake(ns, plan.ttl);  // published soon enough to be usable at once
  observer_.granted(seconds_between(plan.waiting_since, decided_at));
  if (plan.takeover_reason) {
    std::optional<MonoTime> seen = plan.dead_seen_at;
    if (!seen) seen = tracker_.death_seen_at(object_key(ns, plan.from_pod));
    std::optional<double> latency;
    if (seen) latency = std::chrono::duration<double>(now - *seen).count();
    observer_.taken_over(api::to_string(*plan.takeover_reason), latency);
    if (*plan.takeover_reason == api::Reason::kExpired && ended_grant_expired) observer_.expired();
  }
  log::info(plan.takeover_reason ? "lock taken over" : "lock granted",
            {{"lock", lock_id},
             {"slots", plan.slots.size()},
             {"lease", plan.lease},
             {"pod", plan.pod},
             {"token", token},
             {"reason", plan.takeover_reason ? api::to_string(*plan.takeover_reason) : ""},
             {"from", plan.from_pod}});
}

Status Reconciler::release(const std::vector<LockEntry*>& entries, const Decision& decision) {
  const lock::HeldGrant held = held_grant(entries);
  if (held.docs.empty()) return {};
  // Only the versions decided on: a later one (another replica's renewal) may carry a later
  // expiresAt that the holder was shown; it is read and decided on again.
  auto outcome = store_.release(held, lock::ReleaseScope::kThisVersion);
  if (!outcome.ok()) return outcome.error();
  if (*outcome == lock::ReleaseOutcome::kNotHeld) {
    observer_.backend_conflict("release");
    for (LockEntry* entry : entries) entry->lost();  // read again before deciding
    return {};
  }
  const MonoTime now = clock_.monotonic();
  for (LockEntry* entry : entries) entry->released(now);
  observer_.released();
  log::info("lock released",
            {{"lock", entries.front()->key().id()},
             {"slots", entries.size()},
             {"reason", decision.action_reason ? api::to_string(*decision.action_reason) : ""}});
  return {};
}

// The grant is listed in the namespace's session first: from then on its holder's validity
// no longer grows, and it ends once that validity has ended. A grant of several documents is
// one grant: listed once, with its token (the largest of its documents'), and every document
// of it stops being renewed.
Status Reconciler::revoke(const std::vector<LockEntry*>& entries, const Decision& decision,
                          const LockWorld& world) {
  const lock::HeldGrant held = held_grant(entries);
  if (held.docs.empty()) return {};
  const lock::LockDocument& first = held.docs.front().state.doc;
  const std::string lease = name_of(first.lease);
  Millis duration(first.ttl_millis);
  for (const LeaseRecord& claim : world.claims)
    if (claim.meta.uid == first.lease_uid)
      duration = std::max(duration, api::lease_duration(claim.spec.lease_duration_seconds));
  auto listed = sessions_.revoke(world.ns, api::GrantRef{lease, std::to_string(held.token)}, duration);
  if (!listed.ok()) return listed.error();
  const api::Reason why = decision.action_reason.value_or(api::Reason::kRenewalFailed);
  for (LockEntry* entry : entries)
    if (entry->document()) entry->revoke(entry->revoked().value_or(why), *listed);
  log::info("grant revoked; handed over once its validity ends", {{"lock", entries.front()->key().id()},
                                                                  {"reason", api::to_string(why)},
                                                                  {"detail", decision.action_message}});
  return {};
}

Status Reconciler::carry_out(const Group& group, Entries& entries, const Decision& decision,
                             const LockWorld& world, std::vector<RecentGrant>& recent) {
  switch (decision.action) {
    case Action::kNone:
      return {};
    case Action::kGrant:
      return grant(group, entries, decision, world, recent);
    case Action::kRelease:
      return release(entries_of(group, entries, decision.subject), decision);
    case Action::kRevoke:
      return revoke(entries_of(group, entries, decision.subject), decision, world);
    case Action::kAdopt: {
      const std::vector<LockEntry*> concerned = entries_of(group, entries, decision.subject);
      // The grant's token is the largest of its documents' (the one its Lease shows): the
      // granting controller renewed every document with it, and so does this one.
      std::int64_t token = 0;
      for (const LockEntry* entry : concerned)
        if (entry->document()) token = std::max(token, entry->document()->token);
      for (LockEntry* entry : concerned) entry->adopted(token);
      if (!concerned.empty() && concerned.front()->document()) {
        sessions_.wake(world.ns, Millis(concerned.front()->document()->doc.ttl_millis));
        log::info("adopted existing grant",
                  {{"lock", concerned.front()->key().id()}, {"slots", concerned.size()}, {"token", token}});
      }
      return {};
    }
  }
  return {};
}

}  // namespace eslease::controller
