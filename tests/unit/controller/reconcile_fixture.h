// Reconciles as the controller runs them, for the reconcile's tests: a map-backed ClusterView
// stands in for the informer caches, an in-memory Kubernetes API takes the writes, and the real
// lock store runs on an in-memory Elasticsearch; the namespace's session keeper is the real one.
// Claims name pods of namespace "batch" and contend for the lock "report" unless they say
// otherwise. Each test checks what a user would read back: the lock documents, the Lease
// statuses and finalizers, the holder pods' annotations, the session, events and metrics.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "controller/lease_codec.h"
#include "controller/reconciler.h"
#include "kube/event_recorder.h"
#include "lock/acquirer.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/memory_api.h"
#include "unit/controller/map_cluster_view.h"

namespace eslease::controller::fixture {

using nlohmann::json;

// Counts what the controller reports, as the metrics would.
class CountingObserver final : public Observer {
 public:
  void granted(double) override { ++grants; }
  void taken_over(std::string_view reason, std::optional<double>) override {
    ++takeovers[std::string(reason)];
  }
  void released() override { ++releases; }
  void claim_timed_out(std::string_view priority) override { ++timed_out[std::string(priority)]; }
  void expired() override { ++expirations; }
  void backend_conflict(std::string_view op) override { ++conflicts[std::string(op)]; }
  int grants = 0;
  std::map<std::string, int> takeovers;  // eslease_takeovers_total{reason}
  int releases = 0;
  std::map<std::string, int> timed_out;
  int expirations = 0;
  std::map<std::string, int> conflicts;
};

class ReconcileFixture : public ::testing::Test {
 protected:
  static constexpr const char* kLock = "batch/report";

  void SetUp() override {
    store_ = make_store("controller-a");
    use_store(*store_);
  }

  std::unique_ptr<lock::LockStore> make_store(const std::string& writer) {
    lock::StoreOptions options;
    options.writer = writer;
    return std::move(lock::make_es_lock_store(es_, clock_, options).value());
  }
  // The controller's session keeper and reconciler work through `store` from now on.
  void use_store(lock::LockStore& store) {
    reconciler_.reset();
    SessionOptions sessions;
    sessions.identity = "controller-a";
    sessions.enqueue = [this](const std::string& lock_id) { enqueued_.push_back(lock_id); };
    sessions_ = std::make_unique<SessionKeeper>(table_, store, api_, view_, observer_, clock_, sessions);
    reconciler_ = std::make_unique<Reconciler>(view_, index_, tracker_, table_, store, *sessions_, api_,
                                               events_.get(), observer_, clock_);
  }
  // Another controller over the same cluster and index (a new leader), that knows nothing of
  // the documents yet.
  struct Replica {
    LockTable table;
    std::unique_ptr<lock::LockStore> store;
    std::unique_ptr<SessionKeeper> sessions;
    std::unique_ptr<Reconciler> reconciler;
  };
  std::unique_ptr<Replica> replica(const std::string& identity) {
    auto r = std::make_unique<Replica>();
    r->store = make_store(identity);
    SessionOptions options;
    options.identity = identity;
    r->sessions =
        std::make_unique<SessionKeeper>(r->table, *r->store, api_, view_, observer_, clock_, options);
    r->reconciler = std::make_unique<Reconciler>(view_, index_, tracker_, r->table, *r->store, *r->sessions,
                                                 api_, nullptr, observer_, clock_);
    return r;
  }
  // Events are recorded from now on, to an API of their own that is always free.
  void record_events() {
    events_ = std::make_unique<kube::EventRecorder>(events_api_, clock_);
    use_store(*store_);
  }
  // How many events with `reason` were recorded.
  int events(const std::string& reason) {
    EXPECT_TRUE(events_->flush(std::chrono::seconds(5)));
    int n = 0;
    for (const auto& [verb, event] : events_api_.writes()) n += event.value("reason", "") == reason;
    return n;
  }

