// The reconcile's writes to the cluster: Lease statuses written only when they change, the
// grants ahead of every other write, events with their status, the holder pods' holds
// annotation, and corrections of what someone else wrote, paced.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class ReconcileClusterWritesTest : public fixture::ReconcileFixture {
 protected:
  // Claims a to d on a semaphore of two slots: a and b hold, c and d wait.
  void two_holders_and_two_waiters() {
    for (const char* name : {"a", "b", "c", "d"}) {
      add_pod(name);
      add_claim(name, name, 0, {{"capacity", 2}, {"access", "Shared"}});
    }
    ASSERT_TRUE(reconcile().status.ok());
    ASSERT_TRUE(reconcile().status.ok());
    ASSERT_EQ(status("a")["phase"], "Held");
    ASSERT_EQ(status("b")["phase"], "Held");
    ASSERT_EQ(status("c")["phase"], "Pending");
  }
  // Neither successor is shown Held, nor told through its pod, while c's grant waits.
  void expect_both_successors_held_back() {
    EXPECT_NE(status("c")["phase"], "Held");
    EXPECT_NE(status("d")["phase"], "Held") << "shown before the grant with the lower token";
    EXPECT_EQ(holds("d"), "") << "nor told through its pod";
  }
  // Both successors shown Held, the status writes from the `first` on showing growing tokens.
  void expect_both_successors_shown_in_token_order(std::size_t first);
};

// The status and annotation writes made: what a writer remembers until its cache shows it (the
// finalizer's patch is conditional on the version, so a real API server refuses a repeated one).
int remembered_writes(const kube::testing::MemoryApi& api) {
  int n = 0;
  for (const auto& [verb, body] : api.writes())
    if (body.contains("status") || body.value("/metadata/annotations"_json_pointer, json()).is_object()) ++n;
  return n;
}

// The fencing tokens the status writes from the `first` write on showed, in the order written.
std::vector<long long> tokens_written(const kube::testing::MemoryApi& api, std::size_t first) {
  std::vector<long long> shown;
  const auto writes = api.writes();
  for (std::size_t i = first; i < writes.size(); ++i) {
    const json token = writes[i].second.value(json::json_pointer("/status/fencingToken"), json());
    if (token.is_string()) shown.push_back(std::stoll(token.get<std::string>()));
  }
  return shown;
}

void ReconcileClusterWritesTest::expect_both_successors_shown_in_token_order(std::size_t first) {
  EXPECT_EQ(status("c")["phase"], "Held");
  EXPECT_EQ(status("d")["phase"], "Held");
  const std::vector<long long> shown = tokens_written(api_, first);
  ASSERT_EQ(shown.size(), 2U);
  EXPECT_LT(shown[0], shown[1]);
}

TEST_F(ReconcileClusterWritesTest, AWriteDeferredByABusyRateLimitIsRetriedWithoutAnError) {
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
  EXPECT_EQ(holds("worker-a"), "claim-a=" + token("claim-a"));
}

// In a burst of deaths the client's rate limit is busy: the successor must hear first, and
// the Lease of a holder whose pod is gone (it reads nothing) is told when the limit is free.
TEST_F(ReconcileClusterWritesTest, ATakeoverFromAGonePodTellsTheSuccessorBeforeTheDeadHolder) {
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
  EXPECT_EQ(held_reason("claim-a"), "PodDeleted");
}

// An event goes out with the status change it tells of: while that status waits for the
// rate limit, so does the event, and it is recorded once.
TEST_F(ReconcileClusterWritesTest, AnEventWaitsForItsStatusWrite) {
  record_events();
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  delete_pod("worker-a");
  api_.set_rate_limit_busy(true);
  for (int attempt = 0; attempt < 3; ++attempt) ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(events("PodDeleted"), 0);
  api_.set_rate_limit_busy(false);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Pending");
  EXPECT_EQ(events("PodDeleted"), 1);
}

// A holder that may still run (its pod is unready, not gone) is told at once that it lost
// the lock, however busy the rate limit.
TEST_F(ReconcileClusterWritesTest, TakingTheLockFromAHolderThatMayStillRunDoesNotWait) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  set_ready("worker-a", false);
  clock_.advance(std::chrono::seconds(11));  // past the default livenessGraceSeconds
  api_.set_rate_limit_busy(true);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_NE(status("claim-a")["phase"], "Held");
}

