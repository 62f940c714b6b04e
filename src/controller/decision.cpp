#include "controller/decision.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace eslease::controller {
namespace {

// Reasons a claim's Held condition carries after it lost the lock: from then on the claim
// waits again, counted from that moment.
bool is_loss_reason(const std::string& r) {
  static const std::set<std::string> kLoss = {
      reason::kPodDeleted,  reason::kPodReplaced, reason::kPodFailed,     reason::kPodSucceeded,
      reason::kPodNotReady, reason::kExpired,     reason::kRenewalFailed, reason::kReleased};
  return kLoss.count(r) > 0;
}

std::string pod_name_of(const std::string& holder) {
  const auto slash = holder.find('/');
  return slash == std::string::npos ? holder : holder.substr(slash + 1);
}

std::string describe_loss(const std::string& why, const std::string& pod) {
  if (why == reason::kPodDeleted) return "holder pod " + pod + " was deleted";
  if (why == reason::kPodReplaced) return "holder pod " + pod + " was replaced by a new pod of that name";
  if (why == reason::kPodFailed) return "holder pod " + pod + " failed";
  if (why == reason::kPodSucceeded) return "holder pod " + pod + " succeeded";
  if (why == reason::kPodNotReady)
    return "holder pod " + pod + " (or its node) stayed not Ready past the grace";
  if (why == reason::kRenewalFailed)
    return "the lock could not be renewed in Elasticsearch before it expired";
  if (why == reason::kReleased) return "the claim no longer names holder pod " + pod;
  return "the grant to " + pod + " expired";
}

// One claim as the decision sees it.
struct ClaimView {
  const LeaseRecord* lease = nullptr;
  std::string invalid;            // why it cannot be served ("" when valid)
  bool timed_out = false;         // terminal, or its wait ran out now
  bool released = false;          // terminal for its (finished) pod
  WallTime waiting_since{};       // queue order
  const PodState* pod = nullptr;  // the pod it would be granted to now (nullptr: none is live)
  bool waiting = false;           // in the queue: valid, not terminal, not deleted, not holding
};

class Decider {
 public:
  explicit Decider(const LockWorld& world) : w_(world) {}

  Decision run() {
    classify_claims();
    if (w_.document) find_owner();
    if (!w_.document_known) {
      // Elasticsearch could not be read: nothing is decided, and statuses keep what they
      // said, apart from the backend condition.
      keep_statuses();
      return std::move(d_);
    }
    if (w_.act && w_.malformed_document.empty()) decide_action();
    if (d_.action == Action::kNone) project_statuses();
    plan_finalizers();
    return std::move(d_);
  }

 private:
  const PodState* pod(const std::string& name) const {
    auto it = w_.pods.find(name);
    return it == w_.pods.end() ? nullptr : &it->second;
  }

  bool held_by(const LeaseRecord& lease) const {
    return w_.document && w_.document->state.doc.lease_uid == lease.meta.uid && w_.document->active &&
           w_.document->revoked_reason.empty();
  }

  // The best live pod for an election claim: Ready before not-yet-Ready, then oldest, then name.
  const PodState* election_pod(const LeaseRecord& lease, const std::string& exclude_uid) const {
    const PodState* best = nullptr;
    auto rank = [](const PodState& p) {
      return std::make_tuple(p.record.ready == ReadyState::kTrue ? 0 : 1, p.record.creation_time,
                             p.record.meta.name);
    };
    for (const auto& [name, state] : w_.pods) {
      if (!lease.spec.selector->matches(state.record.labels) || !grantable(state)) continue;
      if (!exclude_uid.empty() && state.record.meta.uid == exclude_uid) continue;
      if (!best || rank(state) < rank(*best)) best = &state;
    }
    return best;
  }

