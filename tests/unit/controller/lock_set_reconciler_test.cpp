// The reconcile of lock sets (the design's "Lock shapes"): what a user reads back after each
// reconcile, from the lock documents and the Lease statuses, and the Elasticsearch requests a
// set costs. Claims name pods of namespace "batch"; sets name "report" and other locks.
#include <gtest/gtest.h>

#include <set>

#include "lock/acquirer.h"
#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class LockSetReconcilerTest : public fixture::ReconcileFixture {
 protected:
  void add_set_claim(const std::string& name, const std::string& pod, int age_seconds,
                     const std::vector<std::string>& locks) {
    add_claim(name, pod, age_seconds, {{"lockName", nullptr}, {"lockNames", locks}});
  }
  void add_claim_on(const std::string& lock, const std::string& name, const std::string& pod,
                    int age_seconds) {
    add_claim(name, pod, age_seconds, {{"lockName", lock}});
  }
  std::optional<lock::LockState> document(const std::string& lock) {
    return *store_->get(*lock::parse_lock_id("batch/" + lock));
  }
  ReconcileOutcome reconcile_lock(const std::string& lock) {
    ReconcileOutcome outcome = reconciler_->reconcile("batch/" + lock);
    sync();
    return outcome;
  }
};

// The largest set: 32 locks, read in one _mget and granted in one _bulk.
TEST_F(LockSetReconcilerTest, ASetIsGrantedWholeInOneRequestWithTheLargestToken) {
  add_pod("pod-s");
  std::vector<std::string> locks;
  for (int i = 0; i < 32; ++i) locks.push_back("table-" + std::to_string(i));
  add_set_claim("set", "pod-s", 0, locks);
  EXPECT_EQ(index_.claims_of("batch/table-7"), std::vector<std::string>{"batch/set"})
      << "filed under each lock";
  // The lock index is made and its tokens checked before counting.
  ASSERT_TRUE(
      store_->acquire(*lock::parse_lock_id("batch/warm-up"), lock::direct_grantee("job", Millis(1000))).ok());
  const int bulks = es_.calls("bulk");
  const int total = es_.total_calls();
  ASSERT_TRUE(reconcile_lock("table-7").status.ok());
  EXPECT_EQ(es_.calls("bulk") - bulks, 1);
  EXPECT_EQ(es_.calls("mget"), 1);
  EXPECT_EQ(es_.total_calls() - total, 2) << "one read of the documents, one write";
  ASSERT_EQ(status("set")["phase"], "Held");
  std::set<std::string> grants;
  std::int64_t largest = 0;
  for (const std::string& lock : locks) {
    auto doc = document(lock);
    ASSERT_TRUE(doc) << lock;
    EXPECT_EQ(doc->doc.lease, "batch/set");
    EXPECT_EQ(doc->doc.grant_docs.size(), 32U);
    grants.insert(doc->doc.grant);
    largest = std::max(largest, doc->token);
  }
  EXPECT_EQ(grants.size(), 1U) << "one grant names every document";
  EXPECT_EQ(status("set")["fencingToken"], std::to_string(largest));
  EXPECT_FALSE(status("set").contains("slot")) << "capacity 1: no slot to show";
}

// The session's tick renews every document of the set in its one _bulk, and from then on
// each document carries the grant's token.
TEST_F(LockSetReconcilerTest, EveryDocumentOfTheSetIsRenewedInTheTicksBulk) {
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive", "ledger"});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("set")["phase"], "Held");
  const std::string token = status("set")["fencingToken"];
  clock_.advance(std::chrono::seconds(5));
  const int bulks = es_.calls("bulk");
  sessions_->tick("batch");
  EXPECT_EQ(es_.calls("bulk") - bulks, 1);
  for (const char* lock : {"report", "archive", "ledger"}) {
    auto doc = document(lock);
    ASSERT_TRUE(doc) << lock;
    EXPECT_EQ(std::to_string(doc->token), token) << lock;
    EXPECT_EQ(doc->doc.renewed_at, clock_.now()) << lock;
  }
}

