#include "controller/grant_rules.h"

#include <algorithm>
#include <array>
#include <set>

namespace eslease::controller {
namespace {

using api::Reason;

// The facts every rule reads, worked out once.
struct Situation {
  Situation(const LockWorld& w, const GrantView& g) : world(w), grant(g) {}
  const LockWorld& world;
  const GrantView& grant;
  const ClaimView* owner = nullptr;  // the claim the grant names
  std::string holder_pod;
  const PodState* holder = nullptr;  // the pod now named like the holder
  HolderHealth health;
  bool claimed = false;   // the owning claim still names the pod holding its grant
  std::string unclaimed;  // why not, when it exists
  std::optional<MonoTime> dead_seen;
  bool ours() const { return grant.renewing && !grant.revoked; }  // we renew it
};

// The locks a grant is on: every document's, as its documents name them.
std::set<std::string> locks_of(const GrantView& grant) {
  const lock::LockDocument& doc = grant.state.doc;
  std::set<std::string> ids;
  if (doc.grant_docs.empty()) ids.insert(doc.lock);
  for (const std::string& id : doc.grant_docs) ids.insert(id.substr(0, id.find('#')));
  return ids;
}

// Why the owning claim no longer matches the grant it holds, or "": it names another pod (or
// its selector no longer matches the holder), other locks, or another shape.
std::string mismatch(const Situation& s) {
  const LeaseRecord& lease = *s.owner->lease;
  if (!s.owner->invalid.empty() || lease.being_deleted) return "the claim cannot be served as it is";
  if (!lease.spec.election_mode() && lease.spec.pod_name != s.holder_pod)
    return "the claim no longer names holder pod " + s.holder_pod;
  if (lease.spec.election_mode() && s.holder && !lease.spec.selector->matches(s.holder->record.labels))
    return "the claim's selector no longer matches holder pod " + s.holder_pod;
  if (!claims_the_locks_of(lease, s.grant)) return "the claim names other locks than its grant holds";
  const lock::LockDocument& doc = s.grant.state.doc;
  const Access held = api::effective_access(doc.capacity, doc.access);
  const Access asked = lease.spec.effective_access();
  // A Shared holder was never alone: a capacity raised, or lowered above its slot, leaves its
  // grant as it is (more or fewer others beside it). Any other grant is made again.
  const bool slot_kept = held == Access::kShared &&
                         std::all_of(s.grant.slots.begin(), s.grant.slots.end(),
                                     [&](const SlotRef& ref) { return ref.slot < lease.spec.capacity; });
  if ((doc.capacity != lease.spec.capacity && !slot_kept) || held != asked)
    return std::string("the claim asks for ") + api::to_string(asked) + " access to capacity " +
           std::to_string(lease.spec.capacity) + ", its grant is " + api::to_string(held) + " on capacity " +
           std::to_string(doc.capacity);
  return "";
}

// Another pod an election claim could go to is Ready now.
bool another_pod_ready(const LockWorld& world, const LeaseRecord& lease, const PodState& holder) {
  return std::any_of(world.pods.begin(), world.pods.end(), [&](const auto& named) {
    const PodState& p = named.second;
    return p.record.meta.uid != holder.record.meta.uid && p.record.ready == ReadyState::kTrue &&
           grantable(p) && lease.spec.selector->matches(p.record.labels);
  });
}

Situation situation(const LockWorld& world, const GrantView& grant, const ClaimView* owner) {
  Situation s(world, grant);
  s.owner = owner;
  s.holder_pod = name_of(grant.state.doc.holder);
  s.holder = world.pod(s.holder_pod);
  const int grace = owner ? owner->lease->spec.liveness_grace_seconds : 0;
  s.health = judge_holder(s.holder, grant.state.doc.holder_uid, grant.holder_seen_gone, grace, world.mono);
  // Election prefers Ready pods: a holder that never became Ready yields to one that is.
  const bool election = owner && owner->lease->spec.election_mode();
  if (election && s.health.health == Health::kAlive && !s.health.presumed_dead_at && s.holder &&
      another_pod_ready(world, *owner->lease, *s.holder))
    s.health = judge_never_ready(*s.holder, grace, world.mono);
  if (owner) {
    s.unclaimed = mismatch(s);
    s.claimed = s.unclaimed.empty();
  }
  if (s.holder) s.dead_seen = s.holder->finished_seen_at;
  return s;
}

GrantVerdict wait_until(const char* rule, std::optional<MonoTime> at) {
  GrantVerdict v;
  v.rule = rule;
  v.wake_at = at;
  return v;
}

GrantVerdict act(const char* rule, Action action, Reason why, std::string message) {
  GrantVerdict v;
  v.rule = rule;
  v.action = action;
  v.reason = why;
  v.message = std::move(message);
  return v;
}

// The grant ends now: its slots go to the next claims served; with nobody to serve it is
// released, or (`release_if_nobody` false: not ours to delete) left as it is.
GrantVerdict end_now(const char* rule, const Situation& s, Reason why, bool handed_over,
                     std::optional<MonoTime> dead_seen, bool release_if_nobody) {
  GrantVerdict v = release_if_nobody ? act(rule, Action::kRelease, why, describe_loss(why, s.holder_pod))
                                     : wait_until(rule, std::nullopt);
  v.reason = why;
  v.ends_now = true;
  v.handed_over = handed_over;
  v.from_pod = s.holder_pod;
  v.dead_seen_at = dead_seen;
  return v;
}

using Rule = std::optional<GrantVerdict> (*)(const Situation&);

std::optional<GrantVerdict> respect_a_foreign_lock(const Situation& s) {
  if (!s.grant.state.doc.lease.empty() || s.grant.renewing) return std::nullopt;
  const char* rule = "respect_a_foreign_lock";
  if (s.world.mono < s.grant.expires_at) return wait_until(rule, s.grant.expires_at);
  return end_now(rule, s, Reason::kExpired, true, std::nullopt, /*release_if_nobody=*/false);
}

// The holder (the eslease tool) marks the token it lets go of before it deletes its Lease.
std::optional<GrantVerdict> release_what_its_holder_let_go(const Situation& s) {
  const LeaseRecord* lease = s.owner ? s.owner->lease : nullptr;
  if (!lease || !lease->being_deleted || lease->released_token != std::to_string(s.grant.state.token))
    return std::nullopt;
  GrantVerdict v = end_now("release_what_its_holder_let_go", s, Reason::kReleased, false, std::nullopt, true);
  v.message = "its holder let go and deleted its Lease";
  return v;
}

// The grant its owning Lease shows Held with its token: the namespace's session publishes
// validity to it until it is listed there.
bool recorded_in_status(const Situation& s) {
  return s.owner && s.owner->lease->status.shows_held(s.grant.state.token);
}

// Not revoked, and shown Held by its Lease: a new leader lists such a grant when it ends it,
// rather than wait for it to expire, since the session cannot be renewed until it is listed.
bool recorded_and_standing(const Situation& s) {
  return !s.grant.revoked && recorded_in_status(s);
}

std::optional<GrantVerdict> end_a_confirmed_death(const Situation& s) {
  if (s.health.health != Health::kConfirmedDead) return std::nullopt;
  const char* rule = "end_a_confirmed_death";
  if (s.world.liveness_takeover) return end_now(rule, s, *s.health.reason, true, s.dead_seen, true);
  // Already not renewed, it expires; but one its Lease records is listed first (a new
  // leader), so that the session can be renewed for the holders that live.
  if (!s.ours() && !recorded_and_standing(s)) return std::nullopt;
  return act(
      rule, Action::kRevoke, Reason::kExpired,
      std::string("holder is gone (") + api::to_string(*s.health.reason) + "); liveness takeover is off");
}

// Part of the grant is no longer ours to renew (another writer replaced a document, one
// went, or only part of it was revoked): the whole grant is over, and revoked.
std::optional<GrantVerdict> revoke_a_broken_grant(const Situation& s) {
  if (!s.grant.broken) return std::nullopt;
  return act("revoke_a_broken_grant", Action::kRevoke, s.grant.revoked.value_or(Reason::kRenewalFailed),
             "part of the grant to " + s.holder_pod + " is no longer ours to renew");
}

// Two replicas that both believed they led may each grant one claim (different slots of a
// semaphore, or a set's locks one after the other); Lease status writes are conditional, so
// one of them is recorded first, and the other replica decides again on it. When the Lease
// records a later grant of the claim that still stands, ours (its holder never told of it:
// its status write lost) is revoked and ends after its validity like every revoked grant, so
// the tokens a Lease shows only grow. A recorded grant that is older than ours is not one to
// give way to: it is ending (revoked or expired), or it is the one to give way.
std::optional<GrantVerdict> give_way_to_the_recorded_grant(const Situation& s) {
  if (!s.ours() || !s.owner) return std::nullopt;
  const LeaseRecord& lease = *s.owner->lease;
  const bool later_recorded =
      std::any_of(s.world.grants.begin(), s.world.grants.end(), [&](const GrantView& g) {
        return g.state.doc.lease_uid == lease.meta.uid && g.state.token > s.grant.state.token && !g.revoked &&
               s.world.mono < g.expires_at && lease.status.shows_held(g.state.token);
      });
  if (!later_recorded) return std::nullopt;
  return act("give_way_to_the_recorded_grant", Action::kRevoke, Reason::kClaimMoved,
             "the claim's Lease records another grant of it (token " + lease.status.fencing_token +
                 "), made by another controller");
}

// A Lease deleted by anyone else (an operator's kubectl delete) or gone without a trace is
// no proof that its holder stopped: the grant is revoked and ends once the validity
// published to the holder has ended. A new leader revokes one its Lease still records too.
std::optional<GrantVerdict> revoke_when_its_claim_is_gone(const Situation& s) {
  const bool gone = (!s.owner && !s.grant.owner_moved) || (s.owner && s.owner->lease->being_deleted);
  if (!(s.ours() || recorded_and_standing(s)) || !gone) return std::nullopt;
  return act("revoke_when_its_claim_is_gone", Action::kRevoke, Reason::kClaimDeleted,
             "the Lease holding the lock was deleted without its holder letting go");
}

// A new leader revokes such a grant its Lease records too (a claim patched while no controller
// ran), as it does a presumed death: listed, it may be granted again in its new shape at once.
std::optional<GrantVerdict> revoke_when_its_claim_moved_on(const Situation& s) {
  if (!(s.ours() || recorded_and_standing(s)) || s.claimed) return std::nullopt;
  return act("revoke_when_its_claim_moved_on", Action::kRevoke, Reason::kClaimMoved,
             s.unclaimed.empty() ? "the claim no longer names its holder pod" : s.unclaimed);
}

// Presumed dead: unready past the grace, or missing from a cache that never saw it go. A new
// leader revokes such a grant its Lease records too, rather than wait for it to expire: until
// it is listed, the session it is shown under cannot be renewed for the grants that live.
std::optional<GrantVerdict> revoke_a_presumed_death(const Situation& s) {
  if (!(s.ours() || recorded_and_standing(s)) || s.health.health != Health::kPresumedDead)
    return std::nullopt;
  const char* rule = "revoke_a_presumed_death";
  const Reason why = *s.health.reason;
  if (s.world.liveness_takeover) return act(rule, Action::kRevoke, why, describe_loss(why, s.holder_pod));
  if (why == Reason::kPodNotReady) return std::nullopt;  // readiness is not judged
  return act(rule, Action::kRevoke, Reason::kExpired,
             std::string("holder is gone (") + api::to_string(why) + "); liveness takeover is off");
}

std::optional<GrantVerdict> keep_a_live_holder(const Situation& s) {
  if (!s.ours()) return std::nullopt;
  // Alive but unready: look again when its grace runs out.
  const bool checking = s.health.presumed_dead_at && s.world.liveness_takeover;
  return wait_until("keep_a_live_holder", checking ? s.health.presumed_dead_at : std::nullopt);
}

std::optional<GrantVerdict> adopt_a_recorded_grant(const Situation& s) {
  if (s.grant.renewing || s.grant.revoked || !s.claimed || s.health.health != Health::kAlive ||
      !recorded_in_status(s))
    return std::nullopt;
  return act("adopt_a_recorded_grant", Action::kAdopt, Reason::kAcquired,
             "a grant recorded in the Lease status is taken over for renewal");
}

std::optional<GrantVerdict> end_when_it_expires(const Situation& s) {
  const char* rule = "end_when_it_expires";
  if (s.world.mono < s.grant.expires_at) return wait_until(rule, s.grant.expires_at);
  // A revocation says why the next holder's status shows the takeover: PodNotReady as it
  // is; a renewal that failed, or a claim deleted or changed, as Revoked. A grant that simply
  // ran out (nobody renewed it: liveness takeover off, a grant never confirmed) expired.
  Reason why = s.grant.revoked.value_or(Reason::kExpired);
  if (why == Reason::kRenewalFailed || why == Reason::kClaimDeleted || why == Reason::kClaimMoved)
    why = Reason::kRevoked;
  // What is left of a grant whose claim holds a newer one for the same pod (granted again in a
  // new shape) ends as if let go: its holder has lost nothing.
  const GrantView* newer = s.owner ? s.owner->grant : nullptr;
  const bool regranted = newer && newer != &s.grant && newer->state.token > s.grant.state.token &&
                         newer->state.doc.holder_uid == s.grant.state.doc.holder_uid;
  return end_now(rule, s, why, !regranted, std::nullopt, true);
}

constexpr std::array<Rule, 11> kRules = {
    respect_a_foreign_lock,
    release_what_its_holder_let_go,
    end_a_confirmed_death,
    revoke_a_broken_grant,
    give_way_to_the_recorded_grant,
    revoke_when_its_claim_is_gone,
    revoke_when_its_claim_moved_on,
    revoke_a_presumed_death,
    keep_a_live_holder,
    adopt_a_recorded_grant,
    end_when_it_expires,
};

}  // namespace

bool claims_the_locks_of(const LeaseRecord& lease, const GrantView& grant) {
  const std::vector<std::string> ids = lease.lock_ids();
  return std::set<std::string>(ids.begin(), ids.end()) == locks_of(grant);
}

GrantVerdict judge_grant(const LockWorld& world, const GrantView& grant, const ClaimView* owner) {
  const Situation s = situation(world, grant, owner);
  for (Rule rule : kRules)
    if (std::optional<GrantVerdict> verdict = rule(s)) return std::move(*verdict);
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
    case Reason::kNodeLost:
      return "the node of holder pod " + pod + " stopped heartbeating";
    case Reason::kRenewalFailed:
      return "the lock could not be renewed in Elasticsearch before it expired";
    case Reason::kReleased:
      return "holder pod " + pod + " let go of the lock";
    case Reason::kClaimDeleted:
      return "the Lease of holder pod " + pod + " was deleted without its holder letting go";
    case Reason::kClaimMoved:
      return "the claim no longer matches the grant of holder pod " + pod;
    case Reason::kRevoked:
      return "the grant to " + pod + " was revoked and its validity has ended";
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
