// The decision for a lock of capacity above 1 (the design's "Lock shapes"): a slot document
// per holder, Shared claims side by side, an Exclusive claim on every slot. Each grant on the
// lock is judged by the grant rules of a single holder, with the grant in focus as the world's
// `document`; who gets the slots that are free (or whose grant ends now) is decided once for
// all claims by the one queueing rule (slot_allocation.h). One action per step, in this order:
// a grant's own action (revoke, adopt), a grant to the next claim served (written over the
// documents of grants that end), then the release of an ended grant nobody takes.
#include <algorithm>

#include "controller/decision_steps.h"
#include "controller/slot_allocation.h"
#include "controller/status_projection.h"

namespace eslease::controller {
namespace {

// What the grant rules say of one grant on the lock.
struct GrantVerdict {
  const DocumentView* grant = nullptr;
  ActionPlan plan;
  // Its slots may go to the next claims now: its holder is gone or let go, or it expired.
  bool ends_now() const { return plan.ends_now || plan.action == Action::kRelease; }
};

const ClaimView* owner_of(const ClaimQueue& queue, const LockWorld& world, const DocumentView& grant) {
  const lock::LockDocument& doc = grant.state.doc;
  for (const ClaimView& c : queue.claims)
    if (c.lease->meta.uid == doc.lease_uid && object_key(world.ns, c.lease->meta.name) == doc.lease)
      return &c;
  return nullptr;
}

ActionPlan revoke_broken(const DocumentView& grant) {
  ActionPlan plan;
  plan.rule = "revoke_a_broken_grant";
  plan.action = Action::kRevoke;
  plan.reason = api::Reason::kRenewalFailed;
  plan.message = "another writer replaced part of the grant to " + name_of(grant.state.doc.holder);
  return plan;
}

// Unless the decision may act, every grant stays as it is.
std::vector<GrantVerdict> judge_grants(LockWorld& focus, ClaimQueue& queue, bool act) {
  std::vector<GrantVerdict> verdicts;
  for (const DocumentView& grant : focus.grants) {
    if (!act) {
      verdicts.push_back({&grant, {}});
      continue;
    }
    focus.document = grant;
    queue.owner = owner_of(queue, focus, grant);
    const bool broken = grant.broken && grant.renewing && !grant.revoked;
    verdicts.push_back({&grant, broken ? revoke_broken(grant) : decide_action(focus, queue)});
  }
  focus.document.reset();
  queue.owner = nullptr;
  return verdicts;
}

// The lock's slots as the allocation sees them: a grant that ends now leaves its slots free.
LockOccupancy occupancy(const LockWorld& world, const std::vector<GrantVerdict>& verdicts) {
  LockOccupancy lock{world.lock_name, std::vector<std::optional<SlotHolder>>(world.capacity)};
  for (const GrantVerdict& v : verdicts) {
    if (v.ends_now()) continue;
    const lock::LockDocument& doc = v.grant->state.doc;
    const std::string holder = doc.lease_uid.empty() ? "foreign:" + doc.holder : doc.lease_uid;
    for (const std::int64_t k : v.grant->slots)
      if (k >= 0 && k < world.capacity)
        lock.slots[static_cast<std::size_t>(k)] = SlotHolder{holder, doc.access};
  }
  return lock;
}

// The claims waiting for slots. One whose revoked grant is still on the lock waits until
// that grant has ended: a claim holds one grant at a time.
std::vector<SlotClaim> slot_claims(const LockWorld& world, const ClaimQueue& queue,
                                   const std::vector<GrantVerdict>& verdicts) {
  std::vector<SlotClaim> claims;
  for (const ClaimView& c : queue.claims) {
    const bool still_on_the_lock = std::any_of(verdicts.begin(), verdicts.end(), [&](const GrantVerdict& v) {
      return !v.ends_now() && v.grant->state.doc.lease_uid == c.lease->meta.uid;
    });
    if (!c.waiting || still_on_the_lock) continue;
    const LeaseSpec& spec = c.lease->spec;
    claims.push_back(SlotClaim{c.lease->meta.name,
                               {world.lock_name},
                               spec.access,
                               ClaimRank{spec.priority, c.waiting_since, c.lease->creation_time},
                               true,
                               c.pod != nullptr});
  }
  return claims;
}

const ClaimView* claim_named(const ClaimQueue& queue, const std::string& name) {
  for (const ClaimView& c : queue.claims)
    if (c.lease->meta.name == name) return &c;
  return nullptr;
}

// The grant the allocation serves first, written over the documents of grants that end.
void plan_slot_grant(const SlotGrant& served, const ClaimView& claim,
                     const std::vector<GrantVerdict>& verdicts, Decision& d) {
  GrantPlan& g = d.grant;
  grant_to(*claim.lease, claim.pod->record, claim.waiting_since, g);
  for (const SlotRef& slot : served.slots) g.slots.push_back(slot.slot);
  d.action = Action::kAcquire;
  d.rule = "serve_the_next_claims";
  d.action_message = "grant " + std::to_string(g.slots.size()) + " slot(s) to " + g.lease;
  for (const GrantVerdict& v : verdicts) {
    const bool replaced = std::any_of(v.grant->slots.begin(), v.grant->slots.end(), [&](std::int64_t k) {
      return std::find(g.slots.begin(), g.slots.end(), k) != g.slots.end();
    });
    if (!replaced || !v.ends_now()) continue;
    d.action = Action::kTakeOver;
    // A grant its holder let go of is released, not taken over: only a hand-over (a dead or
    // expired holder) is the new grant's status.lastTakeover.
    if (!v.plan.ends_now) return;
    g.takeover_reason = v.plan.reason;
    g.from_pod = v.plan.from_pod;
    g.dead_seen_at = v.plan.dead_seen_at;
    return;
  }
}

// A grant's own action (revoke, adopt, or with nobody to serve, the release of one that
// ended), as the step's action.
void plan_grant_action(const GrantVerdict& v, Decision& d) {
  carry_plan(v.plan, d);
  d.slots = v.grant->slots;
}

}  // namespace

Decision decide_shaped(const LockWorld& world) {
  Decision d;
  LockWorld focus = world;  // its `document` moves from grant to grant
  focus.document.reset();
  ClaimQueue queue = classify_claims(focus);
  queue.successors_by_allocation = true;
  requeue(d, queue.next_timeout);
  if (!world.document_known) {
    keep_statuses(focus, queue, d);
    return d;
  }
  const bool act = world.act && world.malformed_document.empty();
  const std::vector<GrantVerdict> verdicts = judge_grants(focus, queue, act);
  for (const GrantVerdict& v : verdicts) {
    requeue(d, v.plan.wake_at);
    if (v.plan.action == Action::kRevoke || v.plan.action == Action::kAdopt) {
      plan_grant_action(v, d);
      break;
    }
  }
  // A grant beyond the capacity (left from an earlier one, or a direct-mode holder stating
  // another) has holders the slots below cannot account for: nothing is granted until it ends.
  const bool beyond_capacity = std::any_of(verdicts.begin(), verdicts.end(), [&](const GrantVerdict& v) {
    return !v.ends_now() && std::any_of(v.grant->slots.begin(), v.grant->slots.end(),
                                        [&](std::int64_t k) { return k >= world.capacity; });
  });
  std::map<std::string, std::int64_t> positions;
  if (d.action == Action::kNone) {
    auto allocation = allocate_slots({occupancy(world, verdicts)}, slot_claims(world, queue, verdicts));
    if (allocation.ok()) {
      const bool serve = act && !beyond_capacity && !allocation->grants.empty();
      const ClaimView* next = serve ? claim_named(queue, allocation->grants.front().claim) : nullptr;
      if (next) plan_slot_grant(allocation->grants.front(), *next, verdicts, d);
      for (const QueueStanding& standing : allocation->waiting)
        if (standing.position) positions[standing.claim] = *standing.position;
    }
  }
  for (const GrantVerdict& v : verdicts) {
    if (d.action != Action::kNone) break;
    if (v.plan.action == Action::kRelease) plan_grant_action(v, d);
  }
  if (d.action == Action::kNone) project_shaped_statuses(focus, queue, positions, d);
  plan_finalizers(world, queue, d);
  return d;
}

}  // namespace eslease::controller
