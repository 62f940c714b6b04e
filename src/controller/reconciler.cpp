#include "controller/reconciler.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/log.h"
#include "controller/claim_queue.h"

namespace eslease::controller {
namespace {

// A group grows by the locks its grants' documents name at most this often in one
// reconcile; a group still growing after that is decided as far as it was gathered.
constexpr int kMaxRegroups = 8;

// Adds one more document of a grant to its view. The grant ends no earlier than its latest
// document expires; it is renewed only while every document is; it is revoked when any
// document is. It is shown as its first document (that of its claim's first lock), whichever
// lock was reconciled: its documents differ in how often each lock changed hands.
void merge_document(GrantView& grant, const GrantView& doc) {
  grant.slots.push_back(doc.slots.front());
  const std::int64_t token = std::max(grant.state.token, doc.state.token);
  const std::vector<std::string>& ids = doc.state.doc.grant_docs;
  if (!ids.empty() && lock::document_id(doc.state.doc) == ids.front()) grant.state = doc.state;
  grant.state.token = token;
  grant.expires_at = std::max(grant.expires_at, doc.expires_at);
  grant.renewing = grant.renewing && doc.renewing;
  grant.holder_seen_gone = grant.holder_seen_gone || doc.holder_seen_gone;
  if (!grant.revoked) grant.revoked = doc.revoked;
}

}  // namespace

std::vector<std::string> Reconciler::Group::ids() const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const lock::LockKey& key : keys) out.push_back(key.id());
  return out;
}

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

std::vector<LeaseRecord> Reconciler::claims_of(const lock::LockKey& key, MonoTime now) const {
  std::vector<LeaseRecord> claims;
  for (const std::string& name : index_.claims_of(key.id())) {
    std::optional<LeaseRecord> lease;
    // Overlaid under the cache's lock: the informer delivers a version only once its cache
    // shows it, so our write's delivery, which ends the memory of it, cannot fall between
    // this copy and the overlay.
    cluster_.read_lease(name, [&](const LeaseRecord& cached) {
      lease = cached;
      leases_.overlay(*lease, now);
    });
    if (!lease || !lease->spec.claims_lock(key.name())) continue;
    lease->arrived = index_.arrival_of(lease->meta.uid);
    claims.push_back(std::move(*lease));
  }
  return claims;
}

Reconciler::Group Reconciler::group_of(const lock::LockKey& key,
                                       const std::vector<lock::LockKey>& more) const {
  Group group;
  group.keys.push_back(key);
  std::set<std::string> names{key.name()};
  for (const lock::LockKey& other : more)
    if (names.insert(other.name()).second) group.keys.push_back(other);
  std::set<std::string> leases;  // a set's claim is one claim of every lock it names
  const MonoTime now = clock_.monotonic();
  for (std::size_t i = 0; i < group.keys.size(); ++i) {
    for (LeaseRecord& lease : claims_of(group.keys[i], now)) {
      for (const std::string& name : lease.spec.locks()) {
        if (!names.insert(name).second) continue;
        if (auto linked = lock::make_lock_key(key.ns(), name); linked.ok()) group.keys.push_back(*linked);
      }
      if (leases.insert(lease.meta.name).second) group.claims.push_back(std::move(lease));
    }
  }
  std::vector<std::string> lock_names;
  lock_names.reserve(group.keys.size());
  for (const lock::LockKey& k : group.keys) lock_names.push_back(k.name());
  group.shapes = lock_shapes(group.claims, lock_names);
  return group;
}

