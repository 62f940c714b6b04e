// The reconcile's writes to Elasticsearch, for every shape of lock: a grant of one document or
// several in one request, a hand-over written over the documents of the grant that ended, a
// revocation (no write: listed in the session, handed over once the validity published to its
// holder has ended), and what each counts in the metrics.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class ReconcileWritesTest : public fixture::ReconcileFixture {
 protected:
  void add_shaped_claim(const std::string& name, const std::string& pod, int age_seconds, int capacity,
                        const std::string& access) {
    add_claim(name, pod, age_seconds, {{"capacity", capacity}, {"access", access}});
  }
  // Reconciles `lock` until the moment it asked to be looked at again has come and gone.
  void reconcile_after_requeue(const std::string& lock = "report") {
    ReconcileOutcome waiting = reconcile(lock);
    ASSERT_TRUE(waiting.status.ok());
    ASSERT_NO_FATAL_FAILURE(advance_to(waiting));
    ASSERT_TRUE(reconcile(lock).status.ok());
  }
};

// --- lock sets ------------------------------------------------------------------------------

// The largest set: 32 locks, read in one _mget and granted in one _bulk.
TEST_F(ReconcileWritesTest, ASetIsGrantedWholeInOneReadAndOneWriteWithTheLargestToken) {
  add_pod("pod-s");
  std::vector<std::string> locks;
  for (int i = 0; i < 32; ++i) locks.push_back("table-" + std::to_string(i));
  add_set_claim("set", "pod-s", 0, locks);
  EXPECT_EQ(index_.claims_of("batch/table-7"), std::vector<std::string>{"batch/set"})
      << "filed under each lock";
  ASSERT_NO_FATAL_FAILURE(prepare_index());
  const int bulks = es_.calls("bulk");
  const int total = es_.total_calls();
  ASSERT_TRUE(reconcile("table-7").status.ok());
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
  EXPECT_EQ(token("set"), std::to_string(largest));
  EXPECT_FALSE(status("set").contains("slot")) << "capacity 1: no slot to show";
  EXPECT_EQ(observer_.grants, 1);
}

// A holder seen gone: its whole set is handed over at once to the set waiting for it.
TEST_F(ReconcileWritesTest, ADeadSetHolderHandsTheSetOverInOneRequest) {
  add_pod("pod-a");
  add_pod("pod-b");
  std::vector<std::string> locks;
  for (int i = 0; i < 32; ++i) locks.push_back("table-" + std::to_string(i));
  std::vector<std::string> reversed(locks.rbegin(), locks.rend());
  add_set_claim("first", "pod-a", 0, locks);
  add_set_claim("next", "pod-b", 1, reversed);
  ASSERT_TRUE(reconcile("table-0").status.ok());
  ASSERT_EQ(status("first")["phase"], "Held");
  const std::string first_token = token("first");
  delete_pod("pod-a");
  const int bulks = es_.calls("bulk");
  const int total = es_.total_calls();
  ASSERT_TRUE(reconcile("table-31").status.ok());
  EXPECT_EQ(es_.calls("bulk") - bulks, 1);
  EXPECT_EQ(es_.total_calls() - total, 1) << "its documents are known: written over at the versions read";
  ASSERT_EQ(status("next")["phase"], "Held");
  EXPECT_GT(std::stoll(token("next")), std::stoll(first_token));
  EXPECT_EQ(status("next")["lastTakeover"]["reason"], "PodDeleted");
  for (const std::string& lock : locks) EXPECT_EQ(document(lock)->doc.lease, "batch/next") << lock;
  EXPECT_EQ(observer_.takeovers, (std::map<std::string, int>{{"PodDeleted", 1}}))
      << "one grant, one takeover";
}

