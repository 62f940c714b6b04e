#include "controller/decision.h"

#include <algorithm>

#include "controller/claim_queue.h"
#include "controller/decision_steps.h"
#include "controller/grant_rules.h"
#include "controller/status_projection.h"

namespace eslease::controller {

void requeue(Decision& d, std::optional<MonoTime> at) {
  if (at && (!d.requeue_at || *at < *d.requeue_at)) d.requeue_at = at;
}

void carry_plan(const ActionPlan& plan, Decision& d) {
  d.action = plan.action;
  d.rule = plan.rule;
  d.action_message = plan.message;
  requeue(d, plan.wake_at);
  if (plan.action == Action::kRelease || plan.action == Action::kRevoke) d.action_reason = plan.reason;
  if (!plan.grant) return;
  GrantPlan& g = d.grant;
  grant_to(*plan.grant->claim->lease, plan.grant->pod->record, plan.grant->waiting_since, g);
  g.takeover_reason = plan.action == Action::kTakeOver ? plan.reason : std::nullopt;
  g.from_pod = plan.from_pod;
  g.dead_seen_at = plan.dead_seen_at;
}

std::vector<LockShape> shaped_locks(const LockWorld& world) {
  if (!world.locks.empty()) return world.locks;
  return {LockShape{world.lock_name, world.capacity}};
}

std::int64_t capacity_of(const LockWorld& world, const std::string& name) {
  if (world.locks.empty()) return name == world.lock_name ? world.capacity : 1;
  for (const LockShape& lock : world.locks)
    if (lock.name == name) return lock.capacity;
  return 1;
}

void grant_to(const LeaseRecord& lease, const PodRecord& pod, WallTime waiting_since, GrantPlan& g) {
  g.lease = lease.meta.name;
  g.lease_uid = lease.meta.uid;
  g.pod = pod.meta.name;
  g.pod_uid = pod.meta.uid;
  g.node = pod.node_name;
  g.priority = lease.spec.priority;
  g.ttl = api::lease_duration(lease.spec.lease_duration_seconds);
  g.waiting_since = waiting_since;
  g.access = lease.spec.access;
}

// Only a claim that holds the lock has something to release when it is deleted: the
// finalizer goes on with the grant. (A grant whose Lease vanishes before its finalizer is
// written is released from the controller's memory, or expires.)
void plan_finalizers(const LockWorld& world, const ClaimQueue& queue, Decision& d) {
  for (const ClaimView& c : queue.claims) {
    const LeaseRecord& lease = *c.lease;
    auto names = [&](const DocumentView& grant) { return grant.state.doc.lease_uid == lease.meta.uid; };
    const bool named_by_document = (world.document && names(*world.document)) ||
                                   std::any_of(world.grants.begin(), world.grants.end(), names);
    if (!lease.being_deleted && !lease.has_finalizer() && named_by_document)
      d.add_finalizer.push_back(lease.meta.name);
    if (lease.being_deleted && lease.has_finalizer() && !named_by_document &&
        world.malformed_document.empty())
      d.remove_finalizer.push_back(lease.meta.name);
  }
}

HolderHealth shown_holder_health(const LockWorld& world, const LeaseRecord& lease) {
  if (!lease.status.holder) return {};
  // For the status only: the cache's word is enough to say how the shown holder fares.
  return judge_holder(world.pod(lease.status.holder->pod_name), lease.status.holder->pod_uid,
                      /*seen_gone=*/true, 0, world.mono);
}

const char* to_string(Action action) {
  switch (action) {
    case Action::kNone:
      return "none";
    case Action::kAcquire:
      return "acquire";
    case Action::kTakeOver:
      return "take_over";
    case Action::kRelease:
      return "release";
    case Action::kRevoke:
      return "revoke";
    case Action::kAdopt:
      return "adopt";
  }
  return "unknown";
}

WallTime waiting_since(const LeaseRecord& lease) {
  const Condition* held = lease.status.condition(api::kConditionHeld);
  if (!held) return lease.creation_time;
  return api::waiting_since(held->status, held->reason, held->last_transition_time, lease.creation_time);
}

Decision decide(const LockWorld& world) {
  if (world.shaped) return decide_shaped(world);
  Decision d;
  const ClaimQueue queue = classify_claims(world);
  requeue(d, queue.next_timeout);
  if (!world.document_known) {
    // Elasticsearch could not be read: nothing is decided, and statuses keep what they
    // said, apart from the backend condition.
    keep_statuses(world, queue, d);
    return d;
  }
  if (world.act && world.malformed_document.empty()) carry_plan(decide_action(world, queue), d);
  if (d.action == Action::kNone) project_statuses(world, queue, d);
  plan_finalizers(world, queue, d);
  return d;
}

}  // namespace eslease::controller