  void classify_claims() {
    // Of two claims on one lock from the same pod, the later-created one is Invalid.
    std::vector<const LeaseRecord*> by_age;
    for (const LeaseRecord& lease : w_.claims) by_age.push_back(&lease);
    std::sort(by_age.begin(), by_age.end(), [](const LeaseRecord* a, const LeaseRecord* b) {
      return std::tie(a->creation_time, a->meta.name) < std::tie(b->creation_time, b->meta.name);
    });
    std::map<std::string, std::string> first_claim_of_pod;
    for (const LeaseRecord* lease : by_age) {
      ClaimView view;
      view.lease = lease;
      view.invalid = lease->spec.problem;
      if (view.invalid.empty() && !lease->spec.election_mode() && !lease->being_deleted) {
        auto [it, inserted] = first_claim_of_pod.emplace(lease->spec.pod_name, lease->meta.name);
        if (!inserted)
          view.invalid = "pod " + lease->spec.pod_name + " already claims lock " + w_.lock_name +
                         " through Lease " + it->second;
      }
      const LeaseStatus& status = lease->status;
      view.waiting_since = waiting_since(*lease);
      // A claim whose status still says Held but which holds nothing now has just lost.
      if (status.phase == Phase::kHeld && !held_by(*lease)) view.waiting_since = w_.now;
      if (view.invalid.empty()) {
        view.timed_out = status.phase == Phase::kTimedOut;
        if (!lease->spec.election_mode() && status.phase == Phase::kReleased && status.holder) {
          const PodState* p = pod(lease->spec.pod_name);
          view.released = !p || p->record.meta.uid == status.holder->pod_uid;
        }
        if (!lease->spec.election_mode()) {
          const PodState* p = pod(lease->spec.pod_name);
          if (p && grantable(*p)) view.pod = p;
        } else {
          view.pod = election_pod(*lease, "");
        }
      }
      view.waiting = view.invalid.empty() && !view.timed_out && !view.released && !lease->being_deleted &&
                     !held_by(*lease);
      if (view.waiting && lease->spec.acquire_timeout_seconds) {
        const WallTime deadline =
            view.waiting_since + std::chrono::seconds(*lease->spec.acquire_timeout_seconds);
        if (w_.now >= deadline) {
          view.timed_out = true;
          view.waiting = false;
        } else {
          requeue(w_.mono + std::chrono::duration_cast<Millis>(deadline - w_.now));
        }
      }
      claims_.push_back(view);
    }
    std::sort(claims_.begin(), claims_.end(), [](const ClaimView& a, const ClaimView& b) {
      return std::make_tuple(a.lease->spec.priority, a.waiting_since, a.lease->creation_time,
                             a.lease->meta.name) < std::make_tuple(b.lease->spec.priority, b.waiting_since,
                                                                   b.lease->creation_time,
                                                                   b.lease->meta.name);
    });
  }

  void find_owner() {
    const lock::LockDocument& doc = w_.document->state.doc;
    for (ClaimView& c : claims_)
      if (c.lease->meta.uid == doc.lease_uid && w_.ns + "/" + c.lease->meta.name == doc.lease) owner_ = &c;
  }

  void requeue(MonoTime at) {
    if (!d_.requeue_at || at < *d_.requeue_at) d_.requeue_at = at;
  }

  // Does the owning claim still name the pod holding its grant?
  bool owner_claims_holder(const ClaimView& owner, const PodState* holder) const {
    const LeaseRecord& lease = *owner.lease;
    if (!owner.invalid.empty() || lease.being_deleted) return false;
    const std::string holder_pod = pod_name_of(w_.document->state.doc.holder);
    if (!lease.spec.election_mode()) return lease.spec.pod_name == holder_pod;
    return !holder || lease.spec.selector->matches(holder->record.labels);
  }