TEST_F(LockSetReconcilerTest, OverlappingSetsNeverHoldOneLockTogether) {
  add_pod("pod-a");
  add_pod("pod-b");
  add_set_claim("forward", "pod-a", 0, {"report", "archive"});
  add_set_claim("backward", "pod-b", 1, {"archive", "report"});
  ASSERT_TRUE(reconcile_lock("archive").status.ok());
  ASSERT_TRUE(reconcile_lock("report").status.ok());
  EXPECT_EQ(status("forward")["phase"], "Held");
  EXPECT_EQ(status("backward")["phase"], "Pending");
  EXPECT_EQ(status("backward")["queuePosition"], 0);
  EXPECT_EQ(document("report")->doc.lease, "batch/forward");
  EXPECT_EQ(document("archive")->doc.lease, "batch/forward");
}

// The set's holder releases: the set's documents go, and each lock goes to the claim waiting
// for it, the other set first as it is older.
TEST_F(LockSetReconcilerTest, AReleasedSetGoesToTheNextClaimsWhole) {
  for (const char* pod : {"pod-a", "pod-b", "pod-c"}) add_pod(pod);
  add_set_claim("first", "pod-a", 0, {"report", "archive"});
  add_set_claim("second", "pod-b", 1, {"archive", "ledger"});
  add_claim_on("report", "single", "pod-c", 2);
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("first")["phase"], "Held");
  EXPECT_EQ(status("second")["phase"], "Pending");
  EXPECT_EQ(status("single")["phase"], "Pending");
  release_claim("first");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("second")["phase"], "Held");
  EXPECT_EQ(status("single")["phase"], "Held");
  EXPECT_EQ(document("archive")->doc.lease, "batch/second");
  EXPECT_EQ(document("ledger")->doc.lease, "batch/second");
  EXPECT_EQ(document("report")->doc.lease, "batch/single");
}

// A holder seen gone: its whole set is handed over at once to the set waiting for it.
TEST_F(LockSetReconcilerTest, ADeadSetHolderHandsTheSetOverInOneRequest) {
  add_pod("pod-a");
  add_pod("pod-b");
  add_set_claim("first", "pod-a", 0, {"report", "archive", "ledger"});
  add_set_claim("next", "pod-b", 1, {"ledger", "archive", "report"});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("first")["phase"], "Held");
  const std::string first_token = status("first")["fencingToken"];
  delete_pod("pod-a");
  const int bulks = es_.calls("bulk");
  const int total = es_.total_calls();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(es_.calls("bulk") - bulks, 1);
  EXPECT_EQ(es_.total_calls() - total, 1) << "its documents are known: written over at the versions read";
  ASSERT_EQ(status("next")["phase"], "Held");
  EXPECT_GT(std::stoll(status("next")["fencingToken"].get<std::string>()), std::stoll(first_token));
  EXPECT_EQ(status("next")["lastTakeover"]["reason"], "PodDeleted");
  for (const char* lock : {"report", "archive", "ledger"}) EXPECT_EQ(document(lock)->doc.lease, "batch/next");
}

// A direct-mode holder on one lock: the set waits, and none of its documents is written.
TEST_F(LockSetReconcilerTest, ASetWaitsForADirectModeHolderOnOneOfItsLocks) {
  const lock::Grantee direct = lock::direct_grantee("job-host", std::chrono::seconds(30));
  auto taken = store_->acquire(*lock::parse_lock_id("batch/archive"), direct);
  ASSERT_TRUE(taken.ok()) << taken.error().describe();
  ASSERT_TRUE(taken->grant);
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive"});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("set")["phase"], "Pending");
  EXPECT_FALSE(document("report")) << "nothing of the set is written while part of it is taken";
  EXPECT_EQ(document("archive")->doc.holder, "job-host");
}

TEST_F(LockSetReconcilerTest, CapacityOneExclusiveIsTheLockAsEver) {
  add_pod("pod-a");
  add_claim("claim-a", "pod-a", 0, {{"capacity", 1}, {"access", "Exclusive"}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(holds("pod-a"), "claim-a=" + status("claim-a")["fencingToken"].get<std::string>());
}

TEST_F(LockSetReconcilerTest, TheSetHoldersPodIsAnnotatedOnce) {
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive"});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("set")["phase"], "Held");
  EXPECT_EQ(holds("pod-s"), "set=" + status("set")["fencingToken"].get<std::string>());
}

}  // namespace
}  // namespace eslease::controller
