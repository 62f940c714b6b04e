// Builds a LockWorld for the decision's table tests: one lock "batch/report" on a fixed
// clock, with claims, pods and a lock document added by name.
#pragma once

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/decision.h"

namespace eslease::controller::worlds {

using api::Reason;
using std::chrono::seconds;

inline const WallTime kT0 = std::chrono::system_clock::from_time_t(1'800'000'000);
inline const MonoTime kM0 = MonoTime{} + std::chrono::hours(1);

class World {
 public:
  // The claims a world may have: room for them is made up front, so the reference claim()
  // returns stays valid while more claims are added.
  static constexpr std::size_t kMaxClaims = 64;

  World() {
    w.ns = "batch";
    w.lock_name = "report";
    w.now = kT0;
    w.mono = kM0;
    w.claims.reserve(kMaxClaims);
  }
  World(const World& other) : w(other.w) { w.claims.reserve(kMaxClaims); }
  World& operator=(const World&) = delete;

  // A claim-mode Lease created `age` before now.
  LeaseRecord& claim(const std::string& name, const std::string& pod,
                     Priority priority = Priority::kForeground, seconds age = seconds(100)) {
    if (w.claims.size() == kMaxClaims) throw std::length_error("a World holds at most kMaxClaims claims");
    LeaseRecord lease;
    lease.meta = {"batch", name, "uid-" + name, "1"};
    lease.generation = 1;
    lease.creation_time = kT0 - age;
    lease.finalizers = {api::kFinalizer};
    lease.spec.lock_name = "report";
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
  // The lock document, granted to `lease` for `pod` by this controller (which renews it).
  DocumentView& held(const std::string& lease, const std::string& pod, std::int64_t token = 4294967300,
                     bool renewing = true) {
    DocumentView d;
    d.state.doc.lock = "batch/report";
    d.state.doc.lease = "batch/" + lease;
    d.state.doc.lease_uid = "uid-" + lease;
    d.state.doc.holder = "batch/" + pod;
    d.state.doc.holder_uid = "pod-uid-" + pod;
    d.state.doc.node = "node-1";
    d.state.doc.acquired_at = kT0 - seconds(20);
    d.state.doc.renewed_at = kT0 - seconds(5);
    d.state.doc.expires_at = kT0 + seconds(25);
    d.state.doc.ttl_millis = 30000;
    d.state.doc.transitions = 1;
    d.state.token = token;
    d.expires_at = kM0 + seconds(25);
    d.renewing = renewing;
    d.holder_seen_gone = seen_gone_.count(pod) > 0;
    w.document = d;
    return *w.document;
  }
  // The lock has `capacity` slots (every claim made so far states it, as do later ones made
  // with shaped_claim); decided slot by slot.
  void shaped(std::int64_t capacity) {
    w.shaped = true;
    w.capacity = capacity;
    for (LeaseRecord& c : w.claims) c.spec.capacity = capacity;
  }
  LeaseRecord& shaped_claim(const std::string& name, const std::string& pod, lock::Access access,
                            Priority priority = Priority::kForeground, seconds age = seconds(100)) {
    LeaseRecord& lease = claim(name, pod, priority, age);
    lease.spec.capacity = w.capacity;
    lease.spec.access = access;
    return lease;
  }
  // A grant on `slots` of a shaped lock, to `lease` for `pod`, renewed by this controller.
  DocumentView& slots_held(const std::string& lease, const std::string& pod, std::vector<std::int64_t> slots,
                           std::int64_t token, lock::Access access = lock::Access::kShared) {
    DocumentView d = held(lease, pod, token);
    w.document.reset();
    d.state.doc.slot = slots.front();
    d.state.doc.capacity = w.capacity;
    d.state.doc.access = access;
    for (const std::int64_t k : slots) d.slots.push_back(SlotRef{w.lock_name, k});
    w.grants.push_back(d);
    return w.grants.back();
  }
  // The world decides the capacity-1 locks `names` together, as lock sets link them.
  void linked_locks(const std::vector<std::string>& names) {
    w.shaped = true;
    w.locks.clear();
    for (const std::string& name : names) w.locks.push_back(LockShape{name, 1});
  }
  // A claim on a set of locks, Exclusive on each.
  LeaseRecord& set_claim(const std::string& name, const std::string& pod,
                         const std::vector<std::string>& locks, Priority priority = Priority::kForeground,
                         seconds age = seconds(100)) {
    LeaseRecord& lease = claim(name, pod, priority, age);
    lease.spec.lock_names = locks;
    lease.spec.lock_name = locks.front();
    return lease;
  }
  // A claim on the one lock `lock`.
  LeaseRecord& claim_on(const std::string& lock, const std::string& name, const std::string& pod,
                        Priority priority = Priority::kForeground, seconds age = seconds(100)) {
    LeaseRecord& lease = claim(name, pod, priority, age);
    lease.spec.lock_name = lock;
    return lease;
  }
  // A grant of slot 0 of each of `locks` to `lease` for `pod`, written as one grant (every
  // document names it and all of its documents), renewed by this controller.
  DocumentView& grant_on(const std::vector<std::string>& locks, const std::string& lease,
                         const std::string& pod, std::int64_t token) {
    DocumentView d = held(lease, pod, token);
    w.document.reset();
    d.state.doc.lock = "batch/" + locks.front();
    if (locks.size() > 1) {
      d.state.doc.grant = "grant-" + lease;
      for (const std::string& lock : locks) d.state.doc.grant_docs.push_back("batch/" + lock);
    }
    for (const std::string& lock : locks) d.slots.push_back(SlotRef{lock, 0});
    w.grants.push_back(d);
    return w.grants.back();
  }
  void remove_grant(std::size_t index) {
    w.grants.erase(w.grants.begin() + static_cast<std::ptrdiff_t>(index));
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
  // The status a previous reconcile would have written for `lease` holding the document.
  void status_held(const std::string& lease_name, const std::string& pod, std::int64_t token = 4294967300) {
    LeaseRecord& lease = find(lease_name);
    lease.status.phase = Phase::kHeld;
    lease.status.holder = HolderRef{pod, "pod-uid-" + pod, "node-1"};
    lease.status.fencing_token = std::to_string(token);
    lease.status.conditions = {{api::kConditionHeld, "True", "Acquired", "", kT0 - seconds(20), 1}};
  }
  LeaseRecord& find(const std::string& name) {
    for (auto& c : w.claims)
      if (c.meta.name == name) return c;
    throw std::runtime_error("no claim " + name);
  }
  Decision decide() const { return controller::decide(w); }

  LockWorld w;

 private:
  void saw_go(const std::string& pod) {
    seen_gone_.insert(pod);
    if (w.document && w.document->state.doc.holder == "batch/" + pod) w.document->holder_seen_gone = true;
    for (DocumentView& g : w.grants)
      if (g.state.doc.holder == "batch/" + pod) g.holder_seen_gone = true;
  }
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

}  // namespace eslease::controller::worlds
