#include "controller/claim_queue.h"

#include <algorithm>
#include <map>

namespace eslease::controller {
namespace {

// Of two claims on one lock from the same pod, the later-created one is Invalid.
std::vector<const LeaseRecord*> oldest_first(const LockWorld& world) {
  std::vector<const LeaseRecord*> by_age;
  by_age.reserve(world.claims.size());
  for (const LeaseRecord& lease : world.claims) by_age.push_back(&lease);
  std::sort(by_age.begin(), by_age.end(), [](const LeaseRecord* a, const LeaseRecord* b) {
    return std::tie(a->creation_time, a->meta.name) < std::tie(b->creation_time, b->meta.name);
  });
  return by_age;
}

// Whether a valid claim ended for good: timed out, or released by its finished pod (a new
// pod under the same name starts a new wait).
void mark_terminal(const LockWorld& world, ClaimView& view) {
  const LeaseRecord& lease = *view.lease;
  view.timed_out = lease.status.phase == Phase::kTimedOut;
  if (!lease.spec.election_mode() && lease.status.phase == Phase::kReleased && lease.status.holder) {
    const PodState* p = world.pod(lease.spec.pod_name);
    view.released = !p || p->record.meta.uid == lease.status.holder->pod_uid;
  }
}

const PodState* live_pod_for(const LockWorld& world, const LeaseRecord& lease) {
  if (lease.spec.election_mode()) return election_pod(world, lease, "");
  const PodState* p = world.pod(lease.spec.pod_name);
  return p && grantable(*p) ? p : nullptr;
}

}  // namespace

std::string name_of(const std::string& holder) {
  const auto slash = holder.find('/');
  return slash == std::string::npos ? holder : holder.substr(slash + 1);
}

std::tuple<Priority, WallTime, WallTime, const std::string&> queue_rank(const ClaimView& claim,
                                                                        WallTime waiting_since) {
  return {claim.lease->spec.priority, waiting_since, claim.lease->creation_time, claim.lease->meta.name};
}

bool held_by(const LockWorld& world, const LeaseRecord& lease) {
  auto holds = [&](const DocumentView& grant) {
    return grant.state.doc.lease_uid == lease.meta.uid && grant.renewing && !grant.revoked;
  };
  return (world.document && holds(*world.document)) ||
         std::any_of(world.grants.begin(), world.grants.end(), holds);
}

namespace {

// Claims that state a lock's capacity: valid, not being deleted, not ended.
bool states_capacity(const LeaseRecord& lease) {
  return lease.spec.problem.empty() && !lease.being_deleted && lease.status.phase != Phase::kTimedOut &&
         lease.status.phase != Phase::kReleased;
}

}  // namespace

const LeaseRecord* capacity_source(const std::vector<LeaseRecord>& claims, const std::string& lock) {
  const LeaseRecord* oldest = nullptr;
  for (const LeaseRecord& lease : claims) {
    if (!states_capacity(lease) || (!lock.empty() && !lease.spec.claims_lock(lock))) continue;
    if (!oldest ||
        std::tie(lease.creation_time, lease.meta.name) < std::tie(oldest->creation_time, oldest->meta.name))
      oldest = &lease;
  }
  return oldest;
}

std::int64_t lock_capacity(const std::vector<LeaseRecord>& claims, const std::string& lock) {
  const LeaseRecord* source = capacity_source(claims, lock);
  return source ? source->spec.capacity : 1;
}

bool any_lock_set(const std::vector<LeaseRecord>& claims) {
  return std::any_of(claims.begin(), claims.end(), [](const LeaseRecord& l) { return l.spec.is_set(); });
}

const PodState* election_pod(const LockWorld& world, const LeaseRecord& lease,
                             const std::string& exclude_uid) {
  const PodState* best = nullptr;
  auto rank = [](const PodState& p) {
    return std::tuple<int, WallTime, const std::string&>(p.record.ready == ReadyState::kTrue ? 0 : 1,
                                                         p.record.creation_time, p.record.meta.name);
  };
  for (const auto& [name, state] : world.pods) {
    if (!lease.spec.selector->matches(state.record.labels) || !grantable(state)) continue;
    if (!exclude_uid.empty() && state.record.meta.uid == exclude_uid) continue;
    if (!best || rank(state) < rank(*best)) best = &state;
  }
  return best;
}

namespace {

// Each lock of the world and the claim its capacity comes from (capacity_source).
std::map<std::string, const LeaseRecord*> capacity_sources(const LockWorld& world) {
  std::map<std::string, const LeaseRecord*> sources;
  for (const LockShape& lock : shaped_locks(world))
    if (const LeaseRecord* source = capacity_source(world.claims, lock.name)) sources[lock.name] = source;
  return sources;
}

// Why `lease` cannot be served on the world's locks, or "": a capacity other than a lock's,
// or a pod that already claims one of its locks through an older Lease.
std::string conflict(const LeaseRecord& lease, const std::map<std::string, const LeaseRecord*>& sources,
                     std::map<std::pair<std::string, std::string>, std::string>& first_claim_of_pod) {
  for (const std::string& lock : lease.spec.locks()) {
    auto source = sources.find(lock);
    if (source != sources.end() && lease.spec.capacity != source->second->spec.capacity)
      return "lock " + lock + " has capacity " + std::to_string(source->second->spec.capacity) +
             " (as Lease " + source->second->meta.name + " states); this claim states " +
             std::to_string(lease.spec.capacity);
  }
  if (lease.spec.election_mode() || lease.being_deleted) return "";
  for (const std::string& lock : lease.spec.locks()) {
    auto it = first_claim_of_pod.find({lease.spec.pod_name, lock});
    if (it != first_claim_of_pod.end())
      return "pod " + lease.spec.pod_name + " already claims lock " + lock + " through Lease " + it->second;
  }
  for (const std::string& lock : lease.spec.locks())
    first_claim_of_pod.emplace(std::make_pair(lease.spec.pod_name, lock), lease.meta.name);
  return "";
}

}  // namespace

ClaimQueue classify_claims(const LockWorld& world) {
  ClaimQueue queue;
  std::map<std::pair<std::string, std::string>, std::string> first_claim_of_pod;  // (pod, lock) -> Lease
  const std::map<std::string, const LeaseRecord*> sources = capacity_sources(world);
  for (const LeaseRecord* lease : oldest_first(world)) {
    ClaimView view;
    view.lease = lease;
    view.invalid = lease->spec.problem;
    if (view.invalid.empty()) view.invalid = conflict(*lease, sources, first_claim_of_pod);
    view.waiting_since = waiting_since(*lease);
    // A claim whose status still says Held but which holds nothing now has just lost.
    if (lease->status.phase == Phase::kHeld && !held_by(world, *lease)) view.waiting_since = world.now;
    if (view.invalid.empty()) {
      mark_terminal(world, view);
      view.pod = live_pod_for(world, *lease);
    }
    view.waiting = view.invalid.empty() && !view.timed_out && !view.released && !lease->being_deleted &&
                   !held_by(world, *lease);
    view.try_lock = lease->spec.acquire_timeout_seconds == 0 && lease->status.phase == Phase::kNone;
    if (view.waiting && lease->spec.acquire_timeout_seconds && !view.try_lock) {
      const WallTime deadline =
          view.waiting_since + std::chrono::seconds(*lease->spec.acquire_timeout_seconds);
      if (world.now >= deadline) {
        view.timed_out = true;
        view.waiting = false;
      } else {
        const MonoTime at = world.mono + std::chrono::duration_cast<Millis>(deadline - world.now);
        if (!queue.next_timeout || at < *queue.next_timeout) queue.next_timeout = at;
      }
    }
    queue.claims.push_back(view);
  }
  std::sort(queue.claims.begin(), queue.claims.end(),
            [](const ClaimView& a, const ClaimView& b) { return queue_rank(a) < queue_rank(b); });
  if (world.document) {
    const lock::LockDocument& doc = world.document->state.doc;
    for (const ClaimView& c : queue.claims)
      if (c.lease->meta.uid == doc.lease_uid && object_key(world.ns, c.lease->meta.name) == doc.lease)
        queue.owner = &c;
  }
  return queue;
}

std::optional<NextGrant> next_claim(const LockWorld& world, const ClaimQueue& queue,
                                    const ClaimView* losing_owner) {
  auto first_waiting = [&]() -> std::optional<NextGrant> {
    for (const ClaimView& c : queue.claims)
      // A set is granted only with all its locks, in a shaped world: never here, lock by lock.
      if (&c != losing_owner && c.waiting && c.pod && !c.lease->spec.is_set())
        return NextGrant{&c, c.pod, c.waiting_since};
    return std::nullopt;
  };
  const ClaimView* owner = losing_owner;
  const bool owner_eligible = owner && owner->invalid.empty() && !owner->lease->being_deleted &&
                              !owner->timed_out && !owner->released;
  if (owner_eligible && owner->lease->spec.election_mode()) {
    if (const PodState* other = election_pod(world, *owner->lease, world.document->state.doc.holder_uid))
      return NextGrant{owner, other, owner->waiting_since};
    return first_waiting();
  }
  std::optional<NextGrant> next = first_waiting();
  if (owner_eligible && owner->pod) {
    // It waits again from now, behind those already waiting.
    if (!next || queue_rank(*owner, world.now) < queue_rank(*next->claim))
      return NextGrant{owner, owner->pod, world.now};
  }
  return next;
}

}  // namespace eslease::controller
