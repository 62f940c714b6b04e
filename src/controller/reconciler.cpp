#include "controller/reconciler.h"

#include <algorithm>

#include "common/json_fields.h"
#include "common/log.h"
#include "controller/lease_codec.h"
#include "kube/status.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

constexpr int kMaxSteps = 4;  // e.g. release a deleted claim's lock, then grant it to the next
// A Lease status someone else wrote is put right at most this often: two replicas that
// both believe they lead, each projecting its own view of the document, would otherwise
// overwrite each other's status as fast as the API answers.
constexpr Millis kCorrectionPace{1000};

double seconds_between(WallTime from, WallTime to) {
  return std::max(0.0, std::chrono::duration<double>(to - from).count());
}

kube::ObjectReference lease_reference(const LeaseRecord& lease) {
  kube::ObjectReference ref;
  ref.api_version = "eslease.io/v1alpha1";
  ref.kind = "Lease";
  ref.ns = lease.meta.ns;
  ref.name = lease.meta.name;
  ref.uid = lease.meta.uid;
  ref.resource_version = lease.meta.resource_version;
  return ref;
}

// The resourceVersion an API write answered with (empty if the answer has none).
std::string resource_version_of(const json& object) {
  const json* meta = json_fields::find(object, "metadata");
  return meta ? json_fields::string_at(*meta, "resourceVersion") : std::string();
}

bool is_unavailable(const Error& error) {
  return error.code == ErrorCode::kUnavailable || error.code == ErrorCode::kTimeout ||
         error.code == ErrorCode::kTooManyRequests;
}

}  // namespace

Reconciler::Reconciler(const ClusterView& cluster, ClaimIndex& index, PodTracker& tracker, LockTable& table,
                       lock::LockStore& store, kube::Api& api, kube::EventRecorder* events,
                       Observer& observer, Clock& clock, ReconcilerOptions options)
    : cluster_(cluster),
      index_(index),
      tracker_(tracker),
      table_(table),
      store_(store),
      api_(api),
      events_(events),
      observer_(observer),
      clock_(clock),
      options_(std::move(options)) {}

void Reconciler::note_error(const Error& error) {
  if (is_unavailable(error)) backend_available_.store(false);
}

void Reconciler::lease_seen(const std::string& uid, const std::string& version) {
  std::lock_guard lock(memory_mutex_);
  forget_if_seen(written_status_, uid, version);
}

void Reconciler::pod_seen(const std::string& uid, const std::string& version) {
  std::lock_guard lock(memory_mutex_);
  forget_if_seen(written_annotation_, uid, version);
}

void Reconciler::forget_lease(const std::string& uid) {
  std::lock_guard lock(memory_mutex_);
  written_status_.erase(uid);
  status_version_.erase(uid);
  corrected_at_.erase(uid);
}

void Reconciler::forget_pod(const std::string& uid) {
  std::lock_guard lock(memory_mutex_);
  written_annotation_.erase(uid);
}

void Reconciler::read_document(LockEntry& entry) {
  auto read = store_.get(entry.key);
  const MonoTime answered = clock_.monotonic();
  if (read.ok()) {
    backend_available_.store(true);
    entry.observe(std::move(*read), answered);
    return;
  }
  if (read.error().code == ErrorCode::kProtocol) {
    // The index answered, but with something that is not a lock document.
    backend_available_.store(true);
    entry.known = true;
    entry.state.reset();
    entry.malformed = read.error().message;
    return;
  }
  note_error(read.error());
  log::warn("cannot read lock document", {{"lock", entry.key.id()}, {"error", read.error().describe()}});
}

