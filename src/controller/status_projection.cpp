#include "controller/status_projection.h"

#include <algorithm>

#include "controller/grant_rules.h"

namespace eslease::controller {
namespace {

using api::Reason;

// Queue positions are kept exact for the first claims only: a hand-over then rewrites at
// most this many waiters, however long the queue (`eslease status` prints all of it).
constexpr int kExactPositions = 10;
// A claim left out of the queue for now: an earlier grant of its own is still on one of its
// locks (revoked, or made but never confirmed to it) and has to end first.
constexpr int kNotInLine = -1;

std::optional<int> position(const ClaimView& c, int live_ahead) {
  // No place in line without a live pod.
  if (!c.pod || live_ahead >= kExactPositions || live_ahead == kNotInLine) return std::nullopt;
  return live_ahead;
}

// The claim's lock, or its set, as kubectl's Lock column shows it.
std::string lock_shown(const LeaseSpec& spec) {
  return spec.is_set() ? join(spec.lock_names, "+") : spec.lock_name;
}

// The latest grant this reconcile made that `matches`, if any.
template <typename Match>
const RecentGrant* recent_grant(const LockWorld& world, Match matches) {
  for (auto it = world.recent_grants.rbegin(); it != world.recent_grants.rend(); ++it)
    if (matches(*it)) return &*it;
  return nullptr;
}

// The claim's lock, or its set, as messages name it.
std::string locks_named(const LeaseSpec& spec) {
  return spec.is_set() ? "lock set " + join(spec.lock_names, "+") : "lock " + spec.lock_name;
}

class Projector {
 public:
  Projector(const LockWorld& world, Decision& decision) : w_(world), d_(decision) {}

  // The phase a claim is in, and the function that writes its status.
  LeaseStatus project(const ClaimView& c, int live_ahead) {
    const LeaseStatus& prev = c.lease->status;
    LeaseStatus s;
    if (!c.invalid.empty()) {
      s = invalid(c);
    } else if (c.holds()) {
      s = held(c, *c.grant);
    } else if (c.released || prev.phase == Phase::kTimedOut) {
      s = ended(c);
    } else if (prev.phase == Phase::kHeld) {
      s = lost(c, live_ahead);
    } else if (c.timed_out) {
      s = timed_out(c);
    } else if (c.try_lock && c.waiting()) {
      s = not_granted_at_once(c);
    } else {
      s = waiting(c, live_ahead);
    }
    add_backend_condition(*c.lease, s);
    return s;
  }

  void add_backend_condition(const LeaseRecord& lease, LeaseStatus& s) {
    if (!w_.grants_refused.empty()) {
      backend_unavailable(lease, s, Reason::kTokensUnproven, w_.grants_refused);
    } else if (w_.backend_available) {
      s.conditions.push_back(condition(lease, api::kConditionBackendAvailable, "True",
                                       Reason::kBackendReachable, "Elasticsearch answers"));
    } else {
      backend_unavailable(lease, s, Reason::kBackendUnavailable, "Elasticsearch cannot be reached; retrying");
    }
  }

 private:
  // BackendAvailable=False, with a Warning event when the reason is new.
  void backend_unavailable(const LeaseRecord& lease, LeaseStatus& s, Reason why, const std::string& message) {
    s.conditions.push_back(condition(lease, api::kConditionBackendAvailable, "False", why, message));
    const Condition* old = lease.status.condition(api::kConditionBackendAvailable);
    if (!old || old->status != "False" || old->reason != api::to_string(why))
      event(lease, true, why, message);
  }

  // What every projected status carries over from the previous one.
  static LeaseStatus carried_over(const LeaseRecord& lease) {
    LeaseStatus s;
    s.observed_generation = lease.generation;
    s.transitions = lease.status.transitions;
    s.last_takeover = lease.status.last_takeover;
    s.queued_at = lease.status.queued_at;
    s.lock = lock_shown(lease.spec);
    return s;
  }

  LeaseStatus invalid(const ClaimView& c) {
    const LeaseRecord& lease = *c.lease;
    LeaseStatus s = carried_over(lease);
    s.phase = Phase::kInvalid;
    s.conditions.push_back(condition(lease, api::kConditionHeld, "False", Reason::kInvalidClaim, c.invalid));
    if (lease.status.phase != Phase::kInvalid) event(lease, true, Reason::kInvalid, c.invalid);
    return s;
  }

