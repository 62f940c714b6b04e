// The gauges a metrics scrape reads from the caches: claims by phase and priority, the
// waiters a live pod could serve, and the lock slots held and free. Read in place, on the
// scraping thread, as every replica counts them; the last two take a pass over every Lease,
// so they are recounted only as often as that stays cheap (Controller::publish_claim_metrics).
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "controller/claim_queue.h"
#include "controller/controller.h"
#include "controller/liveness.h"

namespace eslease::controller {

void Controller::publish_claim_metrics() {
  const ClaimCounts counts = index_.counts();
  std::lock_guard lock(recount_mutex_);
  const MonoTime started = clock_.monotonic();
  if (recount_pace_.due(started)) {
    Recount recount;
    recount.waiters = count_waiters();
    count_slots(recount);
    recounted_ = recount;
    recount_pace_.ran(started, clock_.monotonic());
  }
  observer_.claims(counts, recounted_.waiters);
  observer_.lock_slots(recounted_.slots_held, recounted_.slots_free);
}

int Controller::count_waiters() const {
  // A waiter is a claim that can be served: a claim whose pod is gone, finished or unready
  // (election: no live pod matches) waits for a live pod, not for the lock. The claims come from
  // the claim index, the pods are read in place: a recount reads no Lease, and copies a pod
  // only when an election claim's selector is matched.
  std::map<std::string, std::vector<PodRecord>> live_pods;  // by namespace, read once
  auto live_in = [&](const std::string& ns) -> const std::vector<PodRecord>& {
    const auto found = live_pods.find(ns);
    if (found != live_pods.end()) return found->second;
    std::vector<PodRecord>& live = live_pods[ns];
    cluster().for_each_pod(ns, [&](const PodRecord& pod) {
      if (tracker_.grantable(pod)) live.push_back(pod);
    });
    return live;
  };
  int waiters = 0;
  for (const ClaimIndex::UnservedClaim& claim : index_.unserved_claims()) {
    bool live = false;
    if (claim.selector) {
      const auto& pods = live_in(claim.ns);
      live = std::any_of(pods.begin(), pods.end(),
                         [&](const PodRecord& pod) { return claim.selector->matches(pod.labels); });
    } else if (!claim.pod_key.empty()) {
      cluster().read_pod(claim.pod_key, [&](const PodRecord& pod) { live = tracker_.grantable(pod); });
    }
    waiters += live ? 1 : 0;
  }
  return waiters;
}

// Every claimed lock counts its capacity; a Shared holder holds one slot, an Exclusive one all.
// One pass over the Leases, copying none.
void Controller::count_slots(Recount& recount) const {
  struct Slots {
    CapacityOf capacity;
    std::int64_t shared_held = 0;
    std::int64_t exclusive_held = 0;
  };
  std::unordered_map<std::string, Slots> by_lock;
  cluster().for_each_lease([&](const LeaseRecord& lease) {
    // A set's claim is one of each lock it names, and holds each while Held.
    for (const std::string& lock : lease.spec.locks()) {
      if (lock.empty()) continue;
      Slots& slots = by_lock[object_key(lease.meta.ns, lock)];
      slots.capacity.consider(lease);
      if (lease.status.phase != Phase::kHeld) continue;
      (lease.spec.access == lock::Access::kShared ? slots.shared_held : slots.exclusive_held) += 1;
    }
  });
  std::int64_t held = 0;
  std::int64_t all = 0;
  for (const auto& [lock_id, slots] : by_lock) {
    const std::int64_t capacity = slots.capacity.shape(lock_id).capacity;
    all += capacity;
    held += std::min(slots.shared_held + slots.exclusive_held * capacity, capacity);
  }
  recount.slots_held = held;
  recount.slots_free = all - held;
}

}  // namespace eslease::controller