LockWorld Reconciler::gather(const LockEntry& entry, const std::optional<RecentGrant>& recent) const {
  LockWorld world;
  world.ns = entry.key.ns();
  world.lock_name = entry.key.name();
  world.now = lock::to_millis(clock_.now());
  world.mono = clock_.monotonic();
  world.liveness_takeover = options_.liveness_takeover;
  world.backend_available = backend_available_.load();
  world.recent_grant = recent;
  world.document_known = entry.known;
  world.malformed_document = entry.malformed;

  {
    std::lock_guard lock(memory_mutex_);
    for (const std::string& key : index_.claims_of(entry.key.id())) {
      auto lease = cluster_.lease(key);
      if (!lease || lease->spec.lock_name != entry.key.name()) continue;
      if (auto written = written_status_.find(lease->meta.uid); written != written_status_.end()) {
        // Compared as written: the API keeps times to the millisecond or second.
        if (status_patch(lease->status) == status_patch(written->second.value)) {
          written_status_.erase(written);  // the cache has caught up: the memory is not needed
        } else {
          lease->status = written->second.value;
        }
      }
      world.claims.push_back(std::move(*lease));
    }
  }
  auto add_pod = [&](const PodRecord& pod) { world.pods.emplace(pod.meta.name, tracker_.state_of(pod)); };
  bool any_election = false;
  for (const LeaseRecord& lease : world.claims) {
    if (lease.spec.election_mode()) {
      any_election = true;
    } else if (!lease.spec.pod_name.empty()) {
      if (auto pod = cluster_.pod(world.ns + "/" + lease.spec.pod_name)) add_pod(*pod);
    }
  }
  if (any_election) {
    cluster_.for_each_pod(world.ns, [&](const PodRecord& pod) {
      for (const LeaseRecord& lease : world.claims) {
        if (lease.spec.election_mode() && lease.spec.selector->matches(pod.labels)) {
          add_pod(pod);
          return;
        }
      }
    });
  }
  if (entry.known && entry.state) {
    DocumentView view;
    view.state = *entry.state;
    view.expires_at = entry.expires_at;
    view.active = entry.active.load();
    view.revoked_reason = entry.revoked_reason;
    const lock::LockDocument& doc = entry.state->doc;
    const auto slash = doc.holder.find('/');
    if (slash != std::string::npos && doc.holder.substr(0, slash) == world.ns) {
      if (auto pod = cluster_.pod(doc.holder)) add_pod(*pod);
    }
    // A Lease that still exists but claims another lock now.
    const bool claims_here = std::any_of(world.claims.begin(), world.claims.end(),
                                         [&](const LeaseRecord& l) { return l.meta.uid == doc.lease_uid; });
    if (!claims_here && !doc.lease.empty()) {
      if (auto owner = cluster_.lease(doc.lease); owner && owner->meta.uid == doc.lease_uid)
        view.owner_moved = true;
    }
    world.document = std::move(view);
  }
  return world;
}

lock::Claim Reconciler::claim_for(const LockWorld& world, const GrantPlan& plan) const {
  lock::Claim claim;
  claim.lease = world.ns + "/" + plan.lease;
  claim.lease_uid = plan.lease_uid;
  claim.holder = world.ns + "/" + plan.pod;
  claim.holder_uid = plan.pod_uid;
  claim.node = plan.node;
  claim.priority = to_string(plan.priority);
  claim.ttl = plan.ttl;
  return claim;
}

void Reconciler::record_grant(LockEntry& entry, const lock::AcquireOutcome& outcome, const Decision& decision,
                              const LockWorld& world, std::optional<RecentGrant>& recent, const char* op) {
  const MonoTime now = clock_.monotonic();
  if (!outcome.grant) {
    // Someone else wrote first (409): decide again on what is there now.
    observer_.backend_conflict(op);
    entry.observe(outcome.current, outcome.observed_at);
    return;
  }
  entry.hold(*outcome.grant, now);
  const GrantPlan& plan = decision.grant;
  recent = RecentGrant{plan.lease, plan.takeover_reason, plan.from_pod, world.now};
  observer_.granted(seconds_between(plan.waiting_since, world.now));
  if (!plan.takeover_reason.empty()) {
    std::optional<MonoTime> seen = plan.dead_seen_at;
    if (!seen) seen = tracker_.death_seen_at(world.ns + "/" + plan.from_pod);
    std::optional<double> latency;
    if (seen) latency = std::chrono::duration<double>(now - *seen).count();
    observer_.taken_over(plan.takeover_reason, latency);
    if (plan.takeover_reason == reason::kExpired) observer_.expired();
  }
  log::info(plan.takeover_reason.empty() ? "lock granted" : "lock taken over",
            {{"lock", entry.key.id()},
             {"lease", plan.lease},
             {"pod", plan.pod},
             {"token", outcome.grant->state.token},
             {"reason", plan.takeover_reason},
             {"from", plan.from_pod}});
}