  LeaseStatus held(const ClaimView& c, const GrantView& grant) {
    const LeaseRecord& lease = *c.lease;
    const LeaseStatus& prev = lease.status;
    const lock::LockDocument& doc = grant.state.doc;
    LeaseStatus s = carried_over(lease);
    s.phase = Phase::kHeld;
    const std::string pod_name = name_of(doc.holder);
    s.holder = HolderRef{pod_name, doc.holder_uid, doc.node};
    s.fencing_token = std::to_string(grant.state.token);
    s.acquire_time = doc.acquired_at;
    s.slot = slot_shown(lease, grant);
    s.transitions = std::max<std::int64_t>(0, doc.transitions - 1);
    const RecentGrant* recent =
        recent_grant(w_, [&](const RecentGrant& g) { return g.lease == lease.meta.name; });
    const bool takeover = recent && recent->takeover_reason;
    if (takeover)
      s.last_takeover = Takeover{recent->from_pod, api::to_string(*recent->takeover_reason), recent->time};
    const std::string message = "held by pod " + pod_name + " with fencing token " + s.fencing_token;
    const Reason why = takeover ? Reason::kTakenOver : Reason::kAcquired;
    Condition condition_held = condition(lease, api::kConditionHeld, "True", why, message);
    if (const Condition* old = prev.condition(api::kConditionHeld);
        old && old->status == "True" && prev.fencing_token == s.fencing_token)
      condition_held.reason = old->reason;  // a renewal changes nothing but the times
    s.conditions.push_back(condition_held);
    if (prev.phase != Phase::kHeld || prev.fencing_token != s.fencing_token) {
      event(lease, false, why,
            takeover ? message + " after " + describe_loss(*recent->takeover_reason, recent->from_pod)
                     : message);
    }
    return s;
  }

  // Terminal (Released for its finished pod, or TimedOut): only the conditions' generation
  // and the backend change.
  LeaseStatus ended(const ClaimView& c) {
    const LeaseRecord& lease = *c.lease;
    const LeaseStatus& prev = lease.status;
    LeaseStatus s = prev;
    s.observed_generation = lease.generation;
    s.conditions.clear();
    const Condition* old = prev.condition(api::kConditionHeld);
    Condition condition_held = old ? *old
                                   : condition(lease, api::kConditionHeld, "False",
                                               c.released ? Reason::kReleased : Reason::kTimedOut, "");
    condition_held.observed_generation = lease.generation;
    s.conditions.push_back(condition_held);
    return s;
  }

  // It held the lock and does not any more: say why, and wait again from now (or end, if
  // its pod finished).
  LeaseStatus lost(const ClaimView& c, int live_ahead) {
    const LeaseRecord& lease = *c.lease;
    const LeaseStatus& prev = lease.status;
    LeaseStatus s = carried_over(lease);
    const Reason why = loss_reason(lease);
    const std::string pod_name = prev.holder ? prev.holder->pod_name : "";
    const bool finished = why == Reason::kPodSucceeded || why == Reason::kPodFailed;
    if (finished && !lease.spec.election_mode()) {
      s.phase = Phase::kReleased;
      s.holder = prev.holder;
      const std::string message = describe_loss(why, pod_name) + "; the claim is released";
      s.conditions.push_back(condition(lease, api::kConditionHeld, "False", why, message));
      event(lease, false, Reason::kReleased, message);
      return s;
    }
    s.phase = Phase::kPending;
    s.queue_position = position(c, live_ahead);
    Condition condition_held =
        condition(lease, api::kConditionHeld, "False", why, describe_loss(why, pod_name));
    condition_held.last_transition_time = w_.now;
    s.conditions.push_back(condition_held);
    // A holder confirmed dead reads nothing, and its successor's TakenOver event names it and
    // why: one event per hand-over is enough (the condition above keeps the reason here).
    const GrantView* successor = shown_grant(lease);
    const bool successor_told = shown_holder_health(w_, lease).health == Health::kConfirmedDead &&
                                successor && successor->state.doc.lease_uid != lease.meta.uid;
    if (!successor_told)
      event(lease, why == Reason::kRenewalFailed, why, "lost the lock: " + describe_loss(why, pod_name));
    return s;
  }

  LeaseStatus timed_out(const ClaimView& c) {
    const LeaseRecord& lease = *c.lease;
    LeaseStatus s = carried_over(lease);
    s.phase = Phase::kTimedOut;
    const std::string message = "waited " + std::to_string(*lease.spec.acquire_timeout_seconds) +
                                "s (acquireTimeoutSeconds) without getting " + locks_named(lease.spec);
    s.conditions.push_back(condition(lease, api::kConditionHeld, "False", Reason::kTimedOut, message));
    event(lease, true, Reason::kTimedOut, message);
    return s;
  }

