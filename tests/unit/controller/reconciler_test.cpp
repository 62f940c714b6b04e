// The reconcile around the decision: a map-backed ClusterView stands in for the informer
// caches, an in-memory Kubernetes API takes the writes, and the real lock store runs on an
// in-memory Elasticsearch. Each test checks what a user would read back: the lock document,
// the Lease status and finalizer, and the holder pod's annotation.
#include "controller/reconciler.h"

#include <gtest/gtest.h>

#include "controller/lease_codec.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/memory_api.h"
#include "unit/controller/map_cluster_view.h"

namespace eslease::controller {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeDocumentApi;
using views::MapClusterView;

const std::string kLock = "batch/report";

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

TEST_F(ReconcilerTest, GrantsAFreeLockAndTellsTheHolder) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ReconcileOutcome outcome = reconcile();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.error().describe();
  const json s = status("claim-a");
  EXPECT_EQ(s["phase"], "Held");
  const std::string token = s["fencingToken"];
  auto doc = ours_->get(*lock::parse_lock_id(kLock));
  ASSERT_TRUE(doc.ok() && *doc);
  EXPECT_EQ(std::to_string((*doc)->token), token);
  EXPECT_EQ(object(kube::resources::eslease_leases(), "claim-a")["metadata"]["finalizers"],
            json::array({"eslease.io/release"}));
  EXPECT_EQ(holds("worker-a"), "claim-a=" + token);
}

TEST_F(ReconcilerTest, AWriteDeferredByABusyRateLimitIsRetriedWithoutAnError) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  // The grant's status goes out; telling the pod is left for later by the client's limiter.
  api_.defer_next(kube::resources::pods());
  ReconcileOutcome outcome = reconcile();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.error().describe();
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(holds("worker-a"), "");
  ASSERT_TRUE(outcome.requeue_at);
  EXPECT_LE(*outcome.requeue_at, clock_.monotonic() + Reconciler::kDeferredWritesRequeue);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(holds("worker-a"), "claim-a=" + status("claim-a")["fencingToken"].get<std::string>());
}

TEST_F(ReconcilerTest, ReconcilingAConvergedLockWritesNothing) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  const std::size_t writes = api_.writes().size();
  const int es_requests = es_.total_calls();
  ReconcileOutcome again = reconcile();
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(api_.writes().size(), writes);
  EXPECT_EQ(es_.total_calls(), es_requests) << "the document is known: nothing is read or written";
  EXPECT_EQ(status("claim-b")["phase"], "Pending");
  EXPECT_EQ(status("claim-b")["queuePosition"], 0);
}

TEST_F(ReconcilerTest, ADeletedHolderIsTakenOverInOneReconcile) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  const std::string first = status("claim-a")["fencingToken"];
  delete_pod("worker-a");
  ASSERT_TRUE(reconcile().status.ok());
  const json taken = status("claim-b");
  EXPECT_EQ(taken["phase"], "Held");
  EXPECT_GT(std::stoll(taken["fencingToken"].get<std::string>()), std::stoll(first));
  EXPECT_EQ(taken["lastTakeover"]["reason"], "PodDeleted");
  EXPECT_EQ(taken["lastTakeover"]["fromPod"], "worker-a");
  EXPECT_EQ(status("claim-a")["phase"], "Pending");
  EXPECT_EQ(holds("worker-b"), "claim-b=" + taken["fencingToken"].get<std::string>());
}

// The cache can drop a pod before the informer's handler tells the tracker (another event
// woke the lock in between): the grant is revoked first, and handed over at once, as a
// takeover from the deleted pod, when the tracker hears.
TEST_F(ReconcilerTest, AHolderGoneFromTheCacheBeforeTheTrackerHeardIsTakenOverWhenItHears) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  const PodRecord gone = *view_.pod("batch/worker-a");
  api_.erase_object(kube::resources::pods(), "batch/worker-a");
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-b")["phase"], "Pending") << "not seen gone: revoked, not handed over";
  tracker_.pod_gone(gone);
  ASSERT_TRUE(reconcile().status.ok());
  const json taken = status("claim-b");
  EXPECT_EQ(taken["phase"], "Held");
  EXPECT_EQ(taken["lastTakeover"]["reason"], "PodDeleted");
}