// A set's holder dies and a claim on one of its locks takes that lock over: the successor's
// status names the takeover, whichever lock of the set is reconciled, and the set's other
// lock is let go of.
TEST_F(ReconcileWritesTest, AClaimOnOneLockOfADeadHoldersSetRecordsTheTakeover) {
  for (const bool reconcile_the_other_lock : {false, true}) {
    SCOPED_TRACE(reconcile_the_other_lock ? "the set's other lock reconciled"
                                          : "the claimed lock reconciled");
    const std::string n = reconcile_the_other_lock ? "2" : "1";
    const std::string orders = "orders" + n, customers = "customers" + n;
    add_pod("merger" + n);
    add_pod("single" + n);
    add_set_claim("merger" + n, "merger" + n, 10, {orders, customers});
    ASSERT_TRUE(reconcile(orders).status.ok());
    ASSERT_EQ(status("merger" + n)["phase"], "Held");
    add_claim("single" + n, "single" + n, 5, {{"lockName", customers}});
    ASSERT_TRUE(reconcile(customers).status.ok());
    ASSERT_EQ(status("single" + n)["phase"], "Pending");
    delete_pod("merger" + n);
    ASSERT_TRUE(reconcile(reconcile_the_other_lock ? orders : customers).status.ok());
    ASSERT_TRUE(reconcile(reconcile_the_other_lock ? customers : orders).status.ok());
    EXPECT_EQ(status("single" + n)["phase"], "Held");
    EXPECT_EQ(status("single" + n)["lastTakeover"]["fromPod"], "merger" + n) << status("single" + n).dump();
    EXPECT_EQ(held_reason("single" + n), "TakenOver");
    EXPECT_FALSE(document(orders)) << "the set's other lock is let go of";
  }
}

// The session's tick renews every document of the set in its one _bulk, and from then on
// each document carries the grant's token.
TEST_F(ReconcileWritesTest, EveryDocumentOfASetIsRenewedInTheTicksBulk) {
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive", "ledger"});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("set")["phase"], "Held");
  clock_.advance(std::chrono::seconds(5));
  const int bulks = es_.calls("bulk");
  sessions_->tick("batch");
  EXPECT_EQ(es_.calls("bulk") - bulks, 1);
  for (const char* lock : {"report", "archive", "ledger"}) {
    auto doc = document(lock);
    ASSERT_TRUE(doc) << lock;
    EXPECT_EQ(std::to_string(doc->token), token("set")) << lock;
    EXPECT_EQ(doc->doc.renewed_at, clock_.now()) << lock;
  }
}

// --- capacity and access --------------------------------------------------------------------

TEST_F(ReconcileWritesTest, ASemaphoreGrantsUpToItsCapacityEachOnItsOwnSlot) {
  for (const char* name : {"a", "b", "c"}) {
    add_pod(std::string("pod-") + name);
    add_shaped_claim(name, std::string("pod-") + name, name[0] - 'a', 2, "Shared");
  }
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_EQ(status("b")["phase"], "Held");
  EXPECT_EQ(status("c")["phase"], "Pending");
  EXPECT_EQ(status("c")["queuePosition"], 0);
  EXPECT_EQ(std::set<json>({status("a")["slot"], status("b")["slot"]}), std::set<json>({0, 1}));
  for (std::int64_t k : {0, 1}) {
    auto doc = document("report", k);
    ASSERT_TRUE(doc) << "slot " << k;
    EXPECT_EQ(doc->doc.capacity, 2);
    EXPECT_EQ(doc->doc.access, lock::Access::kShared);
    EXPECT_EQ(doc->doc.slot, k);
    EXPECT_TRUE(doc->doc.grant_docs.empty()) << "a slot is a grant of one document";
  }
  EXPECT_NE(status("a")["fencingToken"], status("b")["fencingToken"]);
  EXPECT_EQ(holds("pod-a"), "a=" + token("a"));
}

// `capacity: N` alone is a counting semaphore: claims that do not state an access are Shared.
TEST_F(ReconcileWritesTest, ClaimsStatingOnlyACapacityHoldSideBySide) {
  for (const char* name : {"a", "b", "c", "d"}) {
    add_pod(std::string("pod-") + name);
    add_claim(name, std::string("pod-") + name, name[0] - 'a', {{"capacity", 3}});
  }
  ASSERT_TRUE(reconcile().status.ok());
  for (const char* name : {"a", "b", "c"}) EXPECT_EQ(status(name)["phase"], "Held") << name;
  EXPECT_EQ(status("d")["phase"], "Pending");
  EXPECT_EQ(status("d")["queuePosition"], 0);
  for (std::int64_t k : {0, 1, 2}) {
    auto doc = document("report", k);
    ASSERT_TRUE(doc) << "slot " << k;
    EXPECT_EQ(doc->doc.access, lock::Access::kShared);
  }
}