Status Reconciler::carry_out(LockEntry& entry, const Decision& decision, const LockWorld& world,
                             std::optional<RecentGrant>& recent) {
  switch (decision.action) {
    case Action::kNone:
      return {};
    case Action::kAcquire: {
      auto outcome = store_.acquire(entry.key, claim_for(world, decision.grant));
      if (!outcome.ok()) return outcome.error();
      record_grant(entry, *outcome, decision, world, recent, "acquire");
      return {};
    }
    case Action::kTakeOver: {
      auto outcome = store_.take_over(entry.key, *entry.state, claim_for(world, decision.grant));
      if (!outcome.ok()) return outcome.error();
      record_grant(entry, *outcome, decision, world, recent, "take_over");
      return {};
    }
    case Action::kRelease: {
      // Only the version decided on: a later one (another replica's renewal) may carry a later
      // expiresAt that the holder was shown; it is read and decided on again.
      auto released = store_.release(entry.key, lock::Grant{*entry.state, entry.expires_at},
                                     lock::ReleaseScope::kThisVersion);
      if (!released.ok()) return released.error();
      if (*released == lock::ReleaseOutcome::kReleased) {
        entry.active = false;
        entry.grant.reset();
        entry.observe(std::nullopt, clock_.monotonic());
        observer_.released();
        log::info("lock released", {{"lock", entry.key.id()}, {"reason", decision.action_reason}});
      } else {
        observer_.backend_conflict("release");
        entry.drop();
        read_document(entry);
      }
      return {};
    }
    case Action::kRevoke:
      entry.active = false;
      entry.revoked_reason = decision.action_reason;
      log::info("grant revoked; handed over once it expires", {{"lock", entry.key.id()},
                                                               {"reason", decision.action_reason},
                                                               {"detail", decision.action_message}});
      return {};
    case Action::kAdopt:
      entry.grant = lock::Grant{*entry.state, entry.expires_at};
      entry.next_renewal = clock_.monotonic();
      entry.active = true;
      if (options_.wake_renewer) options_.wake_renewer();
      log::info("adopted existing grant", {{"lock", entry.key.id()}, {"token", entry.state->token}});
      return {};
  }
  return {};
}

ReconcileOutcome Reconciler::reconcile(const std::string& lock_id) {
  ReconcileOutcome outcome;
  auto key = lock::parse_lock_id(lock_id);
  if (!key.ok()) {
    log::warn("ignoring an unusable lock name",
              {{"lock", lock_id.substr(0, 300)}, {"error", key.error().message}});
    return outcome;
  }
  LockEntry& entry = table_.entry(*key);
  LockWorld world;
  Decision decision;
  {
    std::lock_guard guard(entry.mutex);
    if (!entry.known) read_document(entry);
    std::optional<RecentGrant> recent;
    for (int step = 0;; ++step) {
      world = gather(entry, recent);
      decision = decide(world);
      if (decision.action == Action::kNone || step == kMaxSteps) break;
      Status done = carry_out(entry, decision, world, recent);
      if (!done.ok()) {
        note_error(done.error());
        entry.known = false;  // the outcome may be unknown: read before the next decision
        log::warn(
            "lock write failed",
            {{"lock", lock_id}, {"action", to_string(decision.action)}, {"error", done.error().describe()}});
        outcome.status = done;
        world.act = false;
        world.backend_available = !is_unavailable(done.error());
        decision = decide(world);
        break;
      }
      backend_available_.store(true);
    }
    if (!entry.known && outcome.status.ok()) {
      outcome.status = make_error(ErrorCode::kUnavailable, "lock document " + lock_id + " could not be read");
    }
  }
  outcome.requeue_at = decision.requeue_at;
  Status written = apply_to_cluster(world, decision, outcome.requeue_at);
  if (outcome.status.ok() && !written.ok()) outcome.status = written;
  return outcome;
}

bool Reconciler::pace_correction(const LeaseRecord& lease, MonoTime now, std::optional<MonoTime>& retry_at) {
  std::lock_guard lock(memory_mutex_);
  const std::string& uid = lease.meta.uid;
  const auto ours = status_version_.find(uid);
  const bool someone_elses = lease.status.phase != Phase::kNone && !written_status_.contains(uid) &&
                             (ours == status_version_.end() || ours->second != lease.meta.resource_version);
  if (!someone_elses) return true;
  if (auto last = corrected_at_.find(uid);
      last != corrected_at_.end() && now < last->second + kCorrectionPace) {
    const MonoTime next = last->second + kCorrectionPace;
    if (!retry_at || next < *retry_at) retry_at = next;
    return false;
  }
  corrected_at_[uid] = now;
  return true;
}