// In a burst of deaths the client's rate limit is busy: the successor must hear first, and
// the Lease of a holder whose pod is gone (it reads nothing) is told when the limit is free.
TEST_F(ReconcilerTest, ATakeoverFromAGonePodTellsTheSuccessorBeforeTheDeadHolder) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  delete_pod("worker-a");
  api_.set_rate_limit_busy(true);
  ReconcileOutcome busy = reconcile();
  ASSERT_TRUE(busy.status.ok()) << busy.status.error().describe();
  EXPECT_EQ(status("claim-b")["phase"], "Held");
  EXPECT_EQ(status("claim-a")["phase"], "Held") << "the dead holder's status waits for the rate limit";
  ASSERT_TRUE(busy.requeue_at);
  EXPECT_LE(*busy.requeue_at, clock_.monotonic() + Reconciler::kDeferredWritesRequeue);

  api_.set_rate_limit_busy(false);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Pending");
  EXPECT_EQ(status("claim-a")["conditions"][0]["reason"], "PodDeleted");
}

// An event goes out with the status change it tells of: while that status waits for the
// rate limit, so does the event, and it is recorded once.
TEST_F(ReconcilerTest, AnEventWaitsForItsStatusWrite) {
  events_ = std::make_unique<kube::EventRecorder>(events_api_, clock_);
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  delete_pod("worker-a");
  api_.set_rate_limit_busy(true);
  auto lost_events = [&] {
    EXPECT_TRUE(events_->flush(std::chrono::seconds(5)));
    int n = 0;
    for (const auto& [verb, event] : events_api_.writes()) n += event.value("reason", "") == "PodDeleted";
    return n;
  };
  for (int attempt = 0; attempt < 3; ++attempt) ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(lost_events(), 0);
  api_.set_rate_limit_busy(false);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Pending");
  EXPECT_EQ(lost_events(), 1);
}

// A holder that may still run (its pod is unready, not gone) is told at once that it lost
// the lock, however busy the rate limit.
TEST_F(ReconcilerTest, TakingTheLockFromAHolderThatMayStillRunDoesNotWait) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  json pod = object(kube::resources::pods(), "worker-a");
  pod["status"]["conditions"] = json::array({{{"type", "Ready"}, {"status", "False"}}});
  api_.put_object(kube::resources::pods(), pod);
  sync();
  clock_.advance(std::chrono::seconds(11));  // past the default livenessGraceSeconds
  api_.set_rate_limit_busy(true);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_NE(status("claim-a")["phase"], "Held");
}

TEST_F(ReconcilerTest, AStatusSomeoneElseWroteIsPutRightAtMostOncePerPace) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  const json held = status("claim-a");
  auto overwrite = [&] {
    ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", "claim-a", kube::PatchType::kMerge,
                           {{"status", {{"phase", "Pending"}}}}, true, {})
                    .ok());
    sync();
  };
  overwrite();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  overwrite();
  ReconcileOutcome paced = reconcile();
  EXPECT_EQ(status("claim-a")["phase"], "Pending") << "put right less than a second ago: it waits";
  ASSERT_TRUE(paced.requeue_at);
  EXPECT_EQ(*paced.requeue_at, clock_.monotonic() + LeaseWriter::kCorrectionPace);
  clock_.advance(LeaseWriter::kCorrectionPace);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a"), held);
}

// A correction left for later because the rate limit was busy was never sent: it does not
// count against the pace, so it goes out as soon as the client is free.
TEST_F(ReconcilerTest, ACorrectionLeftForTheRateLimitDoesNotWaitForThePace) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  const json waiting = status("claim-b");
  ASSERT_EQ(waiting["phase"], "Pending");
  ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", "claim-b", kube::PatchType::kMerge,
                         {{"status", {{"queuePosition", 7}}}}, true, {})
                  .ok());
  sync();
  api_.set_rate_limit_busy(true);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-b")["queuePosition"], 7) << "a queue position can wait for the rate limit";
  api_.set_rate_limit_busy(false);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-b"), waiting);
}