  // A try-lock (acquireTimeoutSeconds 0) this decision did not grant ends now, saying what
  // stood in its way: Busy when its pod is live and the lock is taken (or kept for claims
  // ranked ahead), else TimedOut with the reason it could not be served.
  LeaseStatus not_granted_at_once(const ClaimView& c) {
    const LeaseRecord& lease = *c.lease;
    LeaseStatus s = carried_over(lease);
    s.phase = Phase::kTimedOut;
    Reason why = Reason::kBusy;
    std::string message;
    if (!c.pod) {
      why = Reason::kTimedOut;
      message = (lease.spec.election_mode() ? std::string("no live pod matches the selector")
                                            : "pod " + lease.spec.pod_name + " is not live") +
                ", so " + locks_named(lease.spec) + " could not be granted at once";
    } else if (!w_.malformed_document.empty()) {
      why = Reason::kMalformedLockDocument;
      message = locks_named(lease.spec) + " could not be granted at once: " + w_.malformed_document;
    } else {
      const std::vector<std::string> holders = holders_of(lease.spec);
      message = locks_named(lease.spec) + (holders.empty() ? " is kept for claims ranked ahead of it"
                                                           : " is held by " + join(holders, ", "));
    }
    message += " (acquireTimeoutSeconds 0: granted only if it can be at once)";
    s.conditions.push_back(condition(lease, api::kConditionHeld, "False", why, message));
    event(lease, true, why, message);
    return s;
  }

  // The pods holding any of the claim's locks, by name, each once.
  std::vector<std::string> holders_of(const LeaseSpec& spec) const {
    std::vector<std::string> holders;
    for (const GrantView& grant : w_.grants) {
      const bool on_its_locks = std::any_of(grant.slots.begin(), grant.slots.end(),
                                            [&](const SlotRef& ref) { return spec.claims_lock(ref.lock); });
      const std::string pod = name_of(grant.state.doc.holder);
      if (on_its_locks && std::find(holders.begin(), holders.end(), pod) == holders.end())
        holders.push_back(pod);
    }
    return holders;
  }

  LeaseStatus waiting(const ClaimView& c, int live_ahead) {
    const LeaseRecord& lease = *c.lease;
    const LeaseStatus& prev = lease.status;
    LeaseStatus s = carried_over(lease);
    s.phase = Phase::kPending;
    s.queue_position = position(c, live_ahead);
    // Its place among claims that came in the same second, kept across restarts.
    if (!s.queued_at && prev.phase == Phase::kNone) s.queued_at = lease.arrived;
    const Condition* old = prev.condition(api::kConditionHeld);
    Condition condition_held;
    if (!w_.malformed_document.empty()) {
      condition_held = condition(lease, api::kConditionHeld, "False", Reason::kMalformedLockDocument,
                                 w_.malformed_document);
      if (!old || old->reason != api::to_string(Reason::kMalformedLockDocument))
        event(lease, true, Reason::kMalformedLockDocument, w_.malformed_document);
    } else if (old && api::waits_since_loss(old->status, old->reason)) {
      condition_held = *old;  // still waiting after a loss: keep why and since when
      condition_held.observed_generation = lease.generation;
    } else {
      condition_held =
          condition(lease, api::kConditionHeld, "False", Reason::kWaiting, waiting_message(c, live_ahead));
    }
    s.conditions.push_back(condition_held);
    return s;
  }

  // Beyond the first claims the message names neither the holder nor a count, so a
  // hand-over does not rewrite it.
  std::string waiting_message(const ClaimView& c, int live_ahead) const {
    if (!c.pod) {
      return c.lease->spec.election_mode() ? "no live pod matches the selector"
                                           : "waiting for pod " + c.lease->spec.pod_name + " to be live";
    }
    const LeaseSpec& spec = c.lease->spec;
    if (live_ahead == kNotInLine && c.grant)
      return "waiting for its earlier grant of " + locks_named(spec) + " to end";
    if (live_ahead >= kExactPositions)
      return "more than " + std::to_string(kExactPositions) + " live claims are ahead in the queue of " +
             locks_named(spec) + "; eslease status shows all of it";
    const std::int64_t capacity = spec.capacity;
    const std::string of =
        capacity > 1 ? std::string(spec.access == lock::Access::kShared ? "a slot" : "every slot") + " of "
                     : "";
    if (spec.is_set())
      return "waiting for " + of + "every lock of the set " + join(spec.lock_names, ", ") +
             (capacity > 1 ? " (capacity " + std::to_string(capacity) + " each)" : "");
    if (capacity > 1)
      return "waiting for " + of + "lock " + spec.lock_name + " (capacity " + std::to_string(capacity) + ")";
    if (const GrantView* holder = w_.grant_on(SlotRef{spec.lock_name, 0}))
      return "lock " + spec.lock_name + " is held by " + name_of(holder->state.doc.holder);
    return "waiting for lock " + spec.lock_name;
  }

