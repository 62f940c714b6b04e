// The decision for a shaped world (the design's "Lock shapes"): locks of capacity above 1,
// with a slot document per holder, Shared claims side by side and an Exclusive claim on every
// slot; and lock sets, whose locks (with every lock other sets link to them) are decided
// together, so a set is granted whole or not at all. Each grant on the locks is judged by the
// grant rules of a single holder, with the grant in focus as the world's `document`; who gets
// the slots that are free (or whose grant ends now) is decided once for all claims by the one
// queueing rule (slot_allocation.h). One action per step, in this order: a grant's own action
// (revoke, adopt), a grant to the next claim served (written over the documents of grants
// that end), then the release of an ended grant nobody takes.
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
    GrantVerdict verdict{&grant, decide_action(focus, queue)};
    // A grant that ends now anyway (its holder is gone) is handed over as it is; else a broken
    // one, part of it replaced, is revoked.
    if (!verdict.ends_now() && grant.broken && grant.renewing && !grant.revoked)
      verdict.plan = revoke_broken(grant);
    verdicts.push_back(verdict);
  }
  focus.document.reset();
  queue.owner = nullptr;
  return verdicts;
}

// Every lock's slots as the allocation sees them: a grant that ends now leaves its slots free.
std::vector<LockOccupancy> occupancy(const LockWorld& world, const std::vector<GrantVerdict>& verdicts) {
  std::vector<LockOccupancy> locks;
  for (const LockShape& shape : shaped_locks(world))
    locks.push_back(LockOccupancy{shape.name, std::vector<std::optional<SlotHolder>>(shape.capacity)});
  for (const GrantVerdict& v : verdicts) {
    if (v.ends_now()) continue;
    const lock::LockDocument& doc = v.grant->state.doc;
    const std::string holder = doc.lease_uid.empty() ? "foreign:" + doc.holder : doc.lease_uid;
    for (const SlotRef& ref : v.grant->slots) {
      auto lock = std::find_if(locks.begin(), locks.end(),
                               [&](const LockOccupancy& l) { return l.name == ref.lock; });
      if (lock != locks.end() && ref.slot >= 0 && ref.slot < static_cast<std::int64_t>(lock->slots.size()))
        lock->slots[static_cast<std::size_t>(ref.slot)] = SlotHolder{holder, doc.access};
    }
  }
  return locks;
}

// The claims waiting for slots. One whose revoked grant is still on a lock waits until that
// grant has ended: a claim holds one grant at a time. A claim naming a lock this world does
// not decide (a set that joined it since it was gathered) waits for the reconcile its
// change brings.
std::vector<SlotClaim> slot_claims(const LockWorld& world, const ClaimQueue& queue,
                                   const std::vector<GrantVerdict>& verdicts) {
  std::vector<SlotClaim> claims;
  const std::vector<LockShape> locks = shaped_locks(world);
  auto decided_here = [&](const std::string& name) {
    return std::any_of(locks.begin(), locks.end(), [&](const LockShape& l) { return l.name == name; });
  };
  for (const ClaimView& c : queue.claims) {
    const bool still_on_the_lock = std::any_of(verdicts.begin(), verdicts.end(), [&](const GrantVerdict& v) {
      return !v.ends_now() && v.grant->state.doc.lease_uid == c.lease->meta.uid;
    });
    const LeaseSpec& spec = c.lease->spec;
    const std::vector<std::string> needs = spec.locks();
    if (!c.waiting || still_on_the_lock || !std::all_of(needs.begin(), needs.end(), decided_here)) continue;
    claims.push_back(SlotClaim{c.lease->meta.name, needs, spec.access,
                               ClaimRank{spec.priority, c.waiting_since, c.lease->creation_time}, true,
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
  g.slots = served.slots;
  d.action = Action::kAcquire;
  d.rule = "serve_the_next_claims";
  d.action_message = "grant " + std::to_string(g.slots.size()) + " slot(s) to " + g.lease;
  for (const GrantVerdict& v : verdicts) {
    const bool replaced = std::any_of(v.grant->slots.begin(), v.grant->slots.end(), [&](const SlotRef& ref) {
      return std::find(g.slots.begin(), g.slots.end(), ref) != g.slots.end();
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
    return !v.ends_now() &&
           std::any_of(v.grant->slots.begin(), v.grant->slots.end(),
                       [&](const SlotRef& ref) { return ref.slot >= capacity_of(world, ref.lock); });
  });
  std::map<std::string, std::int64_t> positions;
  if (d.action == Action::kNone) {
    auto allocation = allocate_slots(occupancy(world, verdicts), slot_claims(world, queue, verdicts));
    if (allocation.ok()) {
      const bool serve = act && !beyond_capacity && !allocation->grants.empty();
      const ClaimView* next = serve ? claim_named(queue, allocation->grants.front().claim) : nullptr;
      if (next) plan_slot_grant(allocation->grants.front(), *next, verdicts, d);
      for (const QueueStanding& standing : allocation->waiting)
        if (standing.position) positions[standing.claim] = *standing.position;
      if (!next)  // not served in this decision (a write failed, a grant beyond the capacity): next in line
        for (const SlotGrant& grant : allocation->grants) positions[grant.claim] = 0;
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