void Reconciler::read_unknown(const Group& group, Entries& entries) {
  std::vector<lock::SlotRange> ranges;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (std::none_of(entries[i].begin(), entries[i].end(),
                     [](const LockTable::Handle& e) { return !e->known(); }))
      continue;
    ranges.push_back(lock::SlotRange{group.keys[i], static_cast<std::int64_t>(entries[i].size())});
    which.push_back(i);
  }
  if (ranges.empty()) return;
  auto read = store_.read_slots(ranges);
  const MonoTime answered = clock_.monotonic();
  if (!read.ok()) {
    note_error(read.error());
    log::warn("cannot read lock documents",
              {{"lock", ranges.front().key.id()}, {"error", read.error().describe()}});
    return;
  }
  backend_available_.store(true);
  for (std::size_t n = 0; n < which.size() && n < read->size(); ++n) {
    std::vector<LockTable::Handle>& slots = entries[which[n]];
    for (std::size_t k = 0; k < slots.size() && k < (*read)[n].size(); ++k)
      if (!slots[k]->known()) slots[k]->read_answer(std::move((*read)[n][k]), answered);
  }
}

std::vector<std::int64_t> Reconciler::slots_to_take(const Group& group) const {
  std::vector<std::int64_t> slots;
  slots.reserve(group.keys.size());
  for (std::size_t i = 0; i < group.keys.size(); ++i)
    slots.push_back(std::max(group.shapes[i].capacity, table_.slots_in_use(group.keys[i].id())));
  return slots;
}

Reconciler::Entries Reconciler::take(const Group& group) {
  std::vector<std::int64_t> slots = slots_to_take(group);
  Entries entries = table_.lock_all(group.keys, slots);
  read_unknown(group, entries);
  // A document stating a larger capacity (a direct-mode holder's, one left from an earlier
  // capacity) has holders on slots beside it: those are read and decided on too, all taken
  // again in the one order.
  bool larger = false;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (const LockTable::Handle& entry : entries[i]) {
      if (entry->known() && entry->document() && entry->document()->doc.capacity > slots[i]) {
        slots[i] = std::min(entry->document()->doc.capacity, api::kMaxCapacity);
        larger = true;
      }
    }
  }
  if (!larger) return entries;
  entries.clear();
  entries = table_.lock_all(group.keys, slots);
  read_unknown(group, entries);
  return entries;
}

void Reconciler::catch_up(const Group& group, Entries& entries) {
  bool behind = false;
  for (const LeaseRecord& lease : group.claims) {
    const std::optional<std::int64_t> shown = parse_fencing_token(lease.status.fencing_token);
    if (lease.status.phase != Phase::kHeld || lease.being_deleted || !shown) continue;
    std::int64_t known = 0;  // the latest token of the claim's locks' documents we know
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (!lease.spec.claims_lock(group.keys[i].name())) continue;
      for (const LockTable::Handle& entry : entries[i])
        if (entry->known() && entry->document()) known = std::max(known, entry->document()->token);
    }
    if (*shown <= known || !leases_.written_by_another(lease)) continue;
    std::lock_guard lock(caught_up_mutex_);
    auto [checked, first] = caught_up_.try_emplace(lease.meta.uid, lease.meta.resource_version);
    if (!first && checked->second == lease.meta.resource_version) continue;
    checked->second = lease.meta.resource_version;
    behind = true;
  }
  if (!behind) return;
  for (auto& slots : entries)
    for (LockTable::Handle& entry : slots) entry->outcome_unknown();
  read_unknown(group, entries);
}

std::vector<lock::LockKey> Reconciler::unseen_locks(const Group& group, const Entries& entries) const {
  std::set<std::string> known;
  for (const lock::LockKey& key : group.keys) known.insert(key.id());
  std::vector<lock::LockKey> unseen;
  for (const auto& slots : entries) {
    for (const LockTable::Handle& entry : slots) {
      if (!entry->document()) continue;
      for (const std::string& id : entry->document()->doc.grant_docs) {
        const std::string lock_id = id.substr(0, id.find('#'));
        if (!known.insert(lock_id).second) continue;
        auto key = lock::parse_lock_id(lock_id);
        if (key.ok() && key->ns() == group.keys.front().ns()) unseen.push_back(*key);
      }
    }
  }
  return unseen;
}