  void decide_action() {
    if (!w_.document) {
      if (const ClaimView* next = next_claim(nullptr))
        plan_grant(Action::kAcquire, *next, "", "", std::nullopt);
      return;
    }
    const DocumentView& doc = *w_.document;
    const std::string holder_pod = pod_name_of(doc.state.doc.holder);
    const PodState* holder = pod(holder_pod);
    const bool managed = owner_ || doc.active || doc.owner_moved;
    if (!managed) {  // another process's lock: respected until it expires on our clock
      if (w_.mono >= doc.expires_at) {
        hand_over(reason::kExpired, holder_pod, std::nullopt, /*release_if_nobody=*/false);
      } else {
        requeue(doc.expires_at);
      }
      return;
    }
    // The claim is gone (deleted, or the Lease vanished while we renewed its grant): that is
    // proof its holder let go, so the lock moves at once. A Lease that now claims another
    // lock is different: its pod may still work under this one, so that grant is revoked.
    if ((!owner_ && !doc.owner_moved) || (owner_ && owner_->lease->being_deleted)) {
      d_.action = Action::kRelease;
      d_.action_reason = reason::kReleased;
      d_.action_message = "the Lease holding the lock was deleted";
      return;
    }
    const int grace = owner_ ? owner_->lease->spec.liveness_grace_seconds : 0;
    const HolderHealth health = judge_holder(holder, doc.state.doc.holder_uid, grace, w_.mono);
    const bool claimed = owner_ && owner_claims_holder(*owner_, holder);
    const std::optional<MonoTime> dead_seen = holder ? holder->finished_seen_at : std::nullopt;

    if (doc.active && doc.revoked_reason.empty()) {
      if (!claimed) {
        revoke(reason::kReleased, "the claim no longer names its holder pod");
      } else if (health.health == Health::kConfirmedDead) {
        if (w_.liveness_takeover) {
          hand_over(health.reason, holder_pod, dead_seen, true);
        } else {
          revoke(reason::kExpired,
                 std::string("holder is gone (") + health.reason + "); liveness takeover is off");
        }
      } else if (health.health == Health::kPresumedDead && w_.liveness_takeover) {
        revoke(reason::kPodNotReady, describe_loss(reason::kPodNotReady, holder_pod));
      } else if (health.presumed_dead_at && w_.liveness_takeover) {
        requeue(*health.presumed_dead_at);
      }
      return;
    }
    // Not renewed by us: revoked, or found at start-up and not yet confirmed.
    if (!doc.active && doc.revoked_reason.empty() && claimed && health.health == Health::kAlive &&
        owner_->lease->status.phase == Phase::kHeld &&
        owner_->lease->status.fencing_token == std::to_string(doc.state.token)) {
      d_.action = Action::kAdopt;
      d_.action_message = "a grant recorded in the Lease status is taken over for renewal";
      return;
    }
    if (w_.liveness_takeover && health.health == Health::kConfirmedDead) {
      hand_over(health.reason, holder_pod, dead_seen, true);
    } else if (w_.mono >= doc.expires_at) {
      std::string why = doc.revoked_reason.empty() ? reason::kExpired : doc.revoked_reason;
      if (why == reason::kRenewalFailed || why == reason::kReleased) why = reason::kExpired;
      hand_over(why, holder_pod, std::nullopt, true);
    } else {
      requeue(doc.expires_at);
    }
  }

  void revoke(const char* why, std::string message) {
    d_.action = Action::kRevoke;
    d_.action_reason = why;
    d_.action_message = std::move(message);
  }

  // The next claim to grant, and the pod to grant it to. An election claim that held the
  // lock fails over to another of its pods before anyone else is served; a claim-mode claim
  // that is losing the lock queues again behind those already waiting.
  const ClaimView* next_claim(const DocumentView* doc) {
    ClaimView* owner = doc ? owner_ : nullptr;
    const bool owner_eligible = owner && owner->invalid.empty() && !owner->lease->being_deleted &&
                                !owner->timed_out && !owner->released;
    if (owner_eligible && owner->lease->spec.election_mode()) {
      if (const PodState* other = election_pod(*owner->lease, doc->state.doc.holder_uid)) {
        owner->pod = other;
        return owner;
      }
      return first_waiting(owner);
    }
    const ClaimView* next = first_waiting(owner);
    if (owner_eligible && owner->pod) {
      owner->waiting_since = w_.now;
      auto rank = [](const ClaimView& c) {
        return std::make_tuple(c.lease->spec.priority, c.waiting_since, c.lease->creation_time,
                               c.lease->meta.name);
      };
      if (!next || rank(*owner) < rank(*next)) return owner;
    }
    return next;
  }