TEST_F(ReconcileClusterWritesTest, AStatusSomeoneElseWroteIsPutRightAtMostOncePerPace) {
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
TEST_F(ReconcileClusterWritesTest, ACorrectionLeftForTheRateLimitDoesNotWaitForThePace) {
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
TEST_F(ReconcileClusterWritesTest, AnOverwriteTheCacheShowsBeforeOurWriteIsPutRight) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());  // the cache does not see this write
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
TEST_F(ReconcileClusterWritesTest, ALaggingCacheNeverCausesTheSameWriteTwice) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());  // the cache does not see this write
  const int writes = remembered_writes(api_);
  ASSERT_EQ(writes, 2);
  clock_.advance(kOwnWriteMemory * 3);
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());
  EXPECT_EQ(remembered_writes(api_), writes);
}

// The watch can deliver our write while a reconcile reads the claims: the informer delivers a
// version only once its cache shows it, and each claim is overlaid with our write as it is
// copied from the cache, so that delivery (which ends our memory of a status) never makes a
// reconcile decide on the version before our write, nor make the write again.
TEST_F(ReconcileClusterWritesTest, AStatusDeliveredWhileAReconcileReadsTheClaimsIsNotWrittenAgain) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());  // the cache does not see this write
  ASSERT_EQ(remembered_writes(api_), 2);
  const json lease = *api_.get(kube::resources::eslease_leases(), "batch", "claim-a", {});
  bool delivered = false;
  view_.after_copy = [&](const std::string& key) {
    if (delivered || key != "batch/claim-a") return;
    delivered = true;
    view_.sync_from(api_);
    reconciler_->lease_seen(lease["metadata"]["uid"], lease["metadata"]["resourceVersion"]);
  };
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());
  view_.after_copy = nullptr;
  EXPECT_EQ(remembered_writes(api_), 2);
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(remembered_writes(api_), 2);
  EXPECT_EQ(status("claim-a"), lease["status"]);
}

// A pod is copied from the cache earlier in a reconcile: the memory of our annotation write
// outlives the delivery of the version it produced until a later version comes, so a reconcile
// working on a copy from before that delivery does not write the annotation again.
TEST_F(ReconcileClusterWritesTest, AnAnnotationDeliveredAfterAReconcileCopiedThePodIsNotWrittenAgain) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());  // the cache does not see this write
  ASSERT_EQ(remembered_writes(api_), 2);
  const json pod = *api_.get(kube::resources::pods(), "batch", "worker-a", {});
  reconciler_->pod_seen(pod["metadata"]["uid"], pod["metadata"]["resourceVersion"]);
  ASSERT_TRUE(reconciler_->reconcile(kLock).status.ok());  // the view still shows the older pod and Lease
  EXPECT_EQ(remembered_writes(api_), 2);
  // Once the cache shows our write, and then another writer's, the cache is the truth again.
  sync();
  ASSERT_TRUE(api_.patch(kube::resources::pods(), "batch", "worker-a", kube::PatchType::kMerge,
                         {{"metadata", {{"annotations", {{"eslease.io/holds", nullptr}}}}}}, false, {})
                  .ok());
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(holds("worker-a"), pod["metadata"]["annotations"]["eslease.io/holds"]);
}

// Grants made in one reconcile are shown in the order they were made: a watcher sees the
// lock's tokens grow.
TEST_F(ReconcileClusterWritesTest, GrantsOfOneReconcileAreShownInTheirTokensOrder) {
  // "a", first by name, is served last: it is the only Background claim.
  for (const char* name : {"a", "b", "c", "d"}) {
    add_pod(std::string("pod-") + name);
    add_claim(
        name, std::string("pod-") + name, 0,
        {{"capacity", 4}, {"access", "Shared"}, {"priority", name[0] == 'a' ? "Background" : "Foreground"}});
  }
  const std::size_t before = api_.writes().size();
  ASSERT_TRUE(reconcile().status.ok());
  const std::vector<long long> shown = tokens_written(api_, before);
  ASSERT_EQ(shown.size(), 4U);
  EXPECT_TRUE(std::is_sorted(shown.begin(), shown.end()));
}

// A grant whose status did not go out holds back the later grants of its locks until it has:
// a watcher never sees a lock's tokens go down, even when a write fails between two grants.
TEST_F(ReconcileClusterWritesTest, AGrantWhoseStatusFailedHoldsBackTheLaterGrantsOfItsLock) {
  ASSERT_NO_FATAL_FAILURE(two_holders_and_two_waiters());
  // Every claim carries the finalizer already, so the first write is the first successor's
  // status: it fails.
  for (const char* name : {"c", "d"})
    ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", name, kube::PatchType::kMerge,
                           {{"metadata", {{"finalizers", {"eslease.io/release"}}}}}, false, {})
                    .ok());
  delete_pod("a");
  delete_pod("b");
  const std::size_t before = api_.writes().size();
  api_.fail_next("patch", kube::resources::eslease_leases(),
                 make_error(ErrorCode::kUnavailable, "connection reset"));
  EXPECT_FALSE(reconcile().status.ok());
  expect_both_successors_held_back();
  ASSERT_TRUE(reconcile().status.ok());  // retried, as the work queue does after an error
  expect_both_successors_shown_in_token_order(before);
}