Status Reconciler::apply_to_cluster(const LockWorld& world, const Decision& decision,
                                    std::optional<MonoTime>& retry_at) {
  Status result;
  auto keep_first_error = [&](Status s) {
    if (result.ok() && !s.ok()) result = std::move(s);
  };
  keep_first_error(write_finalizers(world, decision));
  for (const LeaseRecord& lease : world.claims) {
    auto desired = decision.statuses.find(lease.meta.name);
    if (desired == decision.statuses.end() || desired->second == lease.status) continue;
    if (!pace_correction(lease, world.mono, retry_at)) continue;
    keep_first_error(write_status(lease, desired->second));
  }
  if (events_) {
    for (const PlannedEvent& e : decision.events) {
      auto lease = std::find_if(world.claims.begin(), world.claims.end(),
                                [&](const LeaseRecord& l) { return l.meta.name == e.lease; });
      if (lease == world.claims.end()) continue;
      events_->record(lease_reference(*lease),
                      e.warning ? kube::EventType::kWarning : kube::EventType::kNormal, e.reason, e.message);
    }
  }
  if (options_.holds_annotation) keep_first_error(update_annotations(world, decision));
  if (world.document_known) {
    std::string holder;
    if (world.document) holder = world.document->state.doc.holder;
    index_.set_holder(world.ns + "/" + world.lock_name, holder);
  }
  return result;
}

Status Reconciler::write_finalizers(const LockWorld& world, const Decision& decision) {
  Status result;
  auto patch_finalizers = [&](const LeaseRecord& lease, bool add) {
    std::vector<std::string> finalizers = lease.finalizers;
    std::erase(finalizers, std::string(kFinalizer));
    if (add) finalizers.push_back(kFinalizer);
    // The resourceVersion makes the patch conditional: another writer's finalizer is never lost.
    json patch = {
        {"metadata", {{"finalizers", finalizers}, {"resourceVersion", lease.meta.resource_version}}}};
    auto patched = api_.patch(kube::resources::eslease_leases(), lease.meta.ns, lease.meta.name,
                              kube::PatchType::kMerge, patch);
    if (patched.ok() || patched.error().code == ErrorCode::kNotFound) return;
    // A conflict only means our cache was behind; the requeue retries on the newer version.
    if (patched.error().code != ErrorCode::kConflict)
      log::warn(add ? "cannot add the Lease finalizer" : "cannot remove the Lease finalizer",
                {{"lease", lease.meta.key()}, {"error", patched.error().describe()}});
    if (result.ok()) result = patched.error();
  };
  for (const LeaseRecord& lease : world.claims) {
    const auto& add = decision.add_finalizer;
    const auto& remove = decision.remove_finalizer;
    if (std::find(add.begin(), add.end(), lease.meta.name) != add.end()) patch_finalizers(lease, true);
    if (std::find(remove.begin(), remove.end(), lease.meta.name) != remove.end()) {
      patch_finalizers(lease, false);
      forget_lease(lease.meta.uid);
    }
  }
  return result;
}

Status Reconciler::write_status(const LeaseRecord& lease, const LeaseStatus& status) {
  auto patched = api_.patch(kube::resources::eslease_leases(), lease.meta.ns, lease.meta.name,
                            kube::PatchType::kMerge, status_patch(status), /*status_subresource=*/true);
  if (!patched.ok()) {
    if (patched.error().code == ErrorCode::kNotFound) return {};
    log::warn("cannot write Lease status",
              {{"lease", lease.meta.key()}, {"error", patched.error().describe()}});
    return patched.error();
  }
  std::lock_guard lock(memory_mutex_);
  const std::string version = resource_version_of(*patched);
  written_status_[lease.meta.uid] = Written<LeaseStatus>{status, version};
  status_version_[lease.meta.uid] = version;
  return {};
}

void Reconciler::adopt_holds(const std::string& pod_key, const PodRecord& pod,
                             std::set<std::string>& touched) {
  if (holds_.contains(pod_key)) return;
  const auto written = written_annotation_.find(pod.meta.uid);
  const std::string& value =
      written != written_annotation_.end() ? written->second.value : pod.holds_annotation;
  if (value.empty()) return;
  const std::map<std::string, std::string> entries = parse_holds(value);
  if (format_holds(entries) != value) touched.insert(pod_key);  // not all entries: rewritten
  for (const auto& [lease_name, token] : entries) {
    auto lease = cluster_.lease(pod.meta.ns + "/" + lease_name);
    if (!lease) {
      touched.insert(pod_key);  // names a Lease that is gone: rewritten without it
      continue;
    }
    const std::string its_lock = lease->meta.ns + "/" + lease->spec.lock_name;
    holds_[pod_key][lease_name] = Hold{its_lock, token};
    holders_[its_lock].insert(pod_key);
  }
}