// Every pod a claim names or selects, and the grants' holders.
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
    if (slash != std::string::npos && holder.substr(0, slash) == world.ns &&
        !world.pods.contains(name_of(holder))) {
      if (auto pod = cluster_.pod(holder)) add_pod(*pod);
    }
  }
}

std::vector<GrantView> Reconciler::grants_on(const LockWorld& world, const Group& group,
                                             const Entries& entries) const {
  std::vector<GrantView> grants;
  std::map<std::string, std::size_t> by_grant;  // a grant of several documents: its id -> index
  std::vector<bool> any_renewing;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    for (const LockTable::Handle& entry : entries[i]) {
      if (!entry->known() || !entry->document()) continue;
      GrantView view;
      view.state = *entry->document();
      view.slots = {SlotRef{group.keys[i].name(), entry->slot()}};
      view.expires_at = entry->expires_at();
      view.renewing = entry->renewing();
      view.revoked = entry->revoked();
      const lock::LockDocument& doc = view.state.doc;
      view.holder_seen_gone = tracker_.saw_gone(doc.holder, doc.holder_uid);
      const std::string& id = doc.grant;
      auto known = id.empty() ? by_grant.end() : by_grant.find(id);
      if (known == by_grant.end()) {
        if (!id.empty()) by_grant[id] = grants.size();
        any_renewing.push_back(view.renewing);
        grants.push_back(std::move(view));
        continue;
      }
      merge_document(grants[known->second], view);
      any_renewing[known->second] = any_renewing[known->second] || view.renewing;
    }
  }
  for (std::size_t n = 0; n < grants.size(); ++n) {
    GrantView& grant = grants[n];
    std::sort(grant.slots.begin(), grant.slots.end());
    const lock::LockDocument& doc = grant.state.doc;
    // Fewer documents than it was written with, not all renewed, or part revoked, while we
    // renew some of it: the rest is no longer ours to renew, and the grant is over.
    const bool missing = doc.grant_docs.size() > grant.slots.size();
    grant.broken = any_renewing[n] && (!grant.renewing || missing || grant.revoked);
    // A Lease that still exists but claims other locks now.
    const bool claims_here = std::any_of(world.claims.begin(), world.claims.end(),
                                         [&](const LeaseRecord& l) { return l.meta.uid == doc.lease_uid; });
    if (!claims_here && !doc.lease.empty()) {
      if (auto owner = cluster_.lease(doc.lease); owner && owner->meta.uid == doc.lease_uid)
        grant.owner_moved = true;
    }
  }
  return grants;
}

LockWorld Reconciler::gather(const Group& group, const Entries& entries,
                             const std::vector<RecentGrant>& recent) const {
  LockWorld world;
  world.ns = group.keys.front().ns();
  world.locks = group.shapes;
  world.claims = group.claims;
  world.now = lock::to_millis(clock_.now());
  world.mono = clock_.monotonic();
  world.liveness_takeover = options_.liveness_takeover;
  world.backend_available = backend_available_.load();
  world.recent_grants = recent;
  std::vector<std::string> holders;
  for (const auto& slots : entries) {
    for (const LockTable::Handle& entry : slots) {
      if (!entry->known()) world.documents_known = false;
      if (!entry->malformed().empty()) world.malformed_document = entry->malformed();
      if (entry->known() && entry->document()) holders.push_back(entry->document()->doc.holder);
    }
  }
  gather_pods(world, holders);
  world.grants = grants_on(world, group, entries);
  return world;
}

std::vector<LockEntry*> Reconciler::entries_of(const Group& group, Entries& entries,
                                               const std::vector<SlotRef>& slots) const {
  std::vector<LockEntry*> out;
  for (const SlotRef& ref : slots) {
    for (std::size_t i = 0; i < group.keys.size(); ++i) {
      if (group.keys[i].name() != ref.lock) continue;
      if (ref.slot >= 0 && static_cast<std::size_t>(ref.slot) < entries[i].size())
        out.push_back(&*entries[i][static_cast<std::size_t>(ref.slot)]);
    }
  }
  return out;
}

