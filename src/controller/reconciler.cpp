#include "controller/reconciler.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "controller/claim_queue.h"

namespace eslease::controller {
namespace {

double seconds_between(WallTime from, WallTime to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

kube::ObjectReference lease_reference(const LeaseRecord& lease) {
  kube::ObjectReference ref;
  ref.api_version = kube::resources::eslease_leases().api_version();
  ref.kind = "Lease";
  ref.ns = lease.meta.ns;
  ref.name = lease.meta.name;
  ref.uid = lease.meta.uid;
  ref.resource_version = lease.meta.resource_version;
  return ref;
}

// The claims, their grants in the order they were made (by token): several grants of one lock
// (its slots) are shown in that order, so every watcher sees the lock's tokens grow.
std::vector<const LeaseRecord*> in_token_order(const LockWorld& world, const Decision& decision) {
  std::vector<const LeaseRecord*> in_order;
  for (const LeaseRecord& lease : world.claims) in_order.push_back(&lease);
  // Tokens are non-negative decimals without leading zeros: shorter is smaller.
  auto token = [&](const LeaseRecord* l) {
    auto desired = decision.statuses.find(l->meta.name);
    const std::string& text =
        desired == decision.statuses.end() ? l->status.fencing_token : desired->second.fencing_token;
    return std::make_pair(text.size(), text);
  };
  std::stable_sort(in_order.begin(), in_order.end(),
                   [&](const LeaseRecord* a, const LeaseRecord* b) { return token(a) < token(b); });
  return in_order;
}

}  // namespace

Reconciler::Reconciler(const ClusterView& cluster, ClaimIndex& index, PodTracker& tracker, LockTable& table,
                       lock::LockStore& store, SessionKeeper& sessions, kube::Api& api,
                       kube::EventRecorder* events, Observer& observer, Clock& clock,
                       ReconcilerOptions options)
    : cluster_(cluster),
      index_(index),
      tracker_(tracker),
      table_(table),
      store_(store),
      sessions_(sessions),
      events_(events),
      observer_(observer),
      clock_(clock),
      options_(options),
      leases_(api),
      holds_(cluster, api) {}

void Reconciler::note_error(const Error& error) {
  if (error.unavailable()) backend_available_.store(false);
}

void Reconciler::read_document(LockEntry& entry) {
  auto read = store_.get(entry.key());
  const MonoTime answered = clock_.monotonic();
  if (read.ok()) {
    backend_available_.store(true);
    entry.read(std::move(*read), answered);
  } else if (read.error().code == ErrorCode::kProtocol) {
    backend_available_.store(true);  // the index answered, with something that is not a lock document
    entry.read_malformed(read.error().message);
  } else {
    note_error(read.error());
    log::warn("cannot read lock document", {{"lock", entry.key().id()}, {"error", read.error().describe()}});
  }
}

std::vector<LeaseRecord> Reconciler::claims_of(const lock::LockKey& key, MonoTime now) const {
  std::vector<LeaseRecord> claims;
  for (const std::string& name : index_.claims_of(key.id())) {
    auto lease = cluster_.lease(name);
    if (!lease || !lease->spec.claims_lock(key.name())) continue;
    leases_.overlay(*lease, now);
    claims.push_back(std::move(*lease));
  }
  return claims;
}

LockWorld Reconciler::world_around(const std::vector<lock::LockKey>& keys,
                                   const std::optional<RecentGrant>& recent) const {
  LockWorld world;
  world.ns = keys.front().ns();
  world.lock_name = keys.front().name();
  world.now = lock::to_millis(clock_.now());
  world.mono = clock_.monotonic();
  world.liveness_takeover = options_.liveness_takeover;
  world.backend_available = backend_available_.load();
  world.recent_grant = recent;
  std::set<std::string> seen;  // a set's claim is one claim of every lock it names
  for (const lock::LockKey& key : keys)
    for (LeaseRecord& lease : claims_of(key, world.mono))
      if (seen.insert(lease.meta.name).second) world.claims.push_back(std::move(lease));
  return world;
}

LockWorld Reconciler::gather(const LockEntry& entry, const std::optional<RecentGrant>& recent) const {
  LockWorld world = world_around({entry.key()}, recent);
  world.document_known = entry.known();
  world.malformed_document = entry.malformed();
  std::vector<std::string> holders;
  if (entry.known() && entry.document()) holders.push_back(entry.document()->doc.holder);
  gather_pods(world, holders);
  world.document = document_view(world, entry);
  return world;
}

// Every pod a claim names or selects, and the documents' holders.
void Reconciler::gather_pods(LockWorld& world, const std::vector<std::string>& holders) const {
  auto add_pod = [&](const PodRecord& pod) { world.pods.emplace(pod.meta.name, tracker_.state_of(pod)); };
  bool any_election = false;
  for (const LeaseRecord& lease : world.claims) {
    if (lease.spec.election_mode()) {
      any_election = true;
    } else if (!lease.spec.pod_name.empty()) {
      if (auto pod = cluster_.pod(object_key(world.ns, lease.spec.pod_name))) add_pod(*pod);
    }
  }
  if (any_election) {
    cluster_.for_each_pod(world.ns, [&](const PodRecord& pod) {
      const bool selected =
          std::any_of(world.claims.begin(), world.claims.end(), [&](const LeaseRecord& lease) {
            return lease.spec.election_mode() && lease.spec.selector->matches(pod.labels);
          });
      if (selected) add_pod(pod);
    });
  }
  for (const std::string& holder : holders) {
    const auto slash = holder.find('/');
    if (slash != std::string::npos && holder.substr(0, slash) == world.ns) {
      if (auto pod = cluster_.pod(holder)) add_pod(*pod);
    }
  }
}

std::optional<DocumentView> Reconciler::document_view(const LockWorld& world, const LockEntry& entry) const {
  if (!entry.known() || !entry.document()) return std::nullopt;
  DocumentView view;
  view.state = *entry.document();
  view.expires_at = entry.expires_at();
  view.renewing = entry.renewing();
  view.revoked = entry.revoked();
  const lock::LockDocument& doc = view.state.doc;
  view.holder_seen_gone = tracker_.saw_gone(doc.holder, doc.holder_uid);
  // A Lease that still exists but claims another lock now.
  const bool claims_here = std::any_of(world.claims.begin(), world.claims.end(),
                                       [&](const LeaseRecord& l) { return l.meta.uid == doc.lease_uid; });
  if (!claims_here && !doc.lease.empty()) {
    if (auto owner = cluster_.lease(doc.lease); owner && owner->meta.uid == doc.lease_uid)
      view.owner_moved = true;
  }
  return view;
}

lock::Grantee Reconciler::grantee(const LockWorld& world, const GrantPlan& plan) const {
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

bool Reconciler::record_grant(LockEntry& entry, const lock::AcquireOutcome& outcome, const Decision& decision,
                              const LockWorld& world, const char* op) {
  if (!outcome.grant) {
    // Someone else wrote first (409): decide again on what is there now.
    observer_.backend_conflict(op);
    entry.read(outcome.current, outcome.observed_at);
    return false;
  }
  entry.granted(*outcome.grant);
  announce_grant(entry.key().id(), outcome.grant->state.token, decision, world);
  return true;
}

void Reconciler::announce_grant(const std::string& lock_id, std::int64_t token, const Decision& decision,
                                const LockWorld& world) {
  const MonoTime now = clock_.monotonic();
  const GrantPlan& plan = decision.grant;
  sessions_.wake(world.ns, plan.ttl);  // published soon enough to be usable at once
  observer_.granted(seconds_between(plan.waiting_since, world.now));
  if (plan.takeover_reason) {
    std::optional<MonoTime> seen = plan.dead_seen_at;
    if (!seen) seen = tracker_.death_seen_at(object_key(world.ns, plan.from_pod));
    std::optional<double> latency;
    if (seen) latency = std::chrono::duration<double>(now - *seen).count();
    observer_.taken_over(api::to_string(*plan.takeover_reason), latency);
    if (*plan.takeover_reason == api::Reason::kExpired) observer_.expired();
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
  bool released = false;
  for (LockEntry* entry : entries) {
    if (!entry->document()) continue;
    // Only the version decided on: a later one (another replica's renewal) may carry a later
    // expiresAt that the holder was shown; it is read and decided on again.
    auto outcome = store_.release(entry->key(), lock::Grant{*entry->document(), entry->expires_at()},
                                  lock::ReleaseScope::kThisVersion);
    if (!outcome.ok()) return outcome.error();
    if (*outcome == lock::ReleaseOutcome::kReleased) {
      entry->released(clock_.monotonic());
      released = true;
    } else {
      observer_.backend_conflict("release");
      entry->lost();
      read_document(*entry);
    }
  }
  if (released) {
    observer_.released();
    log::info("lock released",
              {{"lock", entries.front()->key().id()},
               {"slots", entries.size()},
               {"reason", decision.action_reason ? api::to_string(*decision.action_reason) : ""}});
  }
  return {};
}

// The grant is listed in the namespace's session first: from then on its holder's validity
// no longer grows, and it is handed over once that validity has ended. A grant of several
// documents is one grant: listed once, with its token (the largest of its documents').
Status Reconciler::revoke(const std::vector<LockEntry*>& entries, const Decision& decision,
                          const LockWorld& world) {
  const lock::LockState* first = nullptr;
  std::int64_t token = 0;
  for (const LockEntry* entry : entries) {
    if (!entry->document()) continue;
    if (!first) first = &*entry->document();
    token = std::max(token, entry->document()->token);
  }
  if (!first) return {};
  const std::string lease = name_of(first->doc.lease);
  Millis duration(first->doc.ttl_millis);
  for (const LeaseRecord& claim : world.claims)
    if (claim.meta.uid == first->doc.lease_uid)
      duration = std::max(duration, api::lease_duration(claim.spec.lease_duration_seconds));
  auto listed = sessions_.revoke(world.ns, api::GrantRef{lease, std::to_string(token)}, duration);
  if (!listed.ok()) return listed.error();
  for (LockEntry* entry : entries)
    if (entry->document()) entry->revoke(*decision.action_reason, *listed);
  log::info("grant revoked; handed over once its validity ends",
            {{"lock", entries.front()->key().id()},
             {"reason", api::to_string(*decision.action_reason)},
             {"detail", decision.action_message}});
  return {};
}

Status Reconciler::carry_out(LockEntry& entry, const Decision& decision, const LockWorld& world,
                             std::optional<RecentGrant>& recent) {
  switch (decision.action) {
    case Action::kNone:
      return {};
    case Action::kAcquire:
    case Action::kTakeOver: {
      const bool acquire = decision.action == Action::kAcquire;
      auto outcome = acquire
                         ? store_.acquire(entry.key(), grantee(world, decision.grant))
                         : store_.take_over(entry.key(), *entry.document(), grantee(world, decision.grant));
      if (!outcome.ok()) return outcome.error();
      if (record_grant(entry, *outcome, decision, world, acquire ? "acquire" : "take_over")) {
        const GrantPlan& plan = decision.grant;
        recent = RecentGrant{plan.lease, plan.takeover_reason, plan.from_pod, world.now};
      }
      return {};
    }
    case Action::kRelease:
      return release({&entry}, decision);
    case Action::kRevoke:
      return revoke({&entry}, decision, world);
    case Action::kAdopt:
      entry.adopted();
      sessions_.wake(world.ns, Millis(entry.document()->doc.ttl_millis));
      log::info("adopted existing grant", {{"lock", entry.key().id()}, {"token", entry.document()->token}});
      return {};
  }
  return {};
}

bool Reconciler::run_steps(const std::string& lock_id, const Steps& steps, int max_steps, LockWorld& world,
                           Decision& decision, ReconcileOutcome& outcome, std::stop_token stop) {
  std::optional<RecentGrant> recent;
  for (int step = 0;; ++step) {
    world = steps.gather(recent);
    decision = decide(world);
    if (decision.action == Action::kNone) return true;
    if (step == max_steps) {
      // The document kept moving under us: nothing is projected from a world that is
      // still changing (its statuses and annotations stay as they are); retry later.
      log::warn("lock still changing after the reconcile's steps; retrying",
                {{"lock", lock_id}, {"action", to_string(decision.action)}, {"rule", decision.rule}});
      outcome.status = make_error(ErrorCode::kUnsettled, "lock " + lock_id + " still needs a " +
                                                             to_string(decision.action) + " after " +
                                                             std::to_string(max_steps) + " steps");
      return false;
    }
    // Leadership ended while this reconcile ran: a former leader writes nothing more.
    if (stop.stop_requested()) return false;
    Status done = steps.carry_out(decision, world, recent);
    if (!done.ok()) {
      note_error(done.error());
      steps.outcome_unknown(decision);  // read before the next decision
      log::warn(
          "lock write failed",
          {{"lock", lock_id}, {"action", to_string(decision.action)}, {"error", done.error().describe()}});
      outcome.status = done;
      world.act = false;
      world.backend_available = !done.error().unavailable();
      if (auto refused = store_.grants_refused()) world.grants_refused = *refused;
      decision = decide(world);
      return true;
    }
    backend_available_.store(true);
  }
}

ReconcileOutcome Reconciler::reconcile(const std::string& lock_id, std::stop_token stop) {
  ReconcileOutcome outcome;
  auto key = lock::parse_lock_id(lock_id);
  if (!key.ok()) {
    log::warn("ignoring an unusable lock name",
              {{"lock", lock_id.substr(0, 300)}, {"error", key.error().message}});
    return outcome;
  }
  const std::vector<LeaseRecord> claims = claims_of(*key, clock_.monotonic());
  // A set is decided with every lock it (and the sets overlapping it) names.
  if (any_lock_set(claims)) return reconcile_linked(*key, stop);
  const ReconcileGates::Passage passage = gates_.enter({lock_id});
  std::int64_t slots = std::max(lock_capacity(claims), table_.slots_in_use(lock_id));
  LockWorld world;
  Decision decision;
  if (slots == 1) {
    LockTable::Handle entry = table_.lock(*key);
    if (!entry->known()) read_document(*entry);
    // A document stating a larger capacity (a direct-mode holder's) has holders on slots beside it.
    if (entry->document()) slots = std::max<std::int64_t>(1, entry->document()->doc.capacity);
    if (slots == 1) {
      const Steps steps{[&](const std::optional<RecentGrant>& recent) { return gather(*entry, recent); },
                        [&](const Decision& d, const LockWorld& w, std::optional<RecentGrant>& recent) {
                          return carry_out(*entry, d, w, recent);
                        },
                        [&](const Decision&) { entry->outcome_unknown(); }};
      if (!run_steps(lock_id, steps, kMaxSteps, world, decision, outcome, stop)) return outcome;
      if (!entry->known() && outcome.status.ok())
        outcome.status =
            make_error(ErrorCode::kUnavailable, "lock document " + lock_id + " could not be read");
      if (world.claims.empty()) entry.drop_when_idle();  // a per-job lock leaves nothing behind
    }
  }
  if (slots > 1) return reconcile_shaped({*key}, slots, stop);
  if (stop.stop_requested()) return outcome;
  outcome.requeue_at = decision.requeue_at;
  Status written = write_to_cluster(world, decision, outcome.requeue_at);
  if (outcome.status.ok() && !written.ok()) outcome.status = written;
  return outcome;
}

Status Reconciler::write_to_cluster(const LockWorld& world, const Decision& decision,
                                    std::optional<MonoTime>& retry_at) {
  Status result;
  bool deferred = false;  // a write was left for when the rate limit is free: not an error
  // Keeps the first error and notes a deferral; true when the write went out.
  auto note = [&](const Result<WriteOutcome>& written) {
    if (!written.ok() && result.ok()) result = written.error();
    deferred = deferred || (written.ok() && *written == WriteOutcome::kDeferred);
    return written.ok() && *written == WriteOutcome::kSent;
  };
  auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const LeaseRecord& lease : world.claims) {
    if (listed(decision.add_finalizer, lease.meta.name)) note(leases_.write_finalizer(lease, true));
    if (listed(decision.remove_finalizer, lease.meta.name)) note(leases_.write_finalizer(lease, false));
  }
  // Grants first: in a burst of hand-overs the successors are told before anyone else. An
  // event goes with its status: one whose status waits is planned again when that is retried.
  std::set<std::string> not_written;
  const std::vector<const LeaseRecord*> in_order = in_token_order(world, decision);
  for (const bool grants : {true, false}) {
    for (const LeaseRecord* claim : in_order) {
      const LeaseRecord& lease = *claim;
      auto desired = decision.statuses.find(lease.meta.name);
      if (desired == decision.statuses.end() || grants_the_lock(lease.status, desired->second) != grants)
        continue;
      const Urgency urgency = status_write_urgency(
          lease.status, desired->second, shown_holder_health(world, lease).health == Health::kConfirmedDead);
      const Result<WriteOutcome> written =
          leases_.write_status(lease, desired->second, urgency, world.mono, retry_at);
      if (!written.ok() || *written == WriteOutcome::kDeferred) not_written.insert(lease.meta.name);
      // Counted with the write that shows it, so a claim is counted once, whoever leads. A
      // try-lock (acquireTimeoutSeconds 0) that finds the lock taken did not give up waiting:
      // skipping is what it asked for, and no alert should fire on it.
      if (note(written) && desired->second.phase == Phase::kTimedOut &&
          lease.status.phase != Phase::kTimedOut && lease.spec.acquire_timeout_seconds != 0)
        observer_.claim_timed_out(to_string(lease.spec.priority));
    }
  }
  record_events(world, decision, not_written);
  if (options_.holds_annotation) note(update_holds(world, decision));
  if (world.document_known) {
    // One holder is recorded per lock: the document's, or with several slots the first grant's.
    for (const LockShape& lock : shaped_locks(world)) {
      const DocumentView* holder = world.document ? &*world.document : nullptr;
      for (const DocumentView& grant : world.grants)
        if (!holder && std::any_of(grant.slots.begin(), grant.slots.end(),
                                   [&](const SlotRef& ref) { return ref.lock == lock.name; }))
          holder = &grant;
      index_.set_holder(object_key(world.ns, lock.name), holder ? holder->state.doc.holder : "");
    }
  }
  if (deferred && (!retry_at || world.mono + kDeferredWritesRequeue < *retry_at))
    retry_at = world.mono + kDeferredWritesRequeue;
  return result;
}

void Reconciler::record_events(const LockWorld& world, const Decision& decision,
                               const std::set<std::string>& not_written) {
  if (!events_) return;
  for (const PlannedEvent& e : decision.events) {
    if (not_written.contains(e.lease)) continue;
    auto lease = std::find_if(world.claims.begin(), world.claims.end(),
                              [&](const LeaseRecord& l) { return l.meta.name == e.lease; });
    if (lease == world.claims.end()) continue;
    events_->record(lease_reference(*lease), e.warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                    api::to_string(e.reason), e.message);
  }
}

}  // namespace eslease::controller
