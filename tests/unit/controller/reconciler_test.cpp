// One reconcile, whatever the lock's shape: the world it gathers (the locks lock sets and
// grants link, their slot documents read in one request), the steps it takes until nothing is
// left to do, and what it keeps of a lock afterwards. What a user reads back: the lock
// documents, the Lease statuses and finalizers, the holder pods' annotations, the requests.
#include "controller/reconciler.h"

#include <gtest/gtest.h>

#include "lock/acquirer.h"
#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

// Another replica that also believes it leads, renewing the grant a takeover replaces just
// before each takeover, so every takeover meets a newer version of the grant it replaces.
class ContendedStore final : public lock::LockStore {
 public:
  ContendedStore(lock::LockStore& ours, lock::LockStore& theirs, Clock& clock)
      : ours_(ours), theirs_(theirs), clock_(clock) {}
  Status prepare() override { return ours_.prepare(); }
  Status check_tokens(const lock::IssuedBeforeSource& issued_before) override {
    return ours_.check_tokens(issued_before);
  }
  std::optional<std::string> grants_refused() const override { return ours_.grants_refused(); }
  Result<std::vector<std::vector<lock::DocumentRead>>> read_slots(
      const std::vector<lock::SlotRange>& locks) override {
    return ours_.read_slots(locks);
  }
  Result<std::vector<lock::LockState>> list() override { return ours_.list(); }
  std::vector<Result<lock::GrantOutcome>> grant(const std::vector<lock::GrantRequest>& requests) override {
    for (const lock::GrantRequest& request : requests) {
      for (const lock::SlotWrite& write : request.writes) {
        if (!write.replaces) continue;
        auto current = theirs_.read_slots({lock::SlotRange{write.key, write.slot + 1}});
        auto& doc = current->front()[static_cast<std::size_t>(write.slot)];
        if (doc.ok() && *doc)
          (void)theirs_.renew_all(
              {lock::Renewal{lock::HeldDocument{write.key, **doc, clock_.monotonic()}, {}, {}}});
        ++takeovers;
      }
    }
    return ours_.grant(requests);
  }
  Result<lock::ReleaseOutcome> release(const lock::HeldGrant& held, lock::ReleaseScope scope) override {
    return ours_.release(held, scope);
  }
  std::vector<lock::BatchRenewal> renew_all(const std::vector<lock::Renewal>& renewals) override {
    return ours_.renew_all(renewals);
  }
  int takeovers = 0;

 private:
  lock::LockStore& ours_;
  lock::LockStore& theirs_;
  Clock& clock_;
};

class ReconcilerTest : public fixture::ReconcileFixture {
 protected:
  bool renewing(const std::string& lock) {
    std::optional<LockTable::Handle> entry = table_.try_lock("batch/" + lock);
    return entry && (*entry)->renewing();
  }
};

TEST_F(ReconcilerTest, GrantsAFreeLockAndTellsTheHolder) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  ASSERT_NO_FATAL_FAILURE(prepare_index());
  const int requests = es_.total_calls();
  ReconcileOutcome outcome = reconcile();
  ASSERT_TRUE(outcome.status.ok()) << outcome.status.error().describe();
  EXPECT_EQ(es_.total_calls() - requests, 2) << "the document read, then created";
  const json s = status("claim-a");
  EXPECT_EQ(s["phase"], "Held");
  const std::string token = s["fencingToken"];
  auto doc = document("report");
  ASSERT_TRUE(doc);
  EXPECT_EQ(std::to_string(doc->token), token);
  EXPECT_EQ(doc->doc.lease, "batch/claim-a");
  EXPECT_TRUE(doc->doc.grant_docs.empty()) << "a grant of one document names no others";
  EXPECT_FALSE(s.contains("slot")) << "capacity 1: no slot to show";
  EXPECT_EQ(object(kube::resources::eslease_leases(), "claim-a")["metadata"]["finalizers"],
            json::array({"eslease.io/release"}));
  EXPECT_EQ(holds("worker-a"), "claim-a=" + token);
  EXPECT_EQ(observer_.grants, 1);
}

