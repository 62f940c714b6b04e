#include "controller/claim_queue.h"

#include <algorithm>
#include <map>

namespace eslease::controller {
namespace {

// Of two claims on one lock from the same pod, the later-created one is Invalid.
std::vector<const LeaseRecord*> oldest_first(const std::vector<LeaseRecord>& claims) {
  std::vector<const LeaseRecord*> by_age;
  by_age.reserve(claims.size());
  for (const LeaseRecord& lease : claims) by_age.push_back(&lease);
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

// Claims that state a lock's capacity: valid, not being deleted, not ended.
bool states_capacity(const LeaseRecord& lease) {
  return lease.spec.problem.empty() && !lease.being_deleted && lease.status.phase != Phase::kTimedOut &&
         lease.status.phase != Phase::kReleased;
}

// Why `lease` cannot be served on the world's locks, or "": a capacity other than a lock's,
// or a pod that already claims one of its locks through an older Lease.
std::string conflict(const LockWorld& world, const LeaseRecord& lease,
                     std::map<std::pair<std::string, std::string>, std::string>& first_claim_of_pod) {
  for (const std::string& name : lease.spec.locks()) {
    const LockShape* lock = world.lock(name);
    if (lock && !lock->stated_by.empty() && lease.spec.capacity != lock->capacity)
      return "lock " + name + " has capacity " + std::to_string(lock->capacity) + " (as Lease " +
             lock->stated_by + " states); this claim states " + std::to_string(lease.spec.capacity);
  }
  if (lease.spec.election_mode() || lease.being_deleted) return "";
  for (const std::string& name : lease.spec.locks()) {
    auto it = first_claim_of_pod.find({lease.spec.pod_name, name});
    if (it != first_claim_of_pod.end())
      return "pod " + lease.spec.pod_name + " already claims lock " + name + " through Lease " + it->second;
  }
  for (const std::string& name : lease.spec.locks())
    first_claim_of_pod.emplace(std::make_pair(lease.spec.pod_name, name), lease.meta.name);
  return "";
}

}  // namespace

std::string name_of(const std::string& holder) {
  const auto slash = holder.find('/');
  return slash == std::string::npos ? holder : holder.substr(slash + 1);
}

std::tuple<Priority, WallTime, WallTime, const std::string&> queue_rank(const ClaimView& claim) {
  return {claim.lease->spec.priority, claim.waiting_since, claim.lease->creation_time,
          claim.lease->meta.name};
}

void CapacityOf::consider(const LeaseRecord& claim) {
  if (!states_capacity(claim)) return;
  if (!oldest_ ||
      std::tie(claim.creation_time, claim.meta.name) < std::tie(std::get<0>(*oldest_), std::get<1>(*oldest_)))
    oldest_.emplace(claim.creation_time, claim.meta.name, claim.spec.capacity);
}

LockShape CapacityOf::shape(const std::string& lock) const {
  if (!oldest_) return LockShape{lock, 1, ""};
  return LockShape{lock, std::get<2>(*oldest_), std::get<1>(*oldest_)};
}

std::vector<LockShape> lock_shapes(const std::vector<LeaseRecord>& claims,
                                   const std::vector<std::string>& locks) {
  std::vector<LockShape> shapes;
  shapes.reserve(locks.size());
  for (const std::string& name : locks) {
    CapacityOf capacity;
    for (const LeaseRecord& lease : claims)
      if (lease.spec.claims_lock(name)) capacity.consider(lease);
    shapes.push_back(capacity.shape(name));
  }
  return shapes;
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

const ClaimView* ClaimQueue::owner_of(const LockWorld& world, const GrantView& grant) const {
  const lock::LockDocument& doc = grant.state.doc;
  for (const ClaimView& c : claims)
    if (c.lease->meta.uid == doc.lease_uid && is_object_key(doc.lease, world.ns, c.lease->meta.name))
      return &c;
  return nullptr;
}

const ClaimView* ClaimQueue::named(const std::string& lease) const {
  for (const ClaimView& c : claims)
    if (c.lease->meta.name == lease) return &c;
  return nullptr;
}

ClaimQueue classify_claims(const LockWorld& world) {
  ClaimQueue queue;
  std::map<std::pair<std::string, std::string>, std::string> first_claim_of_pod;  // (pod, lock) -> Lease
  for (const LeaseRecord* lease : oldest_first(world.claims)) {
    ClaimView view;
    view.lease = lease;
    view.invalid = lease->spec.problem;
    if (view.invalid.empty()) view.invalid = conflict(world, *lease, first_claim_of_pod);
    view.grant = world.grant_of(*lease);
    view.waiting_since = waiting_since(*lease);
    // A claim whose status still says Held but which holds nothing now has just lost.
    if (lease->status.phase == Phase::kHeld && !view.holds()) view.waiting_since = world.now;
    if (view.invalid.empty()) {
      mark_terminal(world, view);
      view.pod = live_pod_for(world, *lease);
    }
    view.try_lock = lease->spec.acquire_timeout_seconds == 0 && lease->status.phase == Phase::kNone;
    if (view.eligible() && !view.holds() && lease->spec.acquire_timeout_seconds && !view.try_lock) {
      const WallTime deadline =
          view.waiting_since + std::chrono::seconds(*lease->spec.acquire_timeout_seconds);
      if (world.now >= deadline) {
        view.timed_out = true;
      } else {
        const MonoTime at = world.mono + std::chrono::duration_cast<Millis>(deadline - world.now);
        if (!queue.next_timeout || at < *queue.next_timeout) queue.next_timeout = at;
      }
    }
    queue.claims.push_back(view);
  }
  std::sort(queue.claims.begin(), queue.claims.end(),
            [](const ClaimView& a, const ClaimView& b) { return queue_rank(a) < queue_rank(b); });
  return queue;
}

}  // namespace eslease::controller