  void add_pod(const std::string& name, const json& labels = {{"app", "web"}}) {
    put_pod(name, labels);
    sync();
  }
  // The pod is in the API; the informers deliver it at the next sync().
  void put_pod(const std::string& name, const json& labels = {{"app", "web"}}) {
    json pod = kube::testing::make_object("batch", name);
    pod["metadata"]["labels"] = labels;
    pod["spec"] = {{"nodeName", "node-1"}};
    pod["status"] = {{"phase", "Running"},
                     {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}};
    api_.put_object(kube::resources::pods(), pod);
  }
  void set_ready(const std::string& name, bool ready) {
    json pod = object(kube::resources::pods(), name);
    pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}});
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
  // A claim of pod `pod` on "report"; `extra` is merged into the spec (another lockName,
  // lockNames, a holder selector, a shape).
  void add_claim(const std::string& name, const std::string& pod, int age_seconds, const json& extra = {}) {
    put_claim(name, pod, age_seconds, extra);
    sync();
  }
  // The claim is in the API; the informers deliver it at the next sync().
  void put_claim(const std::string& name, const std::string& pod, int age_seconds, const json& extra = {}) {
    json lease = kube::testing::make_object("batch", name);
    lease["metadata"]["creationTimestamp"] = "2026-01-01T00:00:" + std::to_string(10 + age_seconds) + "Z";
    lease["metadata"]["generation"] = 1;
    lease["spec"] = {{"lockName", "report"}, {"holder", {{"podName", pod}}}};
    if (extra.is_object()) lease["spec"].update(extra);
    if (lease["spec"].contains("lockNames")) lease["spec"].erase("lockName");
    api_.put_object(kube::resources::eslease_leases(), lease);
  }
  void add_set_claim(const std::string& name, const std::string& pod, int age_seconds,
                     const std::vector<std::string>& locks, const json& extra = {}) {
    json spec = {{"lockNames", locks}};
    if (extra.is_object()) spec.update(extra);
    add_claim(name, pod, age_seconds, spec);
  }
  // An election claim: any live pod labelled app=`app` may hold it.
  void add_election_claim(const std::string& name, const std::string& app, int age_seconds, json extra = {}) {
    if (!extra.is_object()) extra = json::object();
    extra["holder"] = {{"podSelector", {{"matchLabels", {{"app", app}}}}}};
    add_claim(name, "", age_seconds, extra);
  }
  // Merges `changes` into the Lease's spec, as `kubectl patch` does, and bumps its generation.
  void patch_spec(const std::string& name, const json& changes) {
    json lease = object(kube::resources::eslease_leases(), name);
    lease["spec"].merge_patch(changes);
    lease["metadata"]["generation"] = lease["metadata"].value("generation", 1) + 1;
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
  // The Lease is gone from the API and the informer says so.
  void delete_claim(const std::string& name) {
    api_.erase_object(kube::resources::eslease_leases(), "batch/" + name);
    sync();
  }
  // The informers deliver what the API holds now: every Lease as it changed (or went), every pod.
  void sync() {
    view_.sync_from(api_);
    for (auto it = indexed_.begin(); it != indexed_.end();) {
      if (view_.lease(it->first)) {
        ++it;
        continue;
      }
      index_.lease_changed(&it->second, nullptr);
      reconciler_->forget_lease(it->second.meta.uid);
      it = indexed_.erase(it);
    }
    view_.for_each_lease([&](const LeaseRecord& lease) {
      auto before = indexed_.find(lease.meta.key());
      index_.lease_changed(before == indexed_.end() ? nullptr : &before->second, &lease);
      indexed_[lease.meta.key()] = lease;
      reconciler_->lease_seen(lease.meta.uid, lease.meta.resource_version);
    });
    view_.for_each_pod("batch", [&](const PodRecord& pod) {
      tracker_.pod_seen(pod);
      reconciler_->pod_seen(pod.meta.uid, pod.meta.resource_version);
    });
  }
  ReconcileOutcome reconcile(const std::string& lock = "report") {
    ReconcileOutcome outcome = reconciler_->reconcile("batch/" + lock);
    sync();
    return outcome;
  }
  // claim-a (worker-a) holds the lock and claim-b (worker-b) waits next in line.
  void add_holder_and_waiter() {
    add_pod("worker-a");
    add_pod("worker-b");
    add_claim("claim-a", "worker-a", 0);
    add_claim("claim-b", "worker-b", 1);
    ASSERT_TRUE(reconcile().status.ok());
  }
  // A holder outside Kubernetes (the eslease tool's direct mode) takes slots [0, slots) of
  // `lock`, stating `capacity` and `access`, as one grant with a TTL of `ttl`.
  void grant_directly(const std::string& lock, std::int64_t slots = 1, std::int64_t capacity = 1,
                      lock::Access access = lock::Access::kExclusive, Millis ttl = std::chrono::seconds(30)) {
    lock::GrantRequest direct;
    for (std::int64_t k = 0; k < slots; ++k)
      direct.writes.push_back(lock::SlotWrite{*lock::make_lock_key("batch", lock), k, std::nullopt});
    direct.grantee = lock::direct_grantee("job-host", ttl);
    direct.capacity = capacity;
    direct.access = access;
    auto taken = lock::grant_one(*store_, direct);
    ASSERT_TRUE(taken.ok()) << taken.error().describe();
    ASSERT_TRUE(taken->grant);
  }
  // The lock index is made and its tokens checked, so that what follows counts only requests
  // about the locks themselves.
  void prepare_index() { grant_directly("warm-up", 1, 1, lock::Access::kExclusive, Millis(1000)); }
  // Reconciles every lock named until a round writes nothing to Elasticsearch or Kubernetes.
  void reconcile_all(const std::vector<std::string>& locks) {
    for (int round = 0; round < 5; ++round) {
      const int requests = es_.total_calls();
      const std::size_t writes = api_.writes().size();
      for (const std::string& lock : locks) ASSERT_TRUE(reconcile(lock).status.ok()) << lock;
      if (es_.total_calls() == requests && api_.writes().size() == writes) return;
    }
    FAIL() << "the locks kept changing";
  }
  // Moves the clock to the earliest requeue, as the work queue would.
  void advance_to(const ReconcileOutcome& outcome) {
    ASSERT_TRUE(outcome.requeue_at);
    if (*outcome.requeue_at > clock_.monotonic())
      clock_.advance(std::chrono::ceil<Millis>(*outcome.requeue_at - clock_.monotonic()));
  }

  json object(const kube::Resource& resource, const std::string& name) {
    return *api_.get(resource, "batch", name, {});
  }
  json status(const std::string& lease) { return object(kube::resources::eslease_leases(), lease)["status"]; }
  std::string token(const std::string& lease) { return status(lease).value("fencingToken", ""); }
  // The Held condition's reason.
  std::string held_reason(const std::string& lease) {
    for (const json& c : status(lease).value("conditions", json::array()))
      if (c["type"] == "Held") return c.value("reason", "");
    return "";
  }
  std::string holds(const std::string& pod) {
    return object(kube::resources::pods(), pod)["metadata"]
        .value("annotations", json::object())
        .value("eslease.io/holds", "");
  }
  // Slot `slot` of lock `lock` as Elasticsearch holds it (nullopt: none).
  std::optional<lock::LockState> document(const std::string& lock, std::int64_t slot = 0) {
    auto read = store_->read_slots({lock::SlotRange{*lock::make_lock_key("batch", lock), slot + 1}});
    if (!read.ok()) return std::nullopt;
    auto& doc = read->front()[static_cast<std::size_t>(slot)];
    return doc.ok() ? *doc : std::nullopt;
  }
  std::optional<api::Session> session() {
    auto got = api_.get(kube::resources::coordination_leases(), "batch", api::kSessionName, {});
    if (!got.ok()) return std::nullopt;
    return api::decode_session(*got);
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
  std::map<std::string, LeaseRecord> indexed_;  // each Lease as the index last saw it
  PodTracker tracker_{clock_};
  LockTable table_;
  CountingObserver observer_;
  std::vector<std::string> enqueued_;  // locks the session keeper asked to reconcile
  // Events, when a test records them, go to an API of their own, always free.
  kube::testing::MemoryApi events_api_;
  std::unique_ptr<kube::EventRecorder> events_;
  std::unique_ptr<SessionKeeper> sessions_;
  std::unique_ptr<Reconciler> reconciler_;
};

}  // namespace eslease::controller::fixture
