// A reconcile of one lock, as reconciler_test.cpp runs it: a map-backed ClusterView stands
// in for the informer caches, an in-memory Kubernetes API takes the writes, and the real lock
// store runs on an in-memory Elasticsearch. Claims name pods of namespace "batch" and contend
// for the lock "report".
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "controller/lease_codec.h"
#include "controller/reconciler.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/memory_api.h"
#include "unit/controller/map_cluster_view.h"

namespace eslease::controller::fixture {

using nlohmann::json;

// Counts what the controller reports.
class CountingObserver final : public Observer {
 public:
  void claim_timed_out(std::string_view priority) override { ++timed_out[std::string(priority)]; }
  std::map<std::string, int> timed_out;
};

class ReconcileFixture : public ::testing::Test {
 protected:
  static constexpr const char* kLock = "batch/report";

  void SetUp() override {
    lock::StoreOptions options;
    options.writer = "controller-a";
    store_ = std::move(lock::make_es_lock_store(es_, clock_, options).value());
    SessionOptions sessions;
    sessions.identity = "controller-a";
    sessions_ = std::make_unique<SessionKeeper>(table_, *store_, api_, view_, observer_, clock_, sessions);
    reconciler_ = std::make_unique<Reconciler>(view_, index_, tracker_, table_, *store_, *sessions_, api_,
                                               nullptr, observer_, clock_);
  }

  void add_pod(const std::string& name) {
    json pod = kube::testing::make_object("batch", name);
    pod["metadata"]["labels"] = {{"app", "web"}};
    pod["spec"] = {{"nodeName", "node-1"}};
    pod["status"] = {{"phase", "Running"},
                     {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}};
    api_.put_object(kube::resources::pods(), pod);
    sync();
  }
  // The pod is gone from the API, and the tracker saw it go.
  void delete_pod(const std::string& name) {
    const PodRecord gone = *view_.pod("batch/" + name);
    api_.erase_object(kube::resources::pods(), "batch/" + name);
    tracker_.pod_gone(gone);
    sync();
  }
  // `extra` is merged into the spec.
  void add_claim(const std::string& name, const std::string& pod, int age_seconds, const json& extra = {}) {
    json lease = kube::testing::make_object("batch", name);
    lease["metadata"]["creationTimestamp"] = "2026-01-01T00:00:" + std::to_string(10 + age_seconds) + "Z";
    lease["metadata"]["generation"] = 1;
    lease["spec"] = {{"lockName", "report"}, {"holder", {{"podName", pod}}}};
    if (extra.is_object()) lease["spec"].update(extra);
    api_.put_object(kube::resources::eslease_leases(), lease);
    sync();
  }
  // The holder lets go of its grant and deletes its Lease, as `eslease release` does; the
  // finalizer keeps the Lease until the lock is released.
  void release_claim(const std::string& name) {
    json lease = object(kube::resources::eslease_leases(), name);
    lease["metadata"]["annotations"]["eslease.io/released"] = lease["status"]["fencingToken"];
    lease["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z";
    api_.put_object(kube::resources::eslease_leases(), lease);
    sync();
  }
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
    ReconcileOutcome outcome = reconciler_->reconcile(kLock);
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
  // The pod patches written so far: those of annotations or labels (a Lease's status and
  // finalizer writes carry neither).
  std::vector<json> pod_patches() {
    std::vector<json> patches;
    for (const auto& [verb, body] : api_.writes()) {
      const json meta = body.value("metadata", json::object());
      if (verb == "patch" && (meta.contains("annotations") || meta.contains("labels")))
        patches.push_back(body);
    }
    return patches;
  }

  eslease::testing::FakeClock clock_;
  eslease::testing::FakeDocumentApi es_;
  std::unique_ptr<lock::LockStore> store_;
  kube::testing::MemoryApi api_;
  views::MapClusterView view_;
  ClaimIndex index_;
  PodTracker tracker_{clock_};
  LockTable table_;
  CountingObserver observer_;
  std::unique_ptr<SessionKeeper> sessions_;
  std::unique_ptr<Reconciler> reconciler_;
};

}  // namespace eslease::controller::fixture