TEST_F(ReconcileWritesTest, AnExclusiveClaimHoldsEverySlotWithOneTokenInOneRequest) {
  add_pod("pod-w");
  add_shaped_claim("writer", "pod-w", 0, 3, "Exclusive");
  ASSERT_NO_FATAL_FAILURE(prepare_index());
  const int total = es_.total_calls();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(es_.total_calls() - total, 2) << "one read of the slots, one _bulk";
  ASSERT_EQ(status("writer")["phase"], "Held");
  std::set<std::string> grants;
  for (std::int64_t k : {0, 1, 2}) {
    auto doc = document("report", k);
    ASSERT_TRUE(doc) << "slot " << k;
    EXPECT_EQ(doc->doc.lease, "batch/writer");
    EXPECT_EQ(doc->doc.grant_docs.size(), 3U);
    grants.insert(doc->doc.grant);
    EXPECT_LE(doc->token, std::stoll(token("writer")));
  }
  EXPECT_EQ(grants.size(), 1U) << "one grant";
  EXPECT_FALSE(grants.begin()->empty());
}

TEST_F(ReconcileWritesTest, ADeletedHolderFreesItsSlotForTheNextClaimAtOnce) {
  for (const char* name : {"a", "b", "c"}) {
    add_pod(std::string("pod-") + name);
    add_shaped_claim(name, std::string("pod-") + name, name[0] - 'a', 2, "Shared");
  }
  ASSERT_TRUE(reconcile().status.ok());
  const json a_before = status("a");
  const json b_slot = status("b")["slot"];
  delete_pod("pod-b");
  const int total = es_.total_calls();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(es_.total_calls() - total, 1);
  EXPECT_EQ(status("c")["phase"], "Held");
  EXPECT_EQ(status("c")["slot"], b_slot);
  EXPECT_EQ(status("c")["lastTakeover"]["reason"], "PodDeleted");
  EXPECT_EQ(status("a")["fencingToken"], a_before["fencingToken"]) << "the other holder keeps its grant";
}

TEST_F(ReconcileWritesTest, AWriterWaitsForTheReaderAndIsNotPassedByALaterOne) {
  add_pod("pod-r1");
  add_shaped_claim("r1", "pod-r1", 0, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  add_pod("pod-w");
  add_shaped_claim("w", "pod-w", 1, 2, "Exclusive");
  add_pod("pod-r2");
  add_shaped_claim("r2", "pod-r2", 2, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("w")["phase"], "Pending");
  EXPECT_EQ(status("r2")["phase"], "Pending");
  delete_pod("pod-r1");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("w")["phase"], "Held");
  EXPECT_EQ(status("r2")["phase"], "Pending");
}

