// The reconciler's test fixture: a map-backed ClusterView stands in for the informer caches,
// an in-memory Kubernetes API takes the writes, and the real lock store runs on an in-memory
// Elasticsearch.
#pragma once

#include <gtest/gtest.h>

#include "controller/lease_codec.h"
#include "controller/reconciler.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/memory_api.h"
#include "unit/controller/map_cluster_view.h"

namespace eslease::controller::reconciling {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeDocumentApi;
using views::MapClusterView;

inline const std::string kLock = "batch/report";

// Another replica that also believes it leads, renewing the lock's grant just before each
// of our takeovers, so every takeover meets a newer version of the grant it replaces.
class ContendedStore final : public lock::LockStore {
 public:
  ContendedStore(lock::LockStore& ours, lock::LockStore& theirs, Clock& clock)
      : ours_(ours), theirs_(theirs), clock_(clock) {}
  Status prepare() override { return ours_.prepare(); }
  Result<std::optional<lock::LockState>> get(const lock::LockKey& key) override { return ours_.get(key); }
  Result<std::vector<lock::LockState>> list() override { return ours_.list(); }
  Result<lock::AcquireOutcome> acquire(const lock::LockKey& key, const lock::Grantee& grantee) override {
    return ours_.acquire(key, grantee);
  }
  Result<lock::AcquireOutcome> take_over(const lock::LockKey& key, const lock::LockState& dead,
                                         const lock::Grantee& grantee) override {
    auto current = theirs_.get(key);
    if (current.ok() && *current)
      (void)theirs_.renew(key, lock::Grant{**current, clock_.monotonic()}, Millis(0));
    ++takeovers;
    return ours_.take_over(key, dead, grantee);
  }
  Result<lock::RenewOutcome> renew(const lock::LockKey& key, const lock::Grant& held, Millis ttl) override {
    return ours_.renew(key, held, ttl);
  }
  Result<lock::ReleaseOutcome> release(const lock::LockKey& key, const lock::Grant& held,
                                       lock::ReleaseScope scope) override {
    return ours_.release(key, held, scope);
  }
  std::vector<lock::BatchRenewal> renew_all(const std::vector<lock::HeldLock>& held) override {
    return ours_.renew_all(held);
  }
  int takeovers = 0;

 private:
  lock::LockStore& ours_;
  lock::LockStore& theirs_;
  Clock& clock_;
};

class ReconcilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ours_ = store("controller-a");
    theirs_ = store("controller-b");
    contended_ = std::make_unique<ContendedStore>(*ours_, *theirs_, clock_);
  }

  std::unique_ptr<lock::LockStore> store(const std::string& writer) {
    lock::StoreOptions options;
    options.writer = writer;
    return std::move(lock::make_es_lock_store(es_, clock_, options).value());
  }

  Reconciler& reconciler(bool contended = false) {
    if (!reconciler_) {
      lock::LockStore& store = contended ? *contended_ : static_cast<lock::LockStore&>(*ours_);
      SessionOptions sessions;
      sessions.identity = "controller-a";
      sessions_ = std::make_unique<SessionKeeper>(table_, store, api_, view_, observer_, clock_, sessions);
      reconciler_ = std::make_unique<Reconciler>(view_, index_, tracker_, table_, store, *sessions_, api_,
                                                 events_.get(), observer_, clock_);
    }
    return *reconciler_;
  }

  void add_pod(const std::string& name) {
    json pod = kube::testing::make_object("batch", name);
    pod["spec"] = {{"nodeName", "node-1"}};
    pod["status"] = {{"phase", "Running"},
                     {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}};
    api_.put_object(kube::resources::pods(), pod);
    sync();
  }
  void delete_pod(const std::string& name) {
    const PodRecord gone = *view_.pod("batch/" + name);
    api_.erase_object(kube::resources::pods(), "batch/" + name);
    tracker_.pod_gone(gone);
    sync();
  }
  void add_claim(const std::string& name, const std::string& pod, int age_seconds,
                 const std::string& lock = "report") {
    json lease = kube::testing::make_object("batch", name);
    lease["metadata"]["creationTimestamp"] = "2026-01-01T00:00:" + std::to_string(10 + age_seconds) + "Z";
    lease["metadata"]["generation"] = 1;
    lease["spec"] = {{"lockName", lock}, {"holder", {{"podName", pod}}}};
    api_.put_object(kube::resources::eslease_leases(), lease);
    sync();
  }
  // A claim on a lock of `capacity` slots, Shared or Exclusive.
  void add_shaped_claim(const std::string& name, const std::string& pod, int age_seconds, int capacity,
                        const std::string& access) {
    add_claim(name, pod, age_seconds);
    json lease = *api_.get(kube::resources::eslease_leases(), "batch", name, {});
    lease["spec"]["capacity"] = capacity;
    lease["spec"]["access"] = access;
    api_.put_object(kube::resources::eslease_leases(), lease);
    sync();
  }
  // The Lease is gone from the API and the informer says so.
  void delete_claim(const std::string& name) {
    const LeaseRecord gone = *view_.lease("batch/" + name);
    api_.erase_object(kube::resources::eslease_leases(), "batch/" + name);
    index_.lease_changed(&gone, nullptr);
    if (reconciler_) reconciler_->forget_lease(gone.meta.uid);
    sync();
  }
  // claim-a (worker-a) holds the lock and claim-b (worker-b) waits next in line.
  void add_holder_and_waiter() {
    add_pod("worker-a");
    add_pod("worker-b");
    add_claim("claim-a", "worker-a", 0);
    add_claim("claim-b", "worker-b", 1);
    ASSERT_TRUE(reconcile().status.ok());
  }
  // The informers deliver what the API holds now.
  void sync() {
    view_.sync_from(api_);
    view_.for_each_lease([&](const LeaseRecord& lease) {
      index_.lease_changed(nullptr, &lease);
      if (reconciler_) reconciler_->lease_seen(lease.meta.uid, lease.meta.resource_version);
    });
    view_.for_each_pod("batch", [&](const PodRecord& pod) {
      tracker_.pod_seen(pod);
      if (reconciler_) reconciler_->pod_seen(pod.meta.uid, pod.meta.resource_version);
    });
  }
  ReconcileOutcome reconcile() {
    ReconcileOutcome outcome = reconciler().reconcile(kLock);
    sync();
    return outcome;
  }

  json object(const kube::Resource& resource, const std::string& name) {
    return *api_.get(resource, "batch", name, {});
  }
  json status(const std::string& lease) { return object(kube::resources::eslease_leases(), lease)["status"]; }
  std::string holds(const std::string& pod) {
    return object(kube::resources::pods(), pod)["metadata"]
        .value("annotations", json::object())
        .value("eslease.io/holds", "");
  }

  FakeClock clock_;
  FakeDocumentApi es_;
  std::unique_ptr<lock::LockStore> ours_;
  std::unique_ptr<lock::LockStore> theirs_;
  std::unique_ptr<ContendedStore> contended_;
  kube::testing::MemoryApi api_;
  MapClusterView view_;
  ClaimIndex index_;
  PodTracker tracker_{clock_};
  LockTable table_;
  Observer observer_;
  std::unique_ptr<SessionKeeper> sessions_;
  // Events, when a test records them, go to an API of their own, always free.
  kube::testing::MemoryApi events_api_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<Reconciler> reconciler_;
};

}  // namespace eslease::controller::reconciling
