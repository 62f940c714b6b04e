#include "controller/decision.h"

#include <algorithm>
#include <utility>

#include "controller/claim_queue.h"
#include "controller/grant_rules.h"
#include "controller/slot_allocation.h"
#include "controller/status_projection.h"

namespace eslease::controller {
namespace {

// One grant on the locks, its claim, and what the grant rules say of it.
struct Judged {
  const GrantView* grant = nullptr;
  const ClaimView* owner = nullptr;
  GrantVerdict verdict;
};

void requeue(Decision& d, std::optional<MonoTime> at) {
  if (at && (!d.requeue_at || *at < *d.requeue_at)) d.requeue_at = at;
}

// Unless the decision may act, every grant stays as it is.
std::vector<Judged> judge_grants(const LockWorld& world, const ClaimQueue& queue, bool act) {
  std::vector<Judged> judged;
  judged.reserve(world.grants.size());
  for (const GrantView& grant : world.grants) {
    const ClaimView* owner = queue.owner_of(world, grant);
    judged.push_back(Judged{&grant, owner, act ? judge_grant(world, grant, owner) : GrantVerdict{}});
  }
  return judged;
}

const Judged* judged_grant(const std::vector<Judged>& judged, const GrantView* grant) {
  for (const Judged& j : judged)
    if (j.grant == grant) return &j;
  return nullptr;
}

// Who holds a taken slot, as the allocation tells holders apart.
SlotHolder holder_of(const GrantView& grant) {
  const lock::LockDocument& doc = grant.state.doc;
  return SlotHolder{doc.lease_uid.empty() ? "foreign:" + doc.holder : doc.lease_uid,
                    api::effective_access(doc.capacity, doc.access)};
}

// A claim granted again in a new shape while its old grant still runs (revoked, to the same
// pod): the slots of the old grant it may take.
struct Reshape {
  std::string claim;
  lock::Access access = lock::Access::kExclusive;  // the new shape's
};
using Reshapes = std::map<const GrantView*, Reshape>;  // by the old grant

// Every lock's slots as the allocation sees them: a grant that ends now leaves its slots free.
// An Exclusive grant was given its locks alone: slots a capacity raised since then added are
// its too, until it ends (its holder may act alone until then). A grant being reshaped lends
// its slots to its claim; but an Exclusive one re-granted Shared keeps its last document on
// each lock until it ends, so that, with the slots it fills, nobody else is served there before.
std::vector<LockOccupancy> occupancy(const LockWorld& world, const std::vector<Judged>& judged,
                                     const Reshapes& reshapes) {
  std::vector<LockOccupancy> locks;
  locks.reserve(world.locks.size());
  for (const LockShape& shape : world.locks)
    locks.push_back(LockOccupancy{shape.name, std::vector<std::optional<SlotHolder>>(shape.capacity)});
  const auto lock_of = [&](const SlotRef& ref) {
    auto lock =
        std::find_if(locks.begin(), locks.end(), [&](const LockOccupancy& l) { return l.name == ref.lock; });
    return lock == locks.end() ? nullptr : &*lock;
  };
  std::vector<std::pair<const GrantView*, SlotHolder>> exclusive;  // filled in once every slot is placed
  for (const Judged& j : judged) {
    if (j.verdict.ends_now) continue;
    SlotHolder holder = holder_of(*j.grant);
    const auto reshape = reshapes.find(j.grant);
    if (reshape != reshapes.end()) holder.reusable_by = reshape->second.claim;
    const bool keeps_a_document = reshape != reshapes.end() && holder.access == lock::Access::kExclusive &&
                                  reshape->second.access == lock::Access::kShared;
    std::map<LockOccupancy*, std::size_t> last_document;  // only when it keeps one
    for (const SlotRef& ref : j.grant->slots) {
      LockOccupancy* lock = lock_of(ref);
      if (!lock || ref.slot < 0 || ref.slot >= static_cast<std::int64_t>(lock->slots.size())) continue;
      lock->slots[static_cast<std::size_t>(ref.slot)] = holder;
      if (!keeps_a_document) continue;
      std::size_t& last = last_document[lock];
      last = std::max(last, static_cast<std::size_t>(ref.slot));
    }
    for (const auto& [lock, slot] : last_document) lock->slots[slot]->reusable_by.clear();
    if (holder.access == lock::Access::kExclusive) exclusive.emplace_back(j.grant, std::move(holder));
  }
  for (const auto& [grant, holder] : exclusive)
    for (const SlotRef& ref : grant->slots)
      if (LockOccupancy* lock = lock_of(ref))
        for (std::optional<SlotHolder>& slot : lock->slots)
          if (!slot) slot = holder;
  return locks;
}

bool reshaping(const Reshapes& reshapes, const std::string& claim) {
  return std::any_of(reshapes.begin(), reshapes.end(),
                     [&](const auto& r) { return r.second.claim == claim; });
}

// A grant beyond a lock's capacity (left from an earlier one, or a direct-mode holder stating
// another) has holders the slots below cannot account for: nothing is granted until it ends,
// but to its own claim in a new shape (`served`), which adds no holder.
bool beyond_capacity(const LockWorld& world, const std::vector<Judged>& judged, const Reshapes& reshapes,
                     const std::string& served) {
  return std::any_of(judged.begin(), judged.end(), [&](const Judged& j) {
    const auto reshape = reshapes.find(j.grant);
    return !j.verdict.ends_now && (reshape == reshapes.end() || reshape->second.claim != served) &&
           std::any_of(j.grant->slots.begin(), j.grant->slots.end(),
                       [&](const SlotRef& ref) { return ref.slot >= world.capacity_of(ref.lock); });
  });
}

// Whether `grant` was revoked only because its claim changed shape (access, capacity): the
// claim still names the pod holding it and the locks it is on.
bool reshaped(const GrantView& grant, const ClaimView& claim) {
  return grant.revoked == api::Reason::kClaimMoved && claim.pod &&
         claim.pod->record.meta.uid == grant.state.doc.holder_uid && claims_the_locks_of(*claim.lease, grant);
}

// The claims to serve, with the pod each would be granted to. Waiting claims stand by their
// rank. A claim whose grant ends now stands again: an election claim fails over to another of
// its pods before anyone else is served; any other claim-mode claim queues again from now,
// behind those already waiting. A claim whose grant was revoked because its shape changed
// stands at once, before anyone else, for its pod that still holds: it may take the slots of
// its old grant (Reshapes). A claim whose earlier grant is still on the locks for any other
// reason (revoked, not ended) waits until that grant has ended: the pod it held for may still
// act on it. A claim naming a lock this world does not decide (a set that joined it since it
// was gathered) waits for the reconcile its change brings.
struct Candidates {
  std::vector<SlotClaim> claims;
  std::map<std::string, const PodState*> pods;  // by claim
  Reshapes reshapes;
};

Candidates candidates(const LockWorld& world, const ClaimQueue& queue, const std::vector<Judged>& judged) {
  Candidates out;
  for (const ClaimView& c : queue.claims) {
    const LeaseSpec& spec = c.lease->spec;
    const std::vector<std::string> needs = spec.locks();
    if (!std::all_of(needs.begin(), needs.end(), [&](const std::string& name) { return world.lock(name); }))
      continue;
    ClaimRank rank{false, spec.priority, c.waiting_since, c.lease->creation_time};
    const PodState* pod = c.pod;
    const lock::Access access = spec.effective_access();
    if (!c.waiting()) {
      const Judged* own = c.grant ? judged_grant(judged, c.grant) : nullptr;
      if (!own || !c.eligible()) continue;
      const bool same_pod_new_shape = reshaped(*own->grant, c);
      if (!own->verdict.ends_now && !same_pod_new_shape) continue;
      if (spec.election_mode() || same_pod_new_shape) {
        rank.fails_over = true;
        if (!same_pod_new_shape) pod = election_pod(world, *c.lease, own->grant->state.doc.holder_uid);
      } else {
        rank.waiting_since = world.now;
      }
      if (same_pod_new_shape && !own->verdict.ends_now)
        out.reshapes[own->grant] = Reshape{c.lease->meta.name, access};
    }
    out.claims.push_back(
        SlotClaim{c.lease->meta.name, needs, access, rank, true, pod != nullptr, !c.try_lock});
    out.pods[c.lease->meta.name] = pod;
  }
  return out;
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
  g.access = lease.spec.effective_access();
}

// The grant the allocation serves first, written over the documents of grants that end.
void plan_grant(const SlotGrant& served, const ClaimView& claim, const PodState& pod,
                const std::vector<Judged>& judged, Decision& d) {
  GrantPlan& g = d.grant;
  grant_to(*claim.lease, pod.record, claim.waiting_since, g);
  g.slots = served.slots;
  d.action = Action::kGrant;
  d.rule = "serve_the_next_claims";
  d.action_message = "grant " + std::to_string(g.slots.size()) + " slot(s) to " + g.lease;
  for (const Judged& j : judged) {
    if (!j.verdict.ends_now || !j.verdict.handed_over || !share_a_slot(j.grant->slots, g.slots)) continue;
    // A hand-over (a dead or expired holder) is the new grant's status.lastTakeover; a grant
    // its holder let go of is simply written over.
    g.takeover_reason = j.verdict.reason;
    g.from_pod = j.verdict.from_pod;
    g.dead_seen_at = j.verdict.dead_seen_at;
    d.action_message = j.verdict.message + "; " + d.action_message;
    return;
  }
}

// A grant's own action (revoke, adopt, or with nobody to serve, the release of one that
// ended), as the step's action.
void plan_grant_action(const Judged& j, Decision& d) {
  d.action = j.verdict.action;
  d.rule = j.verdict.rule;
  d.subject = j.grant->slots;
  d.action_reason = j.verdict.reason;
  d.action_message = j.verdict.message;
}

// Only a claim that has a grant has something to release when it is deleted: the finalizer
// goes on with the grant. (A grant whose Lease vanishes before its finalizer is written is
// released from the controller's memory, or expires.)
void plan_finalizers(const LockWorld& world, const ClaimQueue& queue, Decision& d) {
  for (const ClaimView& c : queue.claims) {
    const LeaseRecord& lease = *c.lease;
    if (!lease.being_deleted && !lease.has_finalizer() && c.grant) d.add_finalizer.push_back(lease.meta.name);
    if (lease.being_deleted && lease.has_finalizer() && !c.grant && world.malformed_document.empty())
      d.remove_finalizer.push_back(lease.meta.name);
  }
}

}  // namespace

const LockShape* LockWorld::lock(const std::string& name) const {
  for (const LockShape& shape : locks)
    if (shape.name == name) return &shape;
  return nullptr;
}

std::int64_t LockWorld::capacity_of(const std::string& name) const {
  const LockShape* shape = lock(name);
  return shape ? shape->capacity : 1;
}

const GrantView* LockWorld::grant_on(const SlotRef& ref) const {
  for (const GrantView& grant : grants)
    if (std::find(grant.slots.begin(), grant.slots.end(), ref) != grant.slots.end()) return &grant;
  return nullptr;
}

const GrantView* LockWorld::grant_of(const LeaseRecord& lease) const {
  const GrantView* found = nullptr;
  for (const GrantView& grant : grants) {
    if (grant.state.doc.lease_uid != lease.meta.uid) continue;
    // An earlier grant may linger (revoked, expiring) beside a newer one: the newest counts.
    if (!found || grant.state.token > found->state.token) found = &grant;
  }
  return found;
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
    case Action::kGrant:
      return "grant";
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
  const WallTime queued = lease.status.queued_at.value_or(lease.arrived.value_or(lease.creation_time));
  const Condition* held = lease.status.condition(api::kConditionHeld);
  if (!held) return queued;
  return api::waiting_since(held->status, held->reason, held->last_transition_time, queued);
}

bool share_a_slot(const std::vector<SlotRef>& a, const std::vector<SlotRef>& b) {
  return std::find_first_of(a.begin(), a.end(), b.begin(), b.end()) != a.end();
}

Decision decide(const LockWorld& world) {
  Decision d;
  const ClaimQueue queue = classify_claims(world);
  requeue(d, queue.next_timeout);
  if (!world.documents_known) {
    // Elasticsearch could not be read: nothing is decided, and statuses keep what they
    // said, apart from the backend condition.
    keep_statuses(world, queue, d);
    return d;
  }
  const bool act = world.act && world.malformed_document.empty();
  const std::vector<Judged> judged = judge_grants(world, queue, act);
  for (const Judged& j : judged) requeue(d, j.verdict.wake_at);
  for (const Judged& j : judged) {
    if (j.verdict.action == Action::kRevoke || j.verdict.action == Action::kAdopt) {
      plan_grant_action(j, d);
      break;
    }
  }
  std::map<std::string, std::int64_t> positions;
  if (d.action == Action::kNone) {
    const Candidates served = candidates(world, queue, judged);
    auto allocation = allocate_slots(occupancy(world, judged, served.reshapes), served.claims);
    if (allocation.ok()) {
      const bool serve = act && !allocation->grants.empty() &&
                         !beyond_capacity(world, judged, served.reshapes, allocation->grants.front().claim);
      const ClaimView* next = serve ? queue.named(allocation->grants.front().claim) : nullptr;
      const PodState* pod = next ? served.pods.at(next->lease->meta.name) : nullptr;
      if (next && pod) plan_grant(allocation->grants.front(), *next, *pod, judged, d);
      if (d.action == Action::kGrant && reshaping(served.reshapes, d.grant.lease))
        d.grant.waiting_since = world.now;  // it never stopped holding: it did not wait
      for (const QueueStanding& standing : allocation->waiting)
        if (standing.position) positions[standing.claim] = *standing.position;
      if (d.action == Action::kNone)  // not served in this decision (a write failed, a grant beyond the
                                      // capacity): next in line
        for (const SlotGrant& grant : allocation->grants) positions[grant.claim] = 0;
    }
  }
  for (const Judged& j : judged) {
    if (d.action != Action::kNone) break;
    if (j.verdict.action == Action::kRelease) plan_grant_action(j, d);
  }
  if (d.action == Action::kNone) project_statuses(world, queue, positions, d);
  plan_finalizers(world, queue, d);
  return d;
}

}  // namespace eslease::controller
