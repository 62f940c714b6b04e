// Builds a LockWorld for the decision's table tests, on a fixed clock: claims, pods and grants
// added by name, on the lock "batch/report".
//
// A world has a shape, and everything built with the shape-free calls (claim, held, ...) takes
// it, so one row of the design's "Claims and phases" and "Liveness" runs on every shape alike:
//   kSingle     a lock of capacity 1 (one document)
//   kSemaphore  a lock of capacity 3, Shared claims; a grant made with held() shares the lock
//               with two filler holders on the other slots, so the lock is full as a single
//               lock is when held
//   kWriter     a lock of capacity 3, Exclusive claims: a grant holds every slot
//   kSet        the lock set [report, audit] of capacity 1 each: a grant holds both documents
// The calls ending in _on build any other shape for the rows that are about shapes.
#pragma once

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/claim_queue.h"
#include "controller/decision.h"

namespace eslease::controller::worlds {

using api::Reason;
using lock::Access;
using std::chrono::seconds;

inline const WallTime kT0 = std::chrono::system_clock::from_time_t(1'800'000'000);
inline const MonoTime kM0 = MonoTime{} + std::chrono::hours(1);

enum class Shape { kSingle, kSemaphore, kWriter, kSet };

inline std::string to_string(Shape shape) {
  switch (shape) {
    case Shape::kSingle:
      return "single";
    case Shape::kSemaphore:
      return "semaphore";
    case Shape::kWriter:
      return "writer";
    case Shape::kSet:
      return "set";
  }
  return "unknown";
}

inline constexpr Shape kShapes[] = {Shape::kSingle, Shape::kSemaphore, Shape::kWriter, Shape::kSet};

class World {
 public:
  // The claims a world may have: room for them is made up front, so the reference claim()
  // returns stays valid while more claims are added.
  static constexpr std::size_t kMaxClaims = 64;

  explicit World(Shape shape = Shape::kSingle) : shape_(shape) {
    w.ns = "batch";
    w.now = kT0;
    w.mono = kM0;
    w.claims.reserve(kMaxClaims);
    w.grants.reserve(kMaxClaims);
  }
  World(const World& other) : w(other.w), shape_(other.shape_), seen_gone_(other.seen_gone_) {
    w.claims.reserve(kMaxClaims);
    w.grants.reserve(kMaxClaims);
  }
  World& operator=(const World&) = delete;

  Shape shape() const { return shape_; }
  // The locks a claim of the world's shape names, its capacity and access.
  std::vector<std::string> shape_locks() const {
    return shape_ == Shape::kSet ? std::vector<std::string>{"report", "audit"}
                                 : std::vector<std::string>{"report"};
  }
  std::int64_t shape_capacity() const {
    return shape_ == Shape::kSemaphore || shape_ == Shape::kWriter ? 3 : 1;
  }
  Access shape_access() const { return shape_ == Shape::kWriter ? Access::kExclusive : Access::kShared; }

  // A claim-mode Lease of the world's shape created `age` before now.
  LeaseRecord& claim(const std::string& name, const std::string& pod,
                     Priority priority = Priority::kForeground, seconds age = seconds(100)) {
    return claim_on(shape_locks(), name, pod, shape_capacity(), shape_access(), priority, age);
  }
  // A claim-mode Lease on `locks` (one lock, or a set).
  LeaseRecord& claim_on(const std::vector<std::string>& locks, const std::string& name,
                        const std::string& pod, std::int64_t capacity = 1, Access access = Access::kShared,
                        Priority priority = Priority::kForeground, seconds age = seconds(100)) {
    if (w.claims.size() == kMaxClaims) throw std::length_error("a World holds at most kMaxClaims claims");
    LeaseRecord lease;
    lease.meta = {"batch", name, "uid-" + name, "1"};
    lease.generation = 1;
    lease.creation_time = kT0 - age;
    lease.finalizers = {api::kFinalizer};
    lease.spec.lock_name = locks.front();
    if (locks.size() > 1) lease.spec.lock_names = locks;
    lease.spec.capacity = capacity;
    lease.spec.access = access;
    lease.spec.pod_name = pod;
    lease.spec.priority = priority;
    w.claims.push_back(lease);
    return w.claims.back();
  }
  LeaseRecord& election(const std::string& name, const std::string& app, seconds age = seconds(100)) {
    LeaseRecord& lease = claim(name, "", Priority::kForeground, age);
    lease.spec.selector = LabelSelector{{{"app", LabelRequirement::Operator::kIn, {app}}}};
    return lease;
  }
  PodState& pod(const std::string& name, const std::string& app = "worker", seconds age = seconds(200)) {
    PodState p;
    p.record.meta = {"batch", name, "pod-uid-" + name, "1"};
    p.record.labels = {{"app", app}};
    p.record.phase = "Running";
    p.record.node_name = "node-1";
    p.record.ready = ReadyState::kTrue;
    p.record.shows_was_ready = true;
    p.record.creation_time = kT0 - age;
    p.was_ready = true;
    return w.pods[name] = p;
  }

  // The grant of the world's shape, to `lease` for `pod`, made by this controller (which
  // renews it unless `renewing` is false). A semaphore's holder shares the lock with two
  // filler holders, so the lock is full.
  GrantView& held(const std::string& lease, const std::string& pod, std::int64_t token = 4294967300,
                  bool renewing = true) {
    std::vector<SlotRef> slots;
    for (const std::string& lock : shape_locks()) {
      const std::int64_t per_lock = shape_ == Shape::kWriter ? shape_capacity() : 1;
      for (std::int64_t k = 0; k < per_lock; ++k) slots.push_back(SlotRef{lock, k});
    }
    if (shape_ == Shape::kSemaphore) fill_semaphore();
    return grant_on(slots, lease, pod, token, shape_capacity(), shape_access(), renewing);
  }
  // A grant on `slots` (a grant of several documents names them all).
  GrantView& grant_on(const std::vector<SlotRef>& slots, const std::string& lease, const std::string& pod,
                      std::int64_t token, std::int64_t capacity = 1, Access access = Access::kExclusive,
                      bool renewing = true) {
    GrantView g;
    lock::LockDocument& doc = g.state.doc;
    doc.lock = "batch/" + slots.front().lock;
    doc.slot = slots.front().slot;
    doc.capacity = capacity;
    doc.access = access;
    doc.lease = "batch/" + lease;
    doc.lease_uid = "uid-" + lease;
    doc.holder = "batch/" + pod;
    doc.holder_uid = "pod-uid-" + pod;
    doc.node = "node-1";
    doc.acquired_at = kT0 - seconds(20);
    doc.renewed_at = kT0 - seconds(5);
    doc.expires_at = kT0 + seconds(25);
    doc.ttl_millis = 30000;
    doc.transitions = 1;
    if (slots.size() > 1) {
      doc.grant = "grant-" + lease;
      for (const SlotRef& ref : slots)
        doc.grant_docs.push_back(lock::slot_document_id("batch/" + ref.lock, ref.slot));
    }
    g.state.token = token;
    g.slots = slots;
    g.expires_at = kM0 + seconds(25);
    g.renewing = renewing;
    g.holder_seen_gone = seen_gone_.count(pod) > 0;
    w.grants.push_back(g);
    return w.grants.back();
  }
  // The grant `lease` has (its first, when an old one lingers beside a newer one).
  GrantView& grant(const std::string& lease) {
    for (GrantView& g : w.grants)
      if (g.state.doc.lease_uid == "uid-" + lease) return g;
    throw std::runtime_error("no grant of " + lease);
  }
  // The grant `plan` decided on, written with `token`: the slots it takes leave the grants
  // that were on them, which keep the rest.
  GrantView& write(const GrantPlan& plan, std::int64_t token) {
    for (GrantView& g : w.grants)
      std::erase_if(g.slots, [&](const SlotRef& ref) {
        return std::find(plan.slots.begin(), plan.slots.end(), ref) != plan.slots.end();
      });
    std::erase_if(w.grants, [](const GrantView& g) { return g.slots.empty(); });
    GrantView& g = grant_on(plan.slots, plan.lease, plan.pod, token, w.capacity_of(plan.slots.front().lock),
                            plan.access);
    g.expires_at = w.mono + seconds(30);
    return g;
  }
  // `lease`'s grant went (released, or written over).
  void drop_grant(const std::string& lease) {
    std::erase_if(w.grants, [&](const GrantView& g) { return g.state.doc.lease_uid == "uid-" + lease; });
  }
  // The pod `name` is gone, and this controller saw it go.
  void pod_seen_gone(const std::string& name) {
    w.pods.erase(name);
    saw_go(name);
  }
  // Another pod (`uid`) now has the name `name`, and this controller saw the first one go.
  void pod_replaced(const std::string& name, const std::string& uid) {
    w.pods[name].record.meta.uid = uid;
    saw_go(name);
  }
  // The status a previous reconcile would have written for `lease` holding its grant.
  void status_held(const std::string& lease_name, const std::string& pod, std::int64_t token = 4294967300) {
    LeaseRecord& lease = find(lease_name);
    lease.status.phase = Phase::kHeld;
    lease.status.holder = HolderRef{pod, "pod-uid-" + pod, "node-1"};
    lease.status.fencing_token = std::to_string(token);
    lease.status.conditions = {{api::kConditionHeld, "True", "Acquired", "", kT0 - seconds(20), 1}};
    if (lease.spec.capacity > 1) lease.status.slot = 0;
  }
  LeaseRecord& find(const std::string& name) {
    for (auto& c : w.claims)
      if (c.meta.name == name) return c;
    throw std::runtime_error("no claim " + name);
  }
  // Decides, with each lock's capacity worked out from the claims as a reconcile does.
  Decision decide() {
    std::vector<std::string> names = shape_locks();
    auto add = [&](const std::string& name) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    };
    for (const LeaseRecord& lease : w.claims)
      for (const std::string& name : lease.spec.locks()) add(name);
    for (const GrantView& g : w.grants)
      for (const SlotRef& ref : g.slots) add(ref.lock);
    w.locks = lock_shapes(w.claims, names);
    return controller::decide(w);
  }

  LockWorld w;

 private:
  void saw_go(const std::string& pod) {
    seen_gone_.insert(pod);
    for (GrantView& g : w.grants)
      if (g.state.doc.holder == "batch/" + pod) g.holder_seen_gone = true;
  }
  // Two live Shared holders on slots 1 and 2 of the semaphore, shown Held.
  void fill_semaphore() {
    for (int k = 1; k <= 2; ++k) {
      const std::string name = "filler-" + std::to_string(k);
      if (std::any_of(w.claims.begin(), w.claims.end(),
                      [&](const LeaseRecord& l) { return l.meta.name == name; }))
        continue;
      const std::string pod_name = "filler-pod-" + std::to_string(k);
      claim(name, pod_name, Priority::kForeground, seconds(5000));
      pod(pod_name);
      grant_on({SlotRef{"report", k}}, name, pod_name, 4294967200 + k, 3, Access::kShared);
      status_held(name, pod_name, 4294967200 + k);
      find(name).status.slot = k;
    }
  }

  Shape shape_;
  std::set<std::string> seen_gone_;
};

inline const LeaseStatus& status_of(const Decision& d, const std::string& lease) {
  auto it = d.statuses.find(lease);
  if (it == d.statuses.end()) throw std::runtime_error("no status for " + lease);
  return it->second;
}

inline std::string held_reason(const LeaseStatus& s) {
  const Condition* c = s.condition(api::kConditionHeld);
  return c ? c->status + "/" + c->reason : "none";
}

// The slot numbers of a grant on one lock.
inline std::vector<std::int64_t> slot_numbers(const std::vector<SlotRef>& slots) {
  std::vector<std::int64_t> out;
  for (const SlotRef& ref : slots) out.push_back(ref.slot);
  return out;
}

}  // namespace eslease::controller::worlds
