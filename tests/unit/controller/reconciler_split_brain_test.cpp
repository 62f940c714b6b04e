// Two controllers that both believe they lead (a partition of the leader election, a replica
// started by hand): Elasticsearch's conditional writes keep their grants apart, and the Lease
// status writes, conditional on the version each decided on, keep the Lease from showing an
// older grant after a newer one. A controller whose documents are behind a status another
// wrote reads them again before it decides.
#include <gtest/gtest.h>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class ReconcilerSplitBrainTest : public fixture::ReconcileFixture {
 protected:
  // Claim "a" of pod-a on "report" with capacity 3, its finalizer already in place (so the
  // first Lease write a grant makes is its status).
  void add_semaphore_claim() {
    add_claim("a", "pod-a", 0, {{"capacity", 3}});
    ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", "a", kube::PatchType::kMerge,
                           {{"metadata", {{"finalizers", {api::kFinalizer}}}}}, false, {})
                    .ok());
    sync();
  }
  std::string slot_id(std::int64_t slot) { return lock::slot_document_id(kLock, slot); }
};

// The leader read slot 0 while another holder had it; a second controller, reading after that
// holder let go, grants claim "a" slot 0 but its status write meets a conflict. The leader,
// its documents behind, grants "a" slot 1 and records it. The second controller reads its
// documents again on seeing that status, gives its own grant up and keeps the recorded one:
// the Lease never shows the older token, and slot 0 is freed once its grant's validity ends.
TEST_F(ReconcilerSplitBrainTest, AGrantItsLeaseDoesNotRecordGivesWayToTheLaterOneItDoes) {
  ASSERT_NO_FATAL_FAILURE(grant_directly("report", 1, 3, lock::Access::kShared, std::chrono::seconds(60)));
  ASSERT_NO_FATAL_FAILURE(add_semaphore_claim());
  ASSERT_TRUE(reconcile().status.ok());  // no pod yet: "a" waits; slot 0 is the direct holder's
  ASSERT_EQ(status("a")["phase"], "Pending");
  ASSERT_TRUE(es_.remove("", slot_id(0), std::nullopt).ok());  // the direct holder lets go

  add_pod("pod-a");
  std::unique_ptr<Replica> second = replica("controller-b");
  api_.fail_next("patch", kube::resources::eslease_leases(),
                 make_error(ErrorCode::kConflict, "the object has been modified", 409));
  ASSERT_TRUE(second->reconciler->reconcile(kLock).status.ok());
  sync();
  ASSERT_EQ(document("report", 0)->doc.lease, "batch/a") << "granted by the second controller";
  EXPECT_EQ(status("a")["phase"], "Pending") << "its status write lost";
  EXPECT_EQ(holds("pod-a"), "") << "the pod is not told of a grant its Lease does not show";

  ASSERT_TRUE(reconcile().status.ok());  // the leader, behind: slot 0 is the direct holder's
  const std::string recorded = token("a");
  ASSERT_EQ(status("a")["phase"], "Held");
  ASSERT_EQ(recorded, std::to_string(document("report", 1)->token));
  ASSERT_GT(document("report", 1)->token, document("report", 0)->token);

  ASSERT_TRUE(second->reconciler->reconcile(kLock).status.ok());
  sync();
  EXPECT_EQ(token("a"), recorded) << "the older grant is never shown after the recorded one";
  EXPECT_EQ(holds("pod-a"), "a=" + recorded);

  // The second controller leads alone from now on: the grant it gave up ends after its
  // validity, and the recorded one stays, renewed.
  clock_.advance(std::chrono::seconds(api::kDefaultLeaseDurationSeconds + 1));
  second->sessions->tick("batch");
  ASSERT_TRUE(second->reconciler->reconcile(kLock).status.ok());
  sync();
  EXPECT_FALSE(document("report", 0)) << "the given-up grant is released";
  ASSERT_TRUE(document("report", 1));
  EXPECT_EQ(std::to_string(document("report", 1)->token), recorded);
  EXPECT_EQ(token("a"), recorded);
  EXPECT_EQ(status("a")["phase"], "Held");
}

// A controller whose cache of a Lease is behind (another wrote it since) does not write its
// status over what it has not seen: the write is refused, nothing is lost, and the reconcile
// runs again once the cache shows the change.
TEST_F(ReconcilerSplitBrainTest, AStatusWriteOverAVersionNotSeenIsRefusedAndDecidedAgain) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  delete_pod("worker-a");
  // Written by someone else, not yet in the cache.
  ASSERT_TRUE(api_.patch(kube::resources::eslease_leases(), "batch", "claim-b", kube::PatchType::kMerge,
                         {{"status", {{"queuePosition", 5}}}}, true, {})
                  .ok());
  const ReconcileOutcome outcome = reconciler_->reconcile(kLock);
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.error().describe();
  EXPECT_EQ(document("report")->doc.lease, "batch/claim-b") << "the lock is handed over";
  EXPECT_EQ(status("claim-b")["queuePosition"], 5) << "the status it had not seen stands";
  EXPECT_EQ(holds("worker-b"), "");
  ASSERT_TRUE(outcome.requeue_at);
  EXPECT_LE(*outcome.requeue_at, clock_.monotonic() + Reconciler::kDeferredWritesRequeue);

  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-b")["phase"], "Held");
  EXPECT_EQ(token("claim-b"), std::to_string(document("report")->token));
  EXPECT_EQ(holds("worker-b"), "claim-b=" + token("claim-b"));
}

}  // namespace
}  // namespace eslease::controller