  const ClaimView* first_waiting(const ClaimView* skip) const {
    for (const ClaimView& c : claims_) {
      if (&c != skip && c.waiting && c.pod) return &c;
    }
    return nullptr;
  }

  void hand_over(const std::string& why, const std::string& from_pod, std::optional<MonoTime> dead_seen,
                 bool release_if_nobody) {
    if (const ClaimView* next = next_claim(&*w_.document)) {
      plan_grant(Action::kTakeOver, *next, why, from_pod, dead_seen);
    } else if (release_if_nobody) {
      d_.action = Action::kRelease;
      d_.action_reason = why;
      d_.action_message = describe_loss(why, from_pod) + "; no live claim is waiting";
    }
  }

  void plan_grant(Action action, const ClaimView& claim, const std::string& why, const std::string& from_pod,
                  std::optional<MonoTime> dead_seen) {
    d_.action = action;
    GrantPlan& g = d_.grant;
    g.lease = claim.lease->meta.name;
    g.lease_uid = claim.lease->meta.uid;
    g.pod = claim.pod->record.meta.name;
    g.pod_uid = claim.pod->record.meta.uid;
    g.node = claim.pod->record.node_name;
    g.priority = claim.lease->spec.priority;
    g.ttl = std::chrono::seconds(claim.lease->spec.lease_duration_seconds);
    g.takeover_reason = why;
    g.from_pod = from_pod;
    g.waiting_since = claim.waiting_since;
    g.dead_seen_at = dead_seen;
    d_.action_message = why.empty() ? "grant the free lock" : describe_loss(why, from_pod);
  }

  // --- statuses -------------------------------------------------------------------------

  Condition condition(const LeaseStatus& previous, const char* type, const char* status, std::string why,
                      std::string message, std::int64_t generation) const {
    Condition c{type, status, std::move(why), std::move(message), w_.now, generation};
    if (const Condition* old = previous.condition(type); old && old->status == c.status)
      c.last_transition_time = old->last_transition_time;
    return c;
  }

  void event(const LeaseRecord& lease, bool warning, std::string why, std::string message) {
    d_.events.push_back({lease.meta.name, warning, std::move(why), std::move(message)});
  }

  void keep_statuses() {
    for (const ClaimView& c : claims_) {
      const LeaseRecord& lease = *c.lease;
      if (lease.being_deleted) continue;
      LeaseStatus s = lease.status;
      std::erase_if(s.conditions, [](const Condition& x) { return x.type == kConditionBackendAvailable; });
      add_backend_condition(lease, s);
      d_.statuses[lease.meta.name] = std::move(s);
    }
  }

  void add_backend_condition(const LeaseRecord& lease, LeaseStatus& s) {
    const LeaseStatus& prev = lease.status;
    if (w_.backend_available) {
      s.conditions.push_back(condition(prev, kConditionBackendAvailable, "True", reason::kBackendReachable,
                                       "Elasticsearch answers", lease.generation));
      return;
    }
    s.conditions.push_back(condition(prev, kConditionBackendAvailable, "False", reason::kBackendUnavailable,
                                     "Elasticsearch cannot be reached; retrying", lease.generation));
    const Condition* old = prev.condition(kConditionBackendAvailable);
    if (!old || old->status != "False")
      event(lease, true, reason::kBackendUnavailable, "Elasticsearch cannot be reached; retrying");
  }

  void project_statuses() {
    int live_ahead = 0;
    for (const ClaimView& c : claims_) {
      const LeaseRecord& lease = *c.lease;
      if (lease.being_deleted) continue;
      d_.statuses[lease.meta.name] = project(c, live_ahead);
      if (c.waiting && c.pod) ++live_ahead;
    }
  }

