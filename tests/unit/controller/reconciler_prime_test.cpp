// Start-up (Reconciler::prime): the slot documents of every claimed lock read with _mget and
// the first grants of free locks made with _bulk, in batches of 1,000 documents, before the
// reconciles one by one; those then find the grants made and the documents known.
#include <gtest/gtest.h>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

using ReconcilerPrimeTest = fixture::ReconcileFixture;

// A cold start over N free locks costs ceil(N / 1000) _mget and as many _bulk, whatever their
// shapes; the reconciles that follow send Elasticsearch nothing more.
TEST_F(ReconcilerPrimeTest, AColdStartReadsAndGrantsInBatchesOfAThousandDocuments) {
  constexpr int kLocks = 1500;
  std::vector<std::string> ids;
  for (int i = 0; i < kLocks; ++i) {
    const std::string n = std::to_string(i);
    put_pod("pod-" + n);
    put_claim("claim-" + n, "pod-" + n, 0, {{"lockName", "lock-" + n}});
    ids.push_back("batch/lock-" + n);
  }
  sync();
  ASSERT_NO_FATAL_FAILURE(prepare_index());
  const int total = es_.total_calls();
  reconciler_->prime(ids);
  EXPECT_EQ(es_.calls("mget"), 2);
  EXPECT_EQ(es_.calls("bulk"), 2);
  EXPECT_EQ(es_.total_calls() - total, 4);
  EXPECT_EQ(observer_.grants, kLocks);
  for (const char* n : {"0", "999", "1499"})
    EXPECT_EQ(document(std::string("lock-") + n)->doc.lease, std::string("batch/claim-") + n);

  const int primed = es_.total_calls();
  for (const std::string& id : ids) ASSERT_TRUE(reconciler_->reconcile(id).status.ok()) << id;
  sync();
  EXPECT_EQ(es_.total_calls(), primed) << "the grants are made and the documents known";
  for (const char* n : {"0", "1000", "1499"}) {
    const std::string lease = std::string("claim-") + n;
    EXPECT_EQ(status(lease)["phase"], "Held") << lease;
    EXPECT_EQ(token(lease), std::to_string(document(std::string("lock-") + n)->token)) << lease;
  }
}

// A set and a semaphore are primed as they are granted later: a set whole, in the batch's
// _bulk; the semaphore's first claims each on a slot of their own.
TEST_F(ReconcilerPrimeTest, SetsAndSemaphoresArePrimedInTheSameBatch) {
  put_pod("pod-s");
  put_claim("set", "pod-s", 0, {{"lockNames", {"report", "archive", "ledger"}}});
  put_pod("pod-a");
  put_claim("a", "pod-a", 0, {{"lockName", "pool"}, {"capacity", 2}});
  put_pod("pod-w");
  put_claim("w", "pod-w", 0, {{"lockName", "writes"}, {"capacity", 3}, {"access", "Exclusive"}});
  sync();
  ASSERT_NO_FATAL_FAILURE(prepare_index());
  const int total = es_.total_calls();
  reconciler_->prime({"batch/report", "batch/archive", "batch/ledger", "batch/pool", "batch/writes"});
  EXPECT_EQ(es_.total_calls() - total, 2) << "one _mget, one _bulk";
  ASSERT_NO_FATAL_FAILURE(reconcile_all({"report", "archive", "ledger", "pool", "writes"}));
  EXPECT_EQ(es_.total_calls() - total, 2) << "the reconciles found the grants made";
  EXPECT_EQ(status("set")["phase"], "Held");
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_EQ(status("w")["phase"], "Held");
  for (const char* lock : {"report", "archive", "ledger"})
    EXPECT_EQ(document(lock)->doc.grant_docs.size(), 3U);
  for (std::int64_t k : {0, 1, 2}) EXPECT_EQ(document("writes", k)->doc.lease, "batch/w");
}

// A lock whose document is held already (a grant of a previous leader) is not granted by the
// start-up batch: its reconcile decides on it, and adopts the grant its Lease records.
TEST_F(ReconcilerPrimeTest, AHeldLockIsLeftToItsReconcile) {
  add_pod("pod-a");
  add_claim("a", "pod-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  const std::string held = token("a");
  // A new leader: it knows nothing of the documents.
  std::unique_ptr<Replica> successor = replica("controller-b");
  const int bulks = es_.calls("bulk");
  successor->reconciler->prime({kLock});
  EXPECT_EQ(es_.calls("bulk"), bulks) << "nothing granted";
  const int total = es_.total_calls();
  ASSERT_TRUE(successor->reconciler->reconcile(kLock).status.ok());
  EXPECT_EQ(es_.total_calls(), total) << "adopted: renewed by the session, not re-granted";
  sync();
  EXPECT_EQ(token("a"), held);
  EXPECT_TRUE(successor->table.try_lock(kLock).value()->renewing());
}

// A set's documents each carry the version their write got; the grant's token is the largest.
// A new leader that adopts the set renews every document with that one token, as the leader
// that granted it would have: no document shows another token than the Lease.
TEST_F(ReconcilerPrimeTest, AnAdoptedSetIsRenewedWithItsGrantsTokenOnEveryDocument) {
  add_pod("pod-s");
  add_claim("set", "pod-s", 0, {{"lockNames", {"report", "archive", "ledger"}}});
  ASSERT_NO_FATAL_FAILURE(reconcile_all({"report", "archive", "ledger"}));
  const std::string held = token("set");
  ASSERT_NE(std::to_string(document("report")->token), held) << "written by the grant: the versions differ";
  // A new leader, before the one that granted it ever renewed it.
  std::unique_ptr<Replica> successor = replica("controller-b");
  for (const char* lock : {"batch/report", "batch/archive", "batch/ledger"})
    ASSERT_TRUE(successor->reconciler->reconcile(lock).status.ok()) << lock;
  clock_.advance(std::chrono::seconds(1));
  successor->sessions->tick("batch");
  sync();
  EXPECT_EQ(token("set"), held);
  for (const char* lock : {"report", "archive", "ledger"})
    EXPECT_EQ(std::to_string(document(lock)->token), held) << lock;
}

}  // namespace
}  // namespace eslease::controller