TEST_F(ReconcileWritesTest, CapacityOneExclusiveIsTheLockAsEver) {
  add_pod("pod-a");
  add_claim("claim-a", "pod-a", 0, {{"capacity", 1}, {"access", "Exclusive"}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(holds("pod-a"), "claim-a=" + token("claim-a"));
  EXPECT_TRUE(document("report")->doc.grant_docs.empty());
}

// --- election fail-over, one rule for every shape ---------------------------------------------

// An election claim whose holder pod is confirmed dead passes its slot to another of its pods
// in one write, before any claim that was waiting: the Lease stays Held, with a new token and
// lastTakeover saying why.
TEST_F(ReconcileWritesTest, AnElectionOnASemaphoreFailsOverBeforeAWaitingClaim) {
  add_pod("pod-x");
  add_pod("elect-1", {{"app", "elect"}});
  add_pod("elect-2", {{"app", "elect"}});
  add_pod("pod-w");
  add_shaped_claim("other", "pod-x", 0, 2, "Shared");
  add_election_claim("leader", "elect", 1, {{"capacity", 2}, {"access", "Shared"}});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("leader")["phase"], "Held");
  ASSERT_EQ(status("leader")["holder"]["podName"], "elect-1");
  add_shaped_claim("waiter", "pod-w", 2, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("waiter")["phase"], "Pending");
  const std::string before = token("leader");
  const json slot = status("leader")["slot"];

  delete_pod("elect-1");
  const int total = es_.total_calls();
  const std::size_t writes = api_.writes().size();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(es_.total_calls() - total, 1) << "one write over the dead holder's slot";
  const json failed_over = status("leader");
  EXPECT_EQ(failed_over["phase"], "Held");
  EXPECT_EQ(failed_over["holder"]["podName"], "elect-2");
  EXPECT_EQ(failed_over["slot"], slot);
  EXPECT_GT(std::stoll(failed_over["fencingToken"].get<std::string>()), std::stoll(before));
  EXPECT_EQ(failed_over["lastTakeover"]["reason"], "PodDeleted");
  EXPECT_EQ(failed_over["lastTakeover"]["fromPod"], "elect-1");
  EXPECT_EQ(status("waiter")["phase"], "Pending");
  // The Lease never showed Pending in between.
  for (std::size_t i = writes; i < api_.writes().size(); ++i)
    EXPECT_NE(api_.writes()[i].second.value(json::json_pointer("/status/phase"), json()), "Pending")
        << api_.writes()[i].second;
  EXPECT_EQ(document("report", slot.get<std::int64_t>())->doc.holder, "batch/elect-2");
}

TEST_F(ReconcileWritesTest, AnElectionOnASetFailsOverWholeBeforeAWaitingClaim) {
  add_pod("elect-1", {{"app", "elect"}});
  add_pod("elect-2", {{"app", "elect"}});
  add_pod("pod-w");
  add_election_claim("leader", "elect", 0, {{"lockNames", {"report", "archive", "ledger"}}});
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("leader")["phase"], "Held");
  add_set_claim("waiter", "pod-w", 1, {"ledger", "archive"});
  ASSERT_TRUE(reconcile("ledger").status.ok());
  ASSERT_EQ(status("waiter")["phase"], "Pending");
  const std::string before = token("leader");

  delete_pod("elect-1");
  const int total = es_.total_calls();
  const int bulks = es_.calls("bulk");
  ASSERT_TRUE(reconcile("archive").status.ok());
  EXPECT_EQ(es_.total_calls() - total, 1);
  EXPECT_EQ(es_.calls("bulk") - bulks, 1) << "the whole set in one _bulk";
  EXPECT_EQ(status("leader")["phase"], "Held");
  EXPECT_EQ(status("leader")["holder"]["podName"], "elect-2");
  EXPECT_GT(std::stoll(token("leader")), std::stoll(before));
  EXPECT_EQ(status("leader")["lastTakeover"]["reason"], "PodDeleted");
  EXPECT_EQ(status("waiter")["phase"], "Pending");
  for (const char* lock : {"report", "archive", "ledger"})
    EXPECT_EQ(document(lock)->doc.holder, "batch/elect-2");
  EXPECT_EQ(holds("elect-2"), "leader=" + token("leader"));
}

// --- revocation -------------------------------------------------------------------------------

// An Exclusive grant on capacity 3, revoked: its slots go to three Shared claims once the
// validity published to its holder has ended, never before; each new grant is one takeover,
// with the revocation's reason, and the revoked grant is never counted as expired.
class RevokedExclusiveGrant : public ReconcileWritesTest {
 protected:
  void SetUp() override {
    ReconcileWritesTest::SetUp();
    add_pod("pod-w");
    add_shaped_claim("writer", "pod-w", 0, 3, "Exclusive");
    for (const char* name : {"r1", "r2", "r3"}) {
      add_pod(std::string("pod-") + name);
      add_shaped_claim(name, std::string("pod-") + name, 1, 3, "Shared");
    }
    ASSERT_TRUE(reconcile().status.ok());
    ASSERT_EQ(status("writer")["phase"], "Held");
    held_ = token("writer");
    sessions_->tick("batch");
    ASSERT_TRUE(session());
  }
  // The reconcile that revokes the grant: listed in the session, nothing written over it.
  ReconcileOutcome revoke() {
    ReconcileOutcome revoked = reconcile();
    EXPECT_TRUE(revoked.status.ok());
    EXPECT_TRUE(session()->lists({"writer", held_}));
    EXPECT_TRUE(holds("pod-w").empty());
    return revoked;
  }
  // The hand-over once the validity published to the holder has ended; `reason` is the
  // takeover's.
  void expect_hand_over_after_validity(const ReconcileOutcome& revoked, const std::string& reason) {
    ASSERT_TRUE(revoked.requeue_at);
    // Just before the validity ends, nothing is handed over.
    clock_.advance(std::chrono::ceil<Millis>(*revoked.requeue_at - clock_.monotonic()) - Millis(1));
    ASSERT_TRUE(reconcile().status.ok());
    for (const char* name : {"r1", "r2", "r3"}) EXPECT_EQ(status(name)["phase"], "Pending") << name;
    for (std::int64_t k : {0, 1, 2}) EXPECT_EQ(document("report", k)->doc.lease, "batch/writer");
    clock_.advance(Millis(1));
    ASSERT_TRUE(reconcile().status.ok());
    for (const char* name : {"r1", "r2", "r3"}) {
      EXPECT_EQ(status(name)["phase"], "Held") << name;
      EXPECT_EQ(status(name)["lastTakeover"]["reason"], reason) << name;
      EXPECT_GT(std::stoll(token(name)), std::stoll(held_)) << name;
    }
    EXPECT_EQ(observer_.takeovers, (std::map<std::string, int>{{reason, 3}})) << "each new grant once";
    EXPECT_EQ(observer_.expirations, 0) << "a revoked grant did not expire";
  }
  std::string held_;
};