  LeaseStatus project(const ClaimView& c, int live_ahead) {
    const LeaseRecord& lease = *c.lease;
    const LeaseStatus& prev = lease.status;
    const std::int64_t gen = lease.generation;
    LeaseStatus s;
    s.observed_generation = gen;
    s.transitions = prev.transitions;
    s.last_takeover = prev.last_takeover;
    const bool was_held = prev.phase == Phase::kHeld;
    Condition held;

    if (!c.invalid.empty()) {
      s.phase = Phase::kInvalid;
      held = condition(prev, kConditionHeld, "False", reason::kInvalidClaim, c.invalid, gen);
      if (prev.phase != Phase::kInvalid) event(lease, true, reason::kInvalid, c.invalid);
    } else if (held_by(lease)) {
      const lock::LockDocument& doc = w_.document->state.doc;
      s.phase = Phase::kHeld;
      const std::string pod_name = pod_name_of(doc.holder);
      s.holder = HolderRef{pod_name, doc.holder_uid, doc.node};
      s.fencing_token = std::to_string(w_.document->state.token);
      s.acquire_time = doc.acquired_at;
      s.renew_time = doc.renewed_at;
      s.expire_time = doc.expires_at;
      s.transitions = std::max<std::int64_t>(0, doc.transitions - 1);
      const bool just_granted = w_.recent_grant && w_.recent_grant->lease == lease.meta.name;
      if (just_granted && !w_.recent_grant->takeover_reason.empty()) {
        s.last_takeover =
            Takeover{w_.recent_grant->from_pod, w_.recent_grant->takeover_reason, w_.recent_grant->time};
      }
      const bool takeover = just_granted && !w_.recent_grant->takeover_reason.empty();
      std::string message = "held by pod " + pod_name + " with fencing token " + s.fencing_token;
      held = condition(prev, kConditionHeld, "True", takeover ? reason::kTakenOver : reason::kAcquired,
                       message, gen);
      if (const Condition* old = prev.condition(kConditionHeld);
          old && old->status == "True" && prev.fencing_token == s.fencing_token)
        held.reason = old->reason;  // a renewal changes nothing but the times
      if (!was_held || prev.fencing_token != s.fencing_token) {
        event(lease, false, takeover ? reason::kTakenOver : reason::kAcquired,
              takeover ? message + " after " +
                             describe_loss(w_.recent_grant->takeover_reason, w_.recent_grant->from_pod)
                       : message);
      }
    } else if (c.released || (prev.phase == Phase::kTimedOut)) {
      s = prev;  // terminal: only the conditions' generation and the backend change
      s.observed_generation = gen;
      s.conditions.clear();
      const Condition* old = prev.condition(kConditionHeld);
      held = old ? *old
                 : condition(prev, kConditionHeld, "False",
                             c.released ? reason::kReleased : reason::kTimedOut, "", gen);
      held.observed_generation = gen;
    } else if (was_held) {
      // It held the lock and does not any more: say why, and wait again from now.
      std::string why = loss_reason(lease);
      const std::string pod_name = prev.holder ? prev.holder->pod_name : "";
      const bool finished = why == reason::kPodSucceeded || why == reason::kPodFailed;
      if (finished && !lease.spec.election_mode()) {
        s.phase = Phase::kReleased;
        s.holder = prev.holder;
        held = condition(prev, kConditionHeld, "False", why.c_str(),
                         describe_loss(why, pod_name) + "; the claim is released", gen);
        event(lease, false, reason::kReleased, describe_loss(why, pod_name) + "; the claim is released");
      } else {
        s.phase = Phase::kPending;
        if (c.pod) s.queue_position = live_ahead;  // no place in line without a live pod
        held = condition(prev, kConditionHeld, "False", why.c_str(), describe_loss(why, pod_name), gen);
        held.last_transition_time = w_.now;
        event(lease, why == reason::kRenewalFailed, why, "lost the lock: " + describe_loss(why, pod_name));
      }
    } else if (c.timed_out) {
      s.phase = Phase::kTimedOut;
      std::string message = "waited " + std::to_string(*lease.spec.acquire_timeout_seconds) +
                            "s (acquireTimeoutSeconds) without getting lock " + w_.lock_name;
      held = condition(prev, kConditionHeld, "False", reason::kTimedOut, message, gen);
      event(lease, true, reason::kTimedOut, message);
    } else {
      s.phase = Phase::kPending;
      if (c.pod) s.queue_position = live_ahead;
      const Condition* old = prev.condition(kConditionHeld);
      if (!w_.malformed_document.empty()) {
        held = condition(prev, kConditionHeld, "False", reason::kMalformedLockDocument, w_.malformed_document,
                         gen);
        if (!old || old->reason != reason::kMalformedLockDocument)
          event(lease, true, reason::kMalformedLockDocument, w_.malformed_document);
      } else if (old && old->status == "False" && is_loss_reason(old->reason)) {
        held = *old;  // still waiting after a loss: keep why and since when
        held.observed_generation = gen;
      } else {
        held = condition(prev, kConditionHeld, "False", reason::kWaiting, waiting_message(c), gen);
        if (old && old->status == "False" && old->reason == reason::kWaiting)
          held.last_transition_time = old->last_transition_time;
      }
    }
    s.conditions.push_back(held);
    add_backend_condition(lease, s);
    return s;
  }