// Our memory of a write overlays a cache that has not caught up, but not for ever: another
// writer's status (or annotation) that the cache shows without ever having shown ours (a
// re-list, or a watch event that came before the write's answer) is put right once the
// memory has expired.
TEST_F(ReconcilerTest, AnOverwriteTheCacheShowsBeforeOurWriteIsPutRight) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconciler().reconcile(kLock).status.ok());  // the cache does not see this write
  const json held = *api_.get(kube::resources::eslease_leases(), "batch", "claim-a", {});
  ASSERT_EQ(held["status"]["phase"], "Held");
  const std::string annotation = holds("worker-a");
  ASSERT_NE(annotation, "");
  ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", "claim-a", kube::PatchType::kMerge,
                         {{"status", {{"phase", "Pending"}}}}, true, {})
                  .ok());
  ASSERT_TRUE(api_.patch(kube::resources::pods(), "batch", "worker-a", kube::PatchType::kMerge,
                         {{"metadata", {{"annotations", {{"eslease.io/holds", nullptr}}}}}}, false, {})
                  .ok());
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Pending") << "the memory of our write stands in for a lagging cache";
  clock_.advance(kOwnWriteMemory);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(holds("worker-a"), annotation);
}

// A cache that simply lags (it still shows the version our write was decided on) keeps the
// memory however long it lags: the same write is never made twice.
TEST_F(ReconcilerTest, ALaggingCacheNeverCausesTheSameWriteTwice) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  // Status and annotation writes (the finalizer's patch is conditional on the version, so a
  // real API server refuses a repeated one).
  auto remembered_writes = [&] {
    int n = 0;
    for (const auto& [verb, body] : api_.writes())
      if (body.contains("status") || body.value("/metadata/annotations"_json_pointer, json()).is_object())
        ++n;
    return n;
  };
  ASSERT_TRUE(reconciler().reconcile(kLock).status.ok());  // the cache does not see this write
  const int writes = remembered_writes();
  ASSERT_EQ(writes, 2);
  clock_.advance(kOwnWriteMemory * 3);
  ASSERT_TRUE(reconciler().reconcile(kLock).status.ok());
  EXPECT_EQ(remembered_writes(), writes);
}

// Every takeover meets a newer version of the grant (a second replica renews it): once the
// steps run out the reconcile reports an error, so the lock is retried with backoff, and
// writes nothing decided from a world still changing under it.
TEST_F(ReconcilerTest, AnActionStillPendingWhenTheStepsRunOutIsRetried) {
  add_pod("worker-a");
  add_pod("worker-b");
  add_claim("claim-a", "worker-a", 0);
  add_claim("claim-b", "worker-b", 1);
  ASSERT_TRUE(reconciler(/*contended=*/true).reconcile(kLock).status.ok());
  sync();
  const std::string token = status("claim-a")["fencingToken"];
  delete_pod("worker-a");
  const std::size_t writes = api_.writes().size();
  ReconcileOutcome outcome = reconcile();
  EXPECT_EQ(contended_->takeovers, Reconciler::kMaxSteps);
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_NE(outcome.status.error().message.find("take_over"), std::string::npos);
  EXPECT_EQ(api_.writes().size(), writes);
  EXPECT_EQ(status("claim-a")["fencingToken"], token);
}

TEST_F(ReconcilerTest, AnUnreadableDocumentMarksTheBackendUnavailable) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  es_.inject({"get", false, make_error(ErrorCode::kUnavailable, "connection refused")});
  ReconcileOutcome outcome = reconcile();
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_FALSE(reconciler().backend_available());
  const json conditions = status("claim-a")["conditions"];
  ASSERT_TRUE(conditions.is_array());
  bool unavailable = false;
  for (const json& c : conditions)
    unavailable = unavailable || (c["type"] == "BackendAvailable" && c["status"] == "False");
  EXPECT_TRUE(unavailable);
  ASSERT_TRUE(reconcile().status.ok()) << "read again on the next reconcile";
  EXPECT_EQ(status("claim-a")["phase"], "Held");
}

