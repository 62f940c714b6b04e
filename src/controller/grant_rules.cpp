#include "controller/grant_rules.h"

#include <algorithm>
#include <array>

namespace eslease::controller {
namespace {

using api::Reason;

// The facts every rule reads, worked out once.
struct Situation {
  Situation(const LockWorld& w, const ClaimQueue& q) : world(w), queue(q) {}
  const LockWorld& world;
  const ClaimQueue& queue;
  const DocumentView* doc = nullptr;  // nullptr: the lock is free
  const ClaimView* owner = nullptr;   // the claim the document names
  std::string holder_pod;
  const PodState* holder = nullptr;  // the pod now named like the holder
  HolderHealth health;
  bool claimed = false;  // the owning claim still names the pod holding its grant
  std::optional<MonoTime> dead_seen;
  bool ours() const { return doc->renewing && !doc->revoked; }  // we renew it
};

// Does the owning claim still name the pod holding its grant?
bool owner_claims_holder(const Situation& s) {
  const LeaseRecord& lease = *s.owner->lease;
  if (!s.owner->invalid.empty() || lease.being_deleted) return false;
  if (!lease.spec.election_mode()) return lease.spec.pod_name == s.holder_pod;
  return !s.holder || lease.spec.selector->matches(s.holder->record.labels);
}

// Another pod an election claim could go to is Ready now.
bool another_pod_ready(const LockWorld& world, const LeaseRecord& lease, const PodState& holder) {
  return std::any_of(world.pods.begin(), world.pods.end(), [&](const auto& named) {
    const PodState& p = named.second;
    return p.record.meta.uid != holder.record.meta.uid && p.record.ready == ReadyState::kTrue &&
           grantable(p) && lease.spec.selector->matches(p.record.labels);
  });
}

Situation situation(const LockWorld& world, const ClaimQueue& queue) {
  Situation s(world, queue);
  if (!world.document) return s;
  s.doc = &*world.document;
  s.owner = queue.owner;
  s.holder_pod = name_of(s.doc->state.doc.holder);
  s.holder = world.pod(s.holder_pod);
  const int grace = s.owner ? s.owner->lease->spec.liveness_grace_seconds : 0;
  s.health = judge_holder(s.holder, s.doc->state.doc.holder_uid, s.doc->holder_seen_gone, grace, world.mono);
  // Election prefers Ready pods: a holder that never became Ready yields to one that is.
  const bool election = s.owner && s.owner->lease->spec.election_mode();
  if (election && s.health.health == Health::kAlive && !s.health.presumed_dead_at && s.holder &&
      another_pod_ready(world, *s.owner->lease, *s.holder))
    s.health = judge_never_ready(*s.holder, grace, world.mono);
  s.claimed = s.owner && owner_claims_holder(s);
  if (s.holder) s.dead_seen = s.holder->finished_seen_at;
  return s;
}

ActionPlan wait_until(const char* rule, std::optional<MonoTime> at) {
  ActionPlan plan;
  plan.rule = rule;
  plan.wake_at = at;
  return plan;
}

ActionPlan revoke(const char* rule, Reason why, std::string message) {
  ActionPlan plan;
  plan.rule = rule;
  plan.action = Action::kRevoke;
  plan.reason = why;
  plan.message = std::move(message);
  return plan;
}

ActionPlan release(const char* rule, Reason why, std::string message) {
  ActionPlan plan = revoke(rule, why, std::move(message));
  plan.action = Action::kRelease;
  return plan;
}

// The document's grant ends: the next claim gets the lock in the same write; with nobody
// waiting the lock is released, or (`release_if_nobody` false) left as it is.
ActionPlan hand_over(const char* rule, const Situation& s, Reason why, std::optional<MonoTime> dead_seen,
                     bool release_if_nobody) {
  if (s.queue.successors_by_allocation) {
    ActionPlan plan = release_if_nobody ? release(rule, why, describe_loss(why, s.holder_pod))
                                        : wait_until(rule, std::nullopt);
    plan.reason = why;
    plan.from_pod = s.holder_pod;
    plan.dead_seen_at = dead_seen;
    plan.ends_now = true;
    return plan;
  }
  if (std::optional<NextGrant> next = next_claim(s.world, s.queue, s.owner)) {
    ActionPlan plan;
    plan.rule = rule;
    plan.action = Action::kTakeOver;
    plan.grant = next;
    plan.reason = why;
    plan.from_pod = s.holder_pod;
    plan.dead_seen_at = dead_seen;
    plan.message = describe_loss(why, s.holder_pod);
    return plan;
  }
  if (!release_if_nobody) return wait_until(rule, std::nullopt);
  return release(rule, why, describe_loss(why, s.holder_pod) + "; no live claim is waiting");
}

using Rule = std::optional<ActionPlan> (*)(const Situation&);

std::optional<ActionPlan> grant_a_free_lock(const Situation& s) {
  if (s.doc) return std::nullopt;
  const char* rule = "grant_a_free_lock";
  std::optional<NextGrant> next = next_claim(s.world, s.queue, nullptr);
  if (!next) return wait_until(rule, std::nullopt);
  ActionPlan plan;
  plan.rule = rule;
  plan.action = Action::kAcquire;
  plan.grant = next;
  plan.message = "grant the free lock";
  return plan;
}

std::optional<ActionPlan> respect_a_foreign_lock(const Situation& s) {
  if (!s.doc->state.doc.lease.empty() || s.doc->renewing) return std::nullopt;
  const char* rule = "respect_a_foreign_lock";
  if (s.world.mono < s.doc->expires_at) return wait_until(rule, s.doc->expires_at);
  return hand_over(rule, s, Reason::kExpired, std::nullopt, /*release_if_nobody=*/false);
}

// The holder (the eslease tool) marks the token it lets go of before it deletes its Lease.
std::optional<ActionPlan> release_what_its_holder_let_go(const Situation& s) {
  const LeaseRecord* lease = s.owner ? s.owner->lease : nullptr;
  if (!lease || !lease->being_deleted || lease->released_token != std::to_string(s.doc->state.token))
    return std::nullopt;
  return release("release_what_its_holder_let_go", Reason::kReleased,
                 "its holder let go and deleted its Lease");
}

// A Lease deleted by anyone else (an operator's kubectl delete) or gone without a trace is
// no proof that its holder stopped: the grant is revoked and handed over once the validity
// published to the holder has ended.
std::optional<ActionPlan> revoke_when_its_claim_is_gone(const Situation& s) {
  const bool gone = (!s.owner && !s.doc->owner_moved) || (s.owner && s.owner->lease->being_deleted);
  if (!s.ours() || !gone) return std::nullopt;
  return revoke("revoke_when_its_claim_is_gone", Reason::kClaimDeleted,
                "the Lease holding the lock was deleted without its holder letting go");
}

std::optional<ActionPlan> revoke_when_its_claim_moved_on(const Situation& s) {
  if (!s.ours() || s.claimed) return std::nullopt;
  return revoke("revoke_when_its_claim_moved_on", Reason::kClaimMoved,
                "the claim no longer names its holder pod");
}

std::optional<ActionPlan> hand_over_from_a_confirmed_death(const Situation& s) {
  if (s.health.health != Health::kConfirmedDead) return std::nullopt;
  const char* rule = "hand_over_from_a_confirmed_death";
  if (s.world.liveness_takeover) return hand_over(rule, s, *s.health.reason, s.dead_seen, true);
  if (!s.ours()) return std::nullopt;  // already not renewed: it expires
  return revoke(
      rule, Reason::kExpired,
      std::string("holder is gone (") + api::to_string(*s.health.reason) + "); liveness takeover is off");
}

// Presumed dead: unready past the grace, or missing from a cache that never saw it go.
std::optional<ActionPlan> revoke_a_presumed_death(const Situation& s) {
  if (!s.ours() || s.health.health != Health::kPresumedDead) return std::nullopt;
  const char* rule = "revoke_a_presumed_death";
  const Reason why = *s.health.reason;
  if (s.world.liveness_takeover) return revoke(rule, why, describe_loss(why, s.holder_pod));
  if (why == Reason::kPodNotReady) return std::nullopt;  // readiness is not judged
  return revoke(rule, Reason::kExpired,
                std::string("holder is gone (") + api::to_string(why) + "); liveness takeover is off");
}

std::optional<ActionPlan> keep_a_live_holder(const Situation& s) {
  if (!s.ours()) return std::nullopt;
  // Alive but unready: look again when its grace runs out.
  const bool checking = s.health.presumed_dead_at && s.world.liveness_takeover;
  return wait_until("keep_a_live_holder", checking ? s.health.presumed_dead_at : std::nullopt);
}

std::optional<ActionPlan> adopt_a_recorded_grant(const Situation& s) {
  const LeaseStatus* status = s.owner ? &s.owner->lease->status : nullptr;
  const bool recorded =
      status && status->phase == Phase::kHeld && status->fencing_token == std::to_string(s.doc->state.token);
  if (s.doc->renewing || s.doc->revoked || !s.claimed || s.health.health != Health::kAlive || !recorded)
    return std::nullopt;
  ActionPlan plan;
  plan.rule = "adopt_a_recorded_grant";
  plan.action = Action::kAdopt;
  plan.message = "a grant recorded in the Lease status is taken over for renewal";
  return plan;
}

std::optional<ActionPlan> hand_over_when_it_expires(const Situation& s) {
  const char* rule = "hand_over_when_it_expires";
  if (s.world.mono < s.doc->expires_at) return wait_until(rule, s.doc->expires_at);
  // Revoked for a reason the next holder's status should show (PodNotReady); a grant that
  // simply ran out, or whose claim was deleted or moved on, expired.
  Reason why = s.doc->revoked.value_or(Reason::kExpired);
  if (why == Reason::kRenewalFailed || why == Reason::kClaimDeleted || why == Reason::kClaimMoved)
    why = Reason::kExpired;
  return hand_over(rule, s, why, std::nullopt, true);
}

constexpr std::array<Rule, 10> kRules = {
    grant_a_free_lock,
    respect_a_foreign_lock,
    release_what_its_holder_let_go,
    hand_over_from_a_confirmed_death,
    revoke_when_its_claim_is_gone,
    revoke_when_its_claim_moved_on,
    revoke_a_presumed_death,
    keep_a_live_holder,
    adopt_a_recorded_grant,
    hand_over_when_it_expires,
};

}  // namespace

ActionPlan decide_action(const LockWorld& world, const ClaimQueue& queue) {
  const Situation s = situation(world, queue);
  for (Rule rule : kRules)
    if (std::optional<ActionPlan> plan = rule(s)) return std::move(*plan);
  return wait_until("", std::nullopt);  // unreachable: the last rule always decides
}

std::string describe_loss(Reason why, const std::string& pod) {
  switch (why) {
    case Reason::kPodDeleted:
      return "holder pod " + pod + " was deleted";
    case Reason::kPodReplaced:
      return "holder pod " + pod + " was replaced by a new pod of that name";
    case Reason::kPodFailed:
      return "holder pod " + pod + " failed";
    case Reason::kPodSucceeded:
      return "holder pod " + pod + " succeeded";
    case Reason::kPodNotReady:
      return "holder pod " + pod + " (or its node) stayed not Ready past the grace";
    case Reason::kRenewalFailed:
      return "the lock could not be renewed in Elasticsearch before it expired";
    case Reason::kReleased:
      return "holder pod " + pod + " let go of the lock";
    case Reason::kClaimDeleted:
      return "the Lease of holder pod " + pod + " was deleted without its holder letting go";
    case Reason::kClaimMoved:
      return "the claim no longer names holder pod " + pod;
    case Reason::kExpired:
    case Reason::kWaiting:
    case Reason::kAcquired:
    case Reason::kTakenOver:
    case Reason::kTimedOut:
    case Reason::kBusy:
    case Reason::kInvalidClaim:
    case Reason::kInvalid:
    case Reason::kBackendUnavailable:
    case Reason::kBackendReachable:
    case Reason::kMalformedLockDocument:
    case Reason::kTokensUnproven:
      break;
  }
  return "the grant to " + pod + " expired";
}

}  // namespace eslease::controller