bool Reconciler::run_steps(const Group& group, Entries& entries, LockWorld& world, Decision& decision,
                           ReconcileOutcome& outcome, std::stop_token stop) {
  std::size_t documents = 0;
  for (const auto& slots : entries) documents += slots.size();
  // One step per grant at most, twice over (a release, then a grant of its slots).
  const int max_steps = kMaxSteps + 2 * static_cast<int>(documents);
  const std::string lock_id = group.keys.front().id();
  std::vector<RecentGrant> recent;
  for (int step = 0;; ++step) {
    // What a write left unknown is read before deciding again (take() read the rest: a read
    // that failed there is not repeated against a backend that just failed it).
    if (step > 0) read_unknown(group, entries);
    world = gather(group, entries, recent);
    decision = decide(world);
    if (decision.action == Action::kNone) return true;
    if (step == max_steps) {
      // The documents kept moving under us: nothing is projected from a world that is
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
    Status done = carry_out(group, entries, decision, world, recent);
    if (!done.ok()) {
      note_error(done.error());
      // Read before the next decision.
      const std::vector<SlotRef>& concerned =
          decision.action == Action::kGrant ? decision.grant.slots : decision.subject;
      for (LockEntry* entry : entries_of(group, entries, concerned)) entry->outcome_unknown();
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
  LockWorld world;
  Decision decision;
  std::vector<lock::LockKey> more;  // locks a grant's documents link to the group
  for (int regroup = 0;; ++regroup) {
    // A lock set's grant is judged whole or not at all: a group that still misses some of
    // what it must judge after its regroups is not decided now, but again shortly.
    auto unsettled = [&](const std::string& why) {
      outcome.status =
          make_error(ErrorCode::kUnsettled, "lock " + lock_id + ": " + why + "; decided again shortly");
      return outcome;
    };
    Group group = group_of(*key, more);
    const ReconcileGates::Passage passage = gates_.enter(group.ids());
    if (passage.waited()) {
      // Another reconcile of these locks went first and may have written their claims'
      // statuses: read the claims again, or this one would project older statuses over them.
      Group now = group_of(*key, more);
      if (now.ids() != group.ids()) {
        if (regroup < kMaxRegroups) continue;  // enter the gates of the group it is now
        return unsettled("the locks its claims link kept changing");
      }
      group = std::move(now);
    }
    {
      Entries entries = take(group);
      std::vector<lock::LockKey> unseen = unseen_locks(group, entries);
      if (!unseen.empty()) {
        if (regroup >= kMaxRegroups) return unsettled("a grant reaches locks the group kept missing");
        // A grant of ours reaches locks no claim links here: it is judged whole, with them.
        more.insert(more.end(), unseen.begin(), unseen.end());
        continue;
      }
      catch_up(group, entries);
      if (!run_steps(group, entries, world, decision, outcome, stop)) return outcome;
      if (!world.documents_known && outcome.status.ok())
        outcome.status =
            make_error(ErrorCode::kUnavailable, "lock documents of " + lock_id + " could not be read");
      // Slots above the capacity (left from an earlier one) go once empty; all of a lock's with no claim.
      for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string& name = group.keys[i].name();
        const bool claimed = std::any_of(group.claims.begin(), group.claims.end(),
                                         [&](const LeaseRecord& l) { return l.spec.claims_lock(name); });
        for (LockTable::Handle& entry : entries[i])
          if (!claimed || entry->slot() >= group.shapes[i].capacity) entry.drop_when_idle();
      }
    }
    if (stop.stop_requested()) return outcome;
    outcome.requeue_at = decision.requeue_at;
    Status written = write_to_cluster(world, decision, outcome.requeue_at);
    if (outcome.status.ok() && !written.ok()) outcome.status = written;
    return outcome;
  }
}

}  // namespace eslease::controller