TEST_F(RevokedExclusiveGrant, AHolderUnreadyPastItsGraceIsHandedOverAfterItsValidity) {
  set_ready("pod-w", false);
  clock_.advance(std::chrono::seconds(11));  // past the default livenessGraceSeconds
  const ReconcileOutcome revoked = revoke();
  EXPECT_EQ(status("writer")["phase"], "Pending");
  EXPECT_EQ(held_reason("writer"), "PodNotReady");
  ASSERT_NO_FATAL_FAILURE(expect_hand_over_after_validity(revoked, "PodNotReady"));
}

TEST_F(RevokedExclusiveGrant, ALeaseDeletedByAnotherIsHandedOverAfterItsValidityAsRevoked) {
  json lease = object(kube::resources::eslease_leases(), "writer");
  lease["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z";
  api_.put_object(kube::resources::eslease_leases(), lease);
  sync();
  ASSERT_NO_FATAL_FAILURE(expect_hand_over_after_validity(revoke(), "Revoked"));
  EXPECT_EQ(
      object(kube::resources::eslease_leases(), "writer")["metadata"].value("finalizers", json::array()),
      json::array())
      << "its grant is gone: the Lease may go";
}

// A grant that simply ran out (nobody renewed it) expired: its end is counted once, however
// many of its documents the next grants take.
TEST_F(ReconcileWritesTest, AnExpiredGrantOfSeveralDocumentsIsCountedOnce) {
  ASSERT_NO_FATAL_FAILURE(grant_directly("report", 3, 3, lock::Access::kExclusive));
  for (const char* name : {"r1", "r2", "r3"}) {
    add_pod(std::string("pod-") + name);
    add_shaped_claim(name, std::string("pod-") + name, 1, 3, "Shared");
  }
  ASSERT_NO_FATAL_FAILURE(reconcile_after_requeue());
  for (const char* name : {"r1", "r2", "r3"}) {
    EXPECT_EQ(status(name)["phase"], "Held") << name;
    EXPECT_EQ(status(name)["lastTakeover"]["reason"], "Expired") << name;
  }
  EXPECT_EQ(observer_.takeovers, (std::map<std::string, int>{{"Expired", 3}}));
  EXPECT_EQ(observer_.expirations, 1);
}

// The holder's claim is patched to another shape (Exclusive to Shared) while it holds: its
// grant no longer matches its claim, is revoked, and the claim is granted again at once in its
// new shape, to the same pod, with a new token. Its old grant keeps its other document until
// the validity published to its holder has ended: only then does the next claim share the lock.
TEST_F(ReconcileWritesTest,
       AClaimPatchedToAnotherAccessIsGrantedAgainAtOnceAndSharesOnlyAfterItsOldValidity) {
  add_pod("pod-a");
  add_pod("pod-b");
  add_pod("pod-c");
  add_shaped_claim("a", "pod-a", 0, 2, "Exclusive");
  add_shaped_claim("b", "pod-b", 1, 2, "Shared");
  add_shaped_claim("c", "pod-c", 2, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("a")["phase"], "Held");
  const std::string held = token("a");
  sessions_->tick("batch");

  patch_spec("a", {{"access", "Shared"}});
  ReconcileOutcome reshaped = reconcile();
  ASSERT_TRUE(reshaped.status.ok());
  EXPECT_TRUE(session()->lists({"a", held})) << "the old grant's validity no longer grows";
  EXPECT_EQ(status("a")["phase"], "Held") << "granted again in its new shape";
  EXPECT_NE(token("a"), held);
  EXPECT_EQ(document("report", 0)->doc.access, lock::Access::kShared);
  EXPECT_EQ(std::to_string(document("report", 0)->token), token("a"));
  EXPECT_EQ(document("report", 1)->doc.access, lock::Access::kExclusive) << "the old grant's, until it ends";
  EXPECT_EQ(status("b")["phase"], "Pending");
  ASSERT_TRUE(reshaped.requeue_at);
  clock_.advance(std::chrono::ceil<Millis>(*reshaped.requeue_at - clock_.monotonic()) - Millis(1));
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("b")["phase"], "Pending");

  clock_.advance(Millis(1));
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_EQ(status("b")["phase"], "Held");
  EXPECT_FALSE(status("b").contains("lastTakeover")) << "nobody lost the slot";
  EXPECT_EQ(status("c")["phase"], "Pending");
  for (std::int64_t k : {0, 1}) {
    EXPECT_EQ(document("report", k)->doc.access, lock::Access::kShared) << "slot " << k;
    EXPECT_TRUE(document("report", k)->doc.grant_docs.empty()) << "slot " << k;
  }
  EXPECT_TRUE(observer_.takeovers.empty());
}