  // status.slot: the grant's slot on the claim's (first) lock when that lock has several.
  std::optional<std::int64_t> slot_shown(const LeaseRecord& lease, const GrantView& grant) const {
    if (w_.capacity_of(lease.spec.lock_name) <= 1) return std::nullopt;
    for (const SlotRef& ref : grant.slots)
      if (ref.lock == lease.spec.lock_name) return ref.slot;
    return grant.state.doc.slot;
  }

  // The grant a claim's status is about: its own; else, when its status shows one, whichever
  // grant is on that slot now.
  const GrantView* shown_grant(const LeaseRecord& lease) const {
    if (const GrantView* own = w_.grant_of(lease)) return own;
    if (lease.status.phase != Phase::kHeld) return nullptr;
    return w_.grant_on(SlotRef{lease.spec.lock_name, lease.status.slot.value_or(0)});
  }

  // Why a claim whose status says Held holds nothing now.
  Reason loss_reason(const LeaseRecord& lease) const {
    if (const GrantView* own = w_.grant_of(lease); own && own->revoked) return *own->revoked;
    if (lease.status.holder) {
      const PodState* p = w_.pod(lease.status.holder->pod_name);
      const HolderHealth health = shown_holder_health(w_, lease);
      if (health.health == Health::kConfirmedDead) return *health.reason;
      if (const RecentGrant* taken = recent_grant(w_, [&](const RecentGrant& g) {
            return g.from_pod == lease.status.holder->pod_name && g.takeover_reason;
          }))
        return *taken->takeover_reason;
      if (p && p->unready_since) return Reason::kPodNotReady;
    }
    return Reason::kExpired;
  }

  // A condition of `lease` as of now, keeping its transition time while its status stays.
  Condition condition(const LeaseRecord& lease, const char* type, const char* status, Reason why,
                      std::string message) const {
    Condition c{type, status, api::to_string(why), std::move(message), w_.now, lease.generation};
    if (const Condition* old = lease.status.condition(type); old && old->status == c.status)
      c.last_transition_time = old->last_transition_time;
    return c;
  }

  void event(const LeaseRecord& lease, bool warning, Reason why, std::string message) {
    d_.events.push_back({lease.meta.name, warning, why, std::move(message)});
  }

  const LockWorld& w_;
  Decision& d_;
};

// A try-lock this decision could not have granted (a write failed): it gets no status yet, so
// the retried reconcile still decides it.
bool awaits_its_verdict(const LockWorld& world, const ClaimView& c) {
  return c.try_lock && c.waiting() && !world.act;
}

}  // namespace

void project_statuses(const LockWorld& world, const ClaimQueue& queue,
                      const std::map<std::string, std::int64_t>& positions, Decision& decision) {
  Projector projector(world, decision);
  for (const ClaimView& c : queue.claims) {
    const LeaseRecord& lease = *c.lease;
    if (lease.being_deleted || awaits_its_verdict(world, c)) continue;
    const auto position = positions.find(lease.meta.name);
    decision.statuses[lease.meta.name] =
        projector.project(c, position == positions.end() ? kNotInLine : static_cast<int>(position->second));
  }
}

void keep_statuses(const LockWorld& world, const ClaimQueue& queue, Decision& decision) {
  Projector projector(world, decision);
  for (const ClaimView& c : queue.claims) {
    const LeaseRecord& lease = *c.lease;
    if (lease.being_deleted) continue;
    LeaseStatus s = lease.status;
    std::erase_if(s.conditions, [](const Condition& x) { return x.type == api::kConditionBackendAvailable; });
    // A claim never decided waits, and says for what: it is not served while the lock
    // documents cannot be read.
    if (s.phase == Phase::kNone && c.invalid.empty()) {
      s.phase = Phase::kPending;
      s.lock = lock_shown(lease.spec);
      s.observed_generation = lease.generation;
      s.queued_at = lease.arrived;
      s.conditions.push_back(Condition{
          api::kConditionHeld, "False", api::to_string(Reason::kWaiting),
          "waiting for Elasticsearch to answer before " + locks_named(lease.spec) + " can be granted",
          world.now, lease.generation});
    }
    projector.add_backend_condition(lease, s);
    decision.statuses[lease.meta.name] = std::move(s);
  }
}

}  // namespace eslease::controller