// The design's target: one Elasticsearch request per uncontended grant, once the document is
// known (read before, while the claim's pod was not there yet).
TEST_F(ReconcilerTest, AnUncontendedGrantOnAKnownDocumentIsOneRequest) {
  add_claim("claim-a", "worker-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("claim-a")["phase"], "Pending") << "no pod yet";
  ASSERT_NO_FATAL_FAILURE(prepare_index());
  add_pod("worker-a");
  const int requests = es_.total_calls();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(es_.total_calls() - requests, 1);
  EXPECT_EQ(es_.calls("create"), 2) << "the warm-up's and this grant's";
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

TEST_F(ReconcilerTest, ADeletedHolderIsTakenOverInOneReconcileAndOneRequest) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  const std::string first = token("claim-a");
  delete_pod("worker-a");
  const int requests = es_.total_calls();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(es_.total_calls() - requests, 1) << "the document is known: written over at the version read";
  const json taken = status("claim-b");
  EXPECT_EQ(taken["phase"], "Held");
  EXPECT_GT(std::stoll(taken["fencingToken"].get<std::string>()), std::stoll(first));
  EXPECT_EQ(taken["lastTakeover"]["reason"], "PodDeleted");
  EXPECT_EQ(taken["lastTakeover"]["fromPod"], "worker-a");
  EXPECT_EQ(status("claim-a")["phase"], "Pending");
  EXPECT_EQ(holds("worker-b"), "claim-b=" + taken["fencingToken"].get<std::string>());
  EXPECT_EQ(observer_.takeovers, (std::map<std::string, int>{{"PodDeleted", 1}}));
  EXPECT_EQ(observer_.grants, 2);
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

// Every takeover meets a newer version of the grant (a second replica renews it): once the
// steps run out the reconcile reports an error, so the lock is retried with backoff, and
// writes nothing decided from a world still changing under it.
TEST_F(ReconcilerTest, AnActionStillPendingWhenTheStepsRunOutIsRetried) {
  std::unique_ptr<lock::LockStore> theirs = make_store("controller-b");
  ContendedStore contended(*store_, *theirs, clock_);
  use_store(contended);
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  const std::string held = token("claim-a");
  delete_pod("worker-a");
  const std::size_t writes = api_.writes().size();
  ReconcileOutcome outcome = reconcile();
  // One document: the steps of a reconcile plus two for it.
  EXPECT_EQ(contended.takeovers, Reconciler::kMaxSteps + 2);
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_EQ(outcome.status.error().code, ErrorCode::kUnsettled);
  EXPECT_NE(outcome.status.error().message.find("grant"), std::string::npos)
      << outcome.status.error().message;
  EXPECT_EQ(api_.writes().size(), writes);
  EXPECT_EQ(token("claim-a"), held);
  EXPECT_EQ(observer_.conflicts["take_over"], Reconciler::kMaxSteps + 2);
}

TEST_F(ReconcilerTest, AnUnreadableDocumentMarksTheBackendUnavailable) {
  add_pod("worker-a");
  add_claim("claim-a", "worker-a", 0);
  es_.inject({"get", false, make_error(ErrorCode::kUnavailable, "connection refused")});
  ReconcileOutcome outcome = reconcile();
  ASSERT_FALSE(outcome.status.ok());
  EXPECT_FALSE(reconciler_->backend_available());
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
    if (outcome.requeue_at) advance_to(outcome);
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
  ASSERT_FALSE(store_->check_tokens([beyond] { return lock::IssuedBefore{beyond, Millis(0)}; }).ok());
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
  EXPECT_TRUE(reconciler_->backend_available());

  ASSERT_TRUE(store_->check_tokens([] { return lock::IssuedBefore{}; }).ok());
  ASSERT_TRUE(reconcile().status.ok());
  s = status("claim-a");
  EXPECT_EQ(s["phase"], "Held");
  EXPECT_EQ(backend_condition(s)["status"], "True");
}

// --- the locks decided together -------------------------------------------------------------

TEST_F(ReconcilerTest, OverlappingSetsNeverHoldOneLockTogether) {
  add_pod("pod-a");
  add_pod("pod-b");
  add_set_claim("forward", "pod-a", 0, {"report", "archive"});
  add_set_claim("backward", "pod-b", 1, {"archive", "report"});
  ASSERT_TRUE(reconcile("archive").status.ok());
  ASSERT_TRUE(reconcile("report").status.ok());
  EXPECT_EQ(status("forward")["phase"], "Held");
  EXPECT_EQ(status("backward")["phase"], "Pending");
  EXPECT_EQ(status("backward")["queuePosition"], 0);
  EXPECT_EQ(document("report")->doc.lease, "batch/forward");
  EXPECT_EQ(document("archive")->doc.lease, "batch/forward");
}

// The set's holder releases: the set's documents go, and each lock goes to the claim waiting
// for it, the other set first as it is older.
TEST_F(ReconcilerTest, AReleasedSetGoesToTheNextClaimsWhole) {
  for (const char* pod : {"pod-a", "pod-b", "pod-c"}) add_pod(pod);
  add_set_claim("first", "pod-a", 0, {"report", "archive"});
  add_set_claim("second", "pod-b", 1, {"archive", "ledger"});
  add_claim("single", "pod-c", 2);
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
  EXPECT_TRUE(observer_.takeovers.empty()) << "a grant its holder let go of is not taken over";
}

// A direct-mode holder on one lock: the set waits, and none of its documents is written.
TEST_F(ReconcilerTest, ASetWaitsForADirectModeHolderOnOneOfItsLocks) {
  ASSERT_NO_FATAL_FAILURE(grant_directly("archive"));
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive"});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("set")["phase"], "Pending");
  EXPECT_FALSE(document("report")) << "nothing of the set is written while part of it is taken";
  EXPECT_EQ(document("archive")->doc.holder, "job-host");
}

// Two sets that share one lock, the first holder deleted: the second set is granted in one
// _bulk by a reconcile of one of its own locks. From then on the grant is ours on every lock:
// the reconciles of the shared lock and of every other lock keep it (the controller never takes
// its own takeover for another writer's), its Lease shows Held, and the session renews all of
// its documents.
TEST_F(ReconcilerTest, ASetGrantedOverAnotherSetStaysOursOnEveryLock) {
  const std::vector<std::string> all = {"k1", "k2", "k3", "k4", "k5"};
  add_pod("p-0");
  add_pod("p-1");
  add_set_claim("set-0", "p-0", 0, {"k5", "k3", "k2"});
  ASSERT_TRUE(reconcile("k5").status.ok());
  ASSERT_EQ(status("set-0")["phase"], "Held");
  add_set_claim("set-1", "p-1", 1, {"k1", "k4", "k2"});
  ASSERT_TRUE(reconcile("k1").status.ok());
  ASSERT_EQ(status("set-1")["phase"], "Pending");
  sessions_->tick("batch");
  ASSERT_TRUE(session());

  delete_pod("p-0");
  const int bulks = es_.calls("bulk");
  ASSERT_TRUE(reconcile("k4").status.ok());
  EXPECT_EQ(es_.calls("bulk") - bulks, 2) << "the set granted in one _bulk; set-0's rest released in one";
  ASSERT_EQ(status("set-1")["phase"], "Held");
  const std::string granted = token("set-1");
  EXPECT_EQ(status("set-1")["lastTakeover"]["reason"], "PodDeleted");

  const int before = es_.total_calls();
  ASSERT_NO_FATAL_FAILURE(reconcile_all({"k2", "k1", "k3", "k4", "k5"}));
  EXPECT_EQ(es_.total_calls(), before) << "nothing more to write";
  EXPECT_EQ(status("set-1")["phase"], "Held");
  EXPECT_EQ(token("set-1"), granted);
  EXPECT_FALSE(session()->lists({"set-1", granted}));
  for (const char* lock : {"k1", "k4", "k2"}) {
    EXPECT_TRUE(renewing(lock)) << lock;
    EXPECT_EQ(document(lock)->doc.lease, "batch/set-1") << lock;
  }
  EXPECT_FALSE(document("k5")) << "released";
  EXPECT_FALSE(document("k3")) << "released";

  clock_.advance(std::chrono::seconds(5));
  sessions_->tick("batch");
  for (const char* lock : {"k1", "k4", "k2"}) {
    EXPECT_EQ(document(lock)->doc.renewed_at, lock::to_millis(clock_.now())) << lock;
    EXPECT_EQ(std::to_string(document(lock)->token), granted) << lock;
  }
  EXPECT_TRUE(session()->revoked.empty()) << "nothing revoked";
  EXPECT_EQ(session()->renew_time, lock::to_millis(clock_.now()));
  ASSERT_NO_FATAL_FAILURE(reconcile_all(all));
  EXPECT_EQ(status("set-1")["phase"], "Held");
  EXPECT_EQ(token("set-1"), granted);
}

// A set Lease changes its lockNames while it holds: no claim links the locks it left to the
// lock reconciled, but its grant's documents do, and the grant is judged whole with them:
// revoked on every lock at once (its claim no longer matches it), handed over once the validity
// published to its holder has ended, and the documents nobody claims are released.
TEST_F(ReconcilerTest, AGrantReachingLocksNoClaimLinksIsJudgedWhole) {
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive", "ledger"});
  ASSERT_TRUE(reconcile().status.ok());
  const std::string held = token("set");
  ASSERT_EQ(status("set")["phase"], "Held");
  sessions_->tick("batch");

  patch_spec("set", {{"lockNames", {"report", "audit"}}});
  ASSERT_TRUE(reconcile().status.ok());
  for (const char* lock : {"report", "archive", "ledger"}) EXPECT_FALSE(renewing(lock)) << lock;
  EXPECT_TRUE(session()->lists({"set", held}));
  EXPECT_EQ(status("set")["phase"], "Pending");
  EXPECT_EQ(held_reason("set"), "ClaimMoved");
  for (const char* lock : {"archive", "ledger"})
    EXPECT_EQ(document(lock)->doc.lease, "batch/set") << "not handed over before the validity ends";

  const WallTime renewed = *session()->renew_time;
  clock_.advance(std::chrono::seconds(5));
  sessions_->tick("batch");
  for (const char* lock : {"report", "archive", "ledger"})
    EXPECT_EQ(document(lock)->doc.renewed_at, renewed) << lock << ": a revoked grant is not renewed";

  ReconcileOutcome waiting = reconcile();
  ASSERT_TRUE(waiting.status.ok());
  ASSERT_NO_FATAL_FAILURE(advance_to(waiting));
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("set")["phase"], "Held");
  EXPECT_GT(std::stoll(token("set")), std::stoll(held));
  EXPECT_EQ(document("report")->doc.lease, "batch/set");
  EXPECT_EQ(document("audit")->doc.lease, "batch/set");
  EXPECT_FALSE(document("archive")) << "released: nobody claims it";
  EXPECT_FALSE(document("ledger")) << "released: nobody claims it";
}

// A grant of several documents is renewed whole or not at all: one of its documents revoked
// (as a session tick revokes a document whose renewal failed past its deadline), the tick
// renews none of them, and the reconcile revokes the rest; the claim is served again once the
// validity published to its holder has ended.
TEST_F(ReconcilerTest, ARevokedGrantIsNeverRenewedAndItsReconcileRevokesTheRest) {
  add_pod("pod-s");
  add_set_claim("set", "pod-s", 0, {"report", "archive", "ledger"});
  ASSERT_TRUE(reconcile().status.ok());
  const std::string held = token("set");
  sessions_->tick("batch");
  const WallTime renewed = *session()->renew_time;

  table_.lock(*lock::make_lock_key("batch", "archive"))->revoke(api::Reason::kRenewalFailed);
  clock_.advance(std::chrono::seconds(10));
  enqueued_.clear();
  sessions_->tick("batch");
  for (const char* lock : {"report", "archive", "ledger"})
    EXPECT_EQ(document(lock)->doc.renewed_at, renewed) << lock << " was renewed";
  EXPECT_TRUE(session()->lists({"set", held}));
  ASSERT_FALSE(enqueued_.empty());

  ReconcileOutcome revoked = reconcile(enqueued_.front().substr(std::string("batch/").size()));
  ASSERT_TRUE(revoked.status.ok());
  for (const char* lock : {"report", "archive", "ledger"}) EXPECT_FALSE(renewing(lock)) << lock;
  EXPECT_EQ(status("set")["phase"], "Pending");
  EXPECT_EQ(held_reason("set"), "RenewalFailed");
  EXPECT_TRUE(holds("pod-s").empty());

  ASSERT_NO_FATAL_FAILURE(advance_to(revoked));
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("set")["phase"], "Held");
  EXPECT_GT(std::stoll(token("set")), std::stoll(held));
}

}  // namespace
}  // namespace eslease::controller