  std::string waiting_message(const ClaimView& c) const {
    if (!c.pod) {
      return c.lease->spec.election_mode() ? "no live pod matches the selector"
                                           : "waiting for pod " + c.lease->spec.pod_name + " to be live";
    }
    if (w_.document)
      return "lock " + w_.lock_name + " is held by " + pod_name_of(w_.document->state.doc.holder);
    return "waiting for lock " + w_.lock_name;
  }

  // Why a claim whose status says Held holds nothing now.
  std::string loss_reason(const LeaseRecord& lease) const {
    if (w_.document && w_.document->state.doc.lease_uid == lease.meta.uid &&
        !w_.document->revoked_reason.empty())
      return w_.document->revoked_reason;
    if (lease.status.holder) {
      const PodState* p = pod(lease.status.holder->pod_name);
      HolderHealth health = judge_holder(p, lease.status.holder->pod_uid, 0, w_.mono);
      if (health.health == Health::kConfirmedDead) return health.reason;
      if (w_.recent_grant && w_.recent_grant->from_pod == lease.status.holder->pod_name &&
          !w_.recent_grant->takeover_reason.empty())
        return w_.recent_grant->takeover_reason;
      if (p && p->unready_since) return reason::kPodNotReady;
    }
    return reason::kExpired;
  }

  void plan_finalizers() {
    for (const ClaimView& c : claims_) {
      const LeaseRecord& lease = *c.lease;
      const bool named_by_document = w_.document && w_.document->state.doc.lease_uid == lease.meta.uid;
      // Only a claim that holds the lock has something to release when it is deleted: the
      // finalizer goes on with the grant. (A grant whose Lease vanishes before its finalizer
      // is written is released from the controller's memory, or expires.)
      if (!lease.being_deleted && !lease.has_finalizer() && named_by_document)
        d_.add_finalizer.push_back(lease.meta.name);
      if (lease.being_deleted && lease.has_finalizer() && !named_by_document && w_.malformed_document.empty())
        d_.remove_finalizer.push_back(lease.meta.name);
    }
  }

  const LockWorld& w_;
  std::vector<ClaimView> claims_;
  ClaimView* owner_ = nullptr;
  Decision d_;
};

}  // namespace

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
  const Condition* held = lease.status.condition(kConditionHeld);
  if (held && held->status == "False" && is_loss_reason(held->reason)) return held->last_transition_time;
  return lease.creation_time;
}

Decision decide(const LockWorld& world) {
  return Decider(world).run();
}

}  // namespace eslease::controller