// A grant whose status waits for the pace of correcting someone else's write holds back the
// later grants of its lock too.
TEST_F(ReconcileClusterWritesTest, AGrantWhoseStatusWaitsForThePaceHoldsBackTheLaterGrantsOfItsLock) {
  ASSERT_NO_FATAL_FAILURE(two_holders_and_two_waiters());
  // Someone else writes c's status twice: the first is put right, the second must wait.
  auto overwrite = [&] {
    ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", "c", kube::PatchType::kMerge,
                           {{"status", {{"phase", "Pending"}, {"queuePosition", 7}}}}, true, {})
                    .ok());
    sync();
  };
  overwrite();
  ASSERT_TRUE(reconcile().status.ok());
  overwrite();
  delete_pod("a");
  delete_pod("b");
  const std::size_t before = api_.writes().size();
  ReconcileOutcome paced = reconcile();
  ASSERT_TRUE(paced.status.ok());
  expect_both_successors_held_back();
  ASSERT_TRUE(paced.requeue_at);
  clock_.advance(LeaseWriter::kCorrectionPace);
  ASSERT_TRUE(reconcile().status.ok());
  expect_both_successors_shown_in_token_order(before);
}

// The write budget of a hand-over holds for a semaphore as for any lock: however long the
// queue, only the first waiters' positions are rewritten.
TEST_F(ReconcileClusterWritesTest, AHandOverBehindALongQueueWritesAtMostFifteenObjects) {
  for (const char* holder : {"a0", "a1", "a2"}) {
    add_pod(holder);
    add_claim(holder, holder, 0, {{"capacity", 3}});
  }
  for (int i = 0; i < 300; ++i) {
    char name[8];
    std::snprintf(name, sizeof(name), "w%03d", i);
    add_pod(name);
    add_claim(name, name, 1, {{"capacity", 3}});
  }
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("a1")["phase"], "Held");
  ASSERT_EQ(status("w299")["phase"], "Pending");
  delete_pod("a1");
  const std::size_t before = api_.writes().size();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("w000")["phase"], "Held");
  EXPECT_EQ(status("w001")["queuePosition"], 0);
  // This fixture records no events: with the successor's one, at most 15 writes.
  EXPECT_LE(api_.writes().size() - before, 14U);
}

// --- the holds annotation ---------------------------------------------------------------------

// A pod that loses one lock but holds another keeps only the other's entry, even when the
// first attempt to rewrite its annotation fails: the lock's retry puts it right.
TEST_F(ReconcileClusterWritesTest, ALostHoldLeavesTheAnnotationOnceItsRewriteFails) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  add_claim("claim-x", "worker-a", 1, {{"lockName", "other"}});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_TRUE(reconcile("other").status.ok());
  const std::string token_x = token("claim-x");
  ASSERT_EQ(holds("worker-a"), "claim-a=" + token("claim-a") + ",claim-x=" + token_x);
  delete_claim("claim-a");
  api_.fail_next("patch", kube::resources::pods(), make_error(ErrorCode::kUnavailable, "connection reset"));
  EXPECT_FALSE(reconcile().status.ok()) << "the annotation could not be written: retried";
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(holds("worker-a"), "claim-x=" + token_x);
}

// A set's holder is told once, whichever of its locks is reconciled, and loses the entry when
// the set is handed over.
TEST_F(ReconcileClusterWritesTest, TheSetHoldersPodIsAnnotatedOnce) {
  add_pod("pod-s");
  add_pod("pod-t");
  add_set_claim("set", "pod-s", 0, {"report", "archive"});
  add_set_claim("next", "pod-t", 1, {"archive", "report"});
  ASSERT_TRUE(reconcile("archive").status.ok());
  ASSERT_EQ(status("set")["phase"], "Held");
  EXPECT_EQ(holds("pod-s"), "set=" + token("set"));
  const std::size_t patches = pod_patches().size();
  ASSERT_TRUE(reconcile("report").status.ok());
  EXPECT_EQ(pod_patches().size(), patches) << "the other lock's reconcile writes nothing";
  delete_pod("pod-s");
  ASSERT_TRUE(reconcile("report").status.ok());
  ASSERT_EQ(status("next")["phase"], "Held");
  EXPECT_EQ(holds("pod-t"), "next=" + token("next"));
  ASSERT_TRUE(reconcile("archive").status.ok());
  EXPECT_EQ(holds("pod-t"), "next=" + token("next"));
}

}  // namespace
}  // namespace eslease::controller