Status Reconciler::update_annotations(const LockWorld& world, const Decision& decision) {
  // Which pods' eslease.io/holds values this lock changes.
  const std::string lock = world.ns + "/" + world.lock_name;
  std::set<std::string> touched;
  std::map<std::string, std::string> desired;  // pod key -> annotation value
  {
    std::lock_guard guard(memory_mutex_);
    for (const auto& [name, pod] : world.pods) adopt_holds(world.ns + "/" + name, pod.record, touched);
    if (auto had = holders_.find(lock); had != holders_.end()) {
      for (const std::string& pod_key : had->second) {
        auto pod = holds_.find(pod_key);
        if (pod == holds_.end()) continue;
        // Only entries still for this lock: a Lease that moved on is another lock's now.
        std::erase_if(pod->second, [&](const auto& held) { return held.second.lock == lock; });
        if (pod->second.empty()) holds_.erase(pod);
        touched.insert(pod_key);
      }
      holders_.erase(had);
    }
    for (const LeaseRecord& lease : world.claims) {
      auto status = decision.statuses.find(lease.meta.name);
      if (status == decision.statuses.end() || status->second.phase != Phase::kHeld || !status->second.holder)
        continue;
      const std::string pod_key = world.ns + "/" + status->second.holder->pod_name;
      holds_[pod_key][lease.meta.name] = Hold{lock, status->second.fencing_token};
      holders_[lock].insert(pod_key);
      touched.insert(pod_key);
    }
    for (const std::string& pod_key : touched) {
      std::map<std::string, std::string> token_by_lease;
      if (auto it = holds_.find(pod_key); it != holds_.end()) {
        for (const auto& [lease, held] : it->second) token_by_lease[lease] = held.token;
      }
      desired[pod_key] = format_holds(token_by_lease);
    }
  }
  Status result;
  std::lock_guard serial(annotation_mutex_);
  for (const auto& [pod_key, value] : desired) {
    auto pod = cluster_.pod(pod_key);
    if (!pod) continue;
    std::string current = pod->holds_annotation;
    {
      std::lock_guard lock(memory_mutex_);
      if (auto w = written_annotation_.find(pod->meta.uid); w != written_annotation_.end()) {
        if (current == w->second.value) {
          written_annotation_.erase(w);
        } else {
          current = w->second.value;
        }
      }
    }
    if (current == value) continue;
    json patch = {
        {"metadata", {{"annotations", {{kHoldsAnnotation, value.empty() ? json(nullptr) : json(value)}}}}}};
    auto patched =
        api_.patch(kube::resources::pods(), pod->meta.ns, pod->meta.name, kube::PatchType::kMerge, patch);
    if (!patched.ok()) {
      if (patched.error().code == ErrorCode::kNotFound) continue;
      if (result.ok()) result = patched.error();
      continue;
    }
    std::lock_guard lock(memory_mutex_);
    written_annotation_[pod->meta.uid] = Written<std::string>{value, resource_version_of(*patched)};
  }
  return result;
}

void Reconciler::prime(const std::vector<std::string>& lock_ids) {
  std::vector<lock::LockKey> keys;
  for (const std::string& id : lock_ids) {
    auto key = lock::parse_lock_id(id);
    if (key.ok()) keys.push_back(*key);
  }
  auto read = store_.get_many(keys);
  if (!read.ok()) {
    note_error(read.error());
    log::warn("start-up read of lock documents failed; reading one by one",
              {{"error", read.error().describe()}});
    return;
  }
  const MonoTime answered = clock_.monotonic();
  backend_available_.store(true);
  std::vector<std::pair<lock::LockKey, lock::Claim>> grants;
  std::vector<std::pair<LockEntry*, Decision>> planned;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    LockEntry& entry = table_.entry(keys[i]);
    std::lock_guard guard(entry.mutex);
    const auto& one = (*read)[i];
    if (one.ok()) {
      entry.observe(*one, answered);
    } else if (one.error().code == ErrorCode::kProtocol) {
      entry.known = true;
      entry.malformed = one.error().message;
      continue;
    } else {
      continue;
    }
    LockWorld world = gather(entry, std::nullopt);
    Decision decision = decide(world);
    if (decision.action != Action::kAcquire) continue;
    grants.emplace_back(keys[i], claim_for(world, decision.grant));
    planned.emplace_back(&entry, std::move(decision));
  }
  if (grants.empty()) return;
  auto outcomes = store_.acquire_many(grants);
  for (std::size_t i = 0; i < planned.size() && i < outcomes.size(); ++i) {
    LockEntry& entry = *planned[i].first;
    std::lock_guard guard(entry.mutex);
    if (!outcomes[i].ok()) {
      note_error(outcomes[i].error());
      entry.known = false;
      continue;
    }
    std::optional<RecentGrant> recent;
    LockWorld world = gather(entry, std::nullopt);
    record_grant(entry, *outcomes[i], planned[i].second, world, recent, "acquire");
  }
}

}  // namespace eslease::controller