// The same patch made while no controller ran: a new leader finds the old grant recorded in the
// Lease, lists it as revoked in the session, and grants the claim again at once in its new shape.
TEST_F(ReconcileWritesTest, ANewLeaderGrantsAClaimPatchedWhileNoControllerRanAgainAtOnce) {
  add_pod("pod-a");
  add_pod("pod-b");
  add_shaped_claim("a", "pod-a", 0, 2, "Exclusive");
  add_shaped_claim("b", "pod-b", 1, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  const std::string held = token("a");
  sessions_->tick("batch");

  patch_spec("a", {{"access", "Shared"}});
  std::unique_ptr<Replica> successor = replica("controller-b");
  ASSERT_TRUE(successor->reconciler->reconcile(kLock).status.ok());
  EXPECT_TRUE(session()->lists({"a", held}));
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_NE(token("a"), held);
  EXPECT_EQ(document("report", 1)->doc.access, lock::Access::kExclusive) << "the old grant's, until it ends";
  EXPECT_EQ(status("b")["phase"], "Pending");
}

// A semaphore's capacity raised and then lowered on every claim: the Shared holders within it
// keep their grants (the same tokens, their documents renewed as before); the raise admits the
// next claim at once; the holder beyond the lowered capacity loses its grant.
TEST_F(ReconcileWritesTest, ASemaphoresCapacityChangedLeavesItsSharedHoldersWithinIt) {
  for (const char* name : {"a", "b", "c"}) {
    add_pod(std::string("pod-") + name);
    add_shaped_claim(name, std::string("pod-") + name, 0, 2, "Shared");
  }
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("a")["phase"], "Held");
  ASSERT_EQ(status("b")["phase"], "Held");
  ASSERT_EQ(status("c")["phase"], "Pending");
  const std::string a = token("a"), b = token("b");
  sessions_->tick("batch");

  for (const char* name : {"a", "b", "c"}) patch_spec(name, {{"capacity", 3}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("c")["phase"], "Held") << "the slot the raise added, at once";
  EXPECT_EQ(token("a"), a);
  EXPECT_EQ(token("b"), b);
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_EQ(status("b")["phase"], "Held");
  sessions_->tick("batch");
  EXPECT_FALSE(session()->lists({"a", a}));
  EXPECT_FALSE(session()->lists({"b", b}));

  for (const char* name : {"a", "b", "c"}) patch_spec(name, {{"capacity", 2}});
  clock_.advance(LeaseWriter::kCorrectionPace);  // c's status was put right after the last patch
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_EQ(status("b")["phase"], "Held");
  EXPECT_EQ(token("a"), a);
  EXPECT_EQ(status("c")["phase"], "Pending") << "its slot is beyond the capacity";
  EXPECT_EQ(held_reason("c"), "ClaimMoved");
}

}  // namespace
}  // namespace eslease::controller