// Per-job locks: each name is used once. Once its Lease is gone and the document released,
// the controller keeps nothing of the lock; the name used again is read before deciding.
TEST_F(ReconcilerTest, APerJobLockLeavesNothingBehindOnceItsLeaseIsGone) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(table_.size(), 1u);
  delete_claim("claim-a");
  for (int i = 0; i < 10 && es_.peek(kLock); ++i) {
    ReconcileOutcome outcome = reconcile();
    ASSERT_TRUE(outcome.status.ok()) << outcome.status.error().describe();
    if (outcome.requeue_at)
      clock_.advance(std::chrono::ceil<Millis>(*outcome.requeue_at - clock_.monotonic()));
  }
  EXPECT_FALSE(es_.peek(kLock)) << "the document is released";
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(table_.size(), 0u);

  add_claim("claim-b", "worker-a", 1);
  const int reads = es_.calls("get");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(es_.calls("get"), reads + 1) << "a forgotten lock is read before anything is decided";
  EXPECT_EQ(status("claim-b")["phase"], "Held");
}

// A pod that loses one lock but holds another keeps only the other's entry, even when the
// first attempt to rewrite its annotation fails: the lock's retry puts it right.
TEST_F(ReconcilerTest, ALostHoldLeavesTheAnnotationOnceItsRewriteFails) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  add_claim("claim-x", "worker-a", 1, "other");
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_TRUE(reconciler().reconcile("batch/other").status.ok());
  sync();
  const std::string token_x = status("claim-x")["fencingToken"];
  ASSERT_EQ(holds("worker-a"),
            "claim-a=" + status("claim-a")["fencingToken"].get<std::string>() + ",claim-x=" + token_x);
  delete_claim("claim-a");
  api_.fail_next("patch", kube::resources::pods(), make_error(ErrorCode::kUnavailable, "connection reset"));
  EXPECT_FALSE(reconcile().status.ok()) << "the annotation could not be written: retried";
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(holds("worker-a"), "claim-x=" + token_x);
}

json backend_condition(const json& status) {
  for (const json& c : status.value("conditions", json::array()))
    if (c["type"] == "BackendAvailable") return c;
  return json::object();
}

// The lock store cannot prove the next fencing token larger than every token issued before
// (here: a Lease shows a token no epoch is left above): nothing is granted, and the claim
// says why, while Elasticsearch is known to answer.
TEST_F(ReconcilerTest, AGrantRefusedForUnprovenTokensSaysSoUntilTheTokensAreProven) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  const std::int64_t beyond = lock::epoch_base(lock::kMaxEpoch) | (std::int64_t{1} << 32);
  ASSERT_FALSE(ours_->check_tokens([beyond] { return lock::IssuedBefore{beyond, Millis(0)}; }).ok());
  ReconcileOutcome refused = reconcile();
  ASSERT_FALSE(refused.status.ok()) << "retried with backoff";
  EXPECT_FALSE(es_.peek(kLock)) << "nothing was granted";
  json s = status("claim-a");
  EXPECT_EQ(s["phase"], "Pending");
  const json backend = backend_condition(s);
  EXPECT_EQ(backend["status"], "False");
  EXPECT_EQ(backend["reason"], "TokensUnproven");
  EXPECT_NE(backend["message"].get<std::string>().find("fencing tokens are not proven"), std::string::npos)
      << backend;
  EXPECT_TRUE(reconciler().backend_available());

  ASSERT_TRUE(ours_->check_tokens([] { return lock::IssuedBefore{}; }).ok());
  ASSERT_TRUE(reconcile().status.ok());
  s = status("claim-a");
  EXPECT_EQ(s["phase"], "Held");
  EXPECT_EQ(backend_condition(s)["status"], "True");
}

}  // namespace
}  // namespace eslease::controller
