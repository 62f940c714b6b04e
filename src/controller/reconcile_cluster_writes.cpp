// The reconcile's writes to the cluster: Lease statuses and finalizers, the holders' pods
// (holds annotation and holder label), and events.
#include <algorithm>
#include <set>

#include "controller/reconciler.h"

namespace eslease::controller {
namespace {

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

// The locks with a grant whose status did not go out: their later grants wait for it, so a
// watcher never sees a lock's tokens go down (the reconcile is retried).
class HeldBack {
 public:
  bool holds_back(const LeaseRecord& lease) const {
    const std::vector<std::string> ids = lease.lock_ids();
    return std::any_of(ids.begin(), ids.end(), [&](const std::string& id) { return locks_.contains(id); });
  }
  void add(const LeaseRecord& lease) {
    const std::vector<std::string> ids = lease.lock_ids();
    locks_.insert(ids.begin(), ids.end());
  }

 private:
  std::set<std::string> locks_;
};

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// One holder is recorded per lock in the claim index: the first grant's on it.
void record_holders(const LockWorld& world, ClaimIndex& index) {
  for (const LockShape& lock : world.locks) {
    const GrantView* holder = nullptr;
    for (const GrantView& grant : world.grants)
      if (!holder && std::any_of(grant.slots.begin(), grant.slots.end(),
                                 [&](const SlotRef& ref) { return ref.lock == lock.name; }))
        holder = &grant;
    index.set_holder(object_key(world.ns, lock.name), holder ? holder->state.doc.holder : "");
  }
}

}  // namespace

Result<WriteOutcome> Reconciler::update_holds(const LockWorld& world,
                                              const std::map<std::string, LeaseStatus>& statuses) {
  // The annotation is kept per lock, each Lease's under the lock it is filed under (its first).
  Result<WriteOutcome> result = WriteOutcome::kSent;
  for (const LockShape& lock : world.locks) {
    Result<WriteOutcome> one = holds_.update(world, lock.name, statuses);
    if (result.ok() && (!one.ok() || *one == WriteOutcome::kDeferred)) result = one;
  }
  return result;
}

Status Reconciler::write_to_cluster(const LockWorld& world, const Decision& decision,
                                    std::optional<MonoTime>& retry_at) {
  Status result;
  bool deferred = false;  // a write was left for when the rate limit is free: not an error
  // Keeps the first error and notes a write left for later; true when the write went out.
  auto note = [&](const Result<WriteOutcome>& written) {
    if (!written.ok() && result.ok()) result = written.error();
    deferred = deferred ||
               (written.ok() && (*written == WriteOutcome::kDeferred || *written == WriteOutcome::kConflict));
    return written.ok() && *written == WriteOutcome::kSent;
  };
  for (const LeaseRecord& lease : world.claims) {
    if (listed(decision.add_finalizer, lease.meta.name)) note(leases_.write_finalizer(lease, true));
    if (listed(decision.remove_finalizer, lease.meta.name)) note(leases_.write_finalizer(lease, false));
  }
  // Grants first: in a burst of hand-overs the successors are told before anyone else. An
  // event goes with its status: one whose status waits is planned again when that is retried.
  std::set<std::string> not_written;
  // Grants whose status met a newer version of the Lease (until decided again on it, another
  // replica's may stand) or waits: the holder pod is told what the Lease shows, not this grant.
  std::optional<std::map<std::string, LeaseStatus>> told;
  const std::vector<const LeaseRecord*> in_order = in_token_order(world, decision);
  HeldBack held_back;
  for (const bool grants : {true, false}) {
    for (const LeaseRecord* claim : in_order) {
      const LeaseRecord& lease = *claim;
      auto desired = decision.statuses.find(lease.meta.name);
      if (desired == decision.statuses.end() || grants_the_lock(lease.status, desired->second) != grants)
        continue;
      const Urgency urgency = status_write_urgency(
          lease.status, desired->second, shown_holder_health(world, lease).health == Health::kConfirmedDead);
      const Result<WriteOutcome> written =
          grants && held_back.holds_back(lease)
              ? Result<WriteOutcome>(WriteOutcome::kDeferred)
              : leases_.write_status(lease, desired->second, urgency, world.mono, retry_at);
      const bool waits =
          written.ok() && (*written == WriteOutcome::kDeferred || *written == WriteOutcome::kConflict ||
                           *written == WriteOutcome::kPaced);
      if (!written.ok() || waits) {
        not_written.insert(lease.meta.name);
        if (grants) held_back.add(lease);
      }
      if (grants && waits) {
        if (!told) told = decision.statuses;
        (*told)[lease.meta.name] = lease.status;
      }
      // Counted with the write that shows it, so a claim is counted once, whoever leads. A
      // try-lock (acquireTimeoutSeconds 0) that finds the lock taken did not give up waiting:
      // skipping is what it asked for, and no alert should fire on it.
      if (note(written) && desired->second.phase == Phase::kTimedOut &&
          lease.status.phase != Phase::kTimedOut && lease.spec.acquire_timeout_seconds != 0)
        observer_.claim_timed_out(to_string(lease.spec.priority));
    }
  }
  record_events(world, decision, not_written);
  if (options_.holds_annotation) note(update_holds(world, told ? *told : decision.statuses));
  if (world.documents_known) record_holders(world, index_);
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
