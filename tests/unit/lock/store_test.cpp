// The Elasticsearch lock store on one lock of capacity 1 (its one document) against the fake
// document API: what each operation costs and how lost answers are settled.
#include <gtest/gtest.h>

#include "lock/lock_store.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/lock_grants.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;
using testing::one_lock;
using testing::only_document;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto made = make_es_lock_store(api_, clock_);
    ASSERT_TRUE(made.ok());
    store_ = std::move(*made);
    ASSERT_TRUE(store_->prepare().ok());
  }

  static LockKey key(const std::string& name = "nightly") { return *make_lock_key("batch", name); }
  static Grantee grantee(const std::string& holder, const std::string& uid) {
    Grantee c;
    c.holder = holder;
    c.lease_uid = uid;
    c.ttl = Millis(10000);
    return c;
  }
  HeldGrant acquire(const LockKey& k, const Grantee& c) { return testing::granted(*store_, one_lock(k, c)); }
  // Writes over `dead`, the version judged expired: one conditional write.
  Result<GrantOutcome> take_over(const LockState& dead, const Grantee& c) {
    return grant_one(*store_, one_lock(key(), c, dead));
  }
  static Renewal renewal(const HeldGrant& g) { return Renewal{g.docs.front(), Millis(0), std::nullopt}; }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
};

TEST_F(StoreTest, PrepareCreatesAMissingIndexOnlyAndARestartSendsNoCreate) {
  EXPECT_EQ(api_.calls("indices.create"), 1) << "the first start found no index";
  const int reads = api_.calls("indices.get");
  auto restarted = make_es_lock_store(api_, clock_);
  ASSERT_TRUE(restarted.ok());
  ASSERT_TRUE((*restarted)->prepare().ok());
  // Elasticsearch answers a create of an existing index with a 400, which the request
  // metrics would record as an error after every restart.
  EXPECT_EQ(api_.calls("indices.create"), 1) << "the index exists: read, not created again";
  EXPECT_GT(api_.calls("indices.get"), reads);
}

TEST_F(StoreTest, AGrantOfOneLockIsOneCreateAndItsTokenIsTheVersions) {
  const int before = api_.total_calls();
  const MonoTime sent = clock_.monotonic();
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-a", "uid-a")));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->grant);
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(api_.calls("create"), 1);
  const auto stored = api_.peek("batch/nightly");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->source["fencingToken"], 0) << "the granting write cannot know its own version";
  EXPECT_TRUE(r->grant->id.empty()) << "a grant of one document has no grant id";
  EXPECT_EQ(r->grant->token, *fencing_token_of(stored->version));
  EXPECT_EQ(only_document(*r->grant).token, r->grant->token);
  EXPECT_EQ(r->grant->valid_until, sent + Millis(10000));
  EXPECT_EQ(stored->source["transitions"], 1);
  EXPECT_EQ(stored->source["holder"], "pod-a");
  EXPECT_EQ(stored->source["access"], "Exclusive");
}

TEST_F(StoreTest, AHeldLockIsReportedWithItsHolder) {
  acquire(key(), grantee("pod-a", "uid-a"));
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-b", "uid-b")));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
  ASSERT_EQ(r->current.size(), 1u);
  ASSERT_TRUE(r->current[0]);
  EXPECT_EQ(r->current[0]->doc.holder, "pod-a");
}

TEST_F(StoreTest, ReadLockIsOneRealtimeGet) {
  const int before = api_.total_calls();
  auto free = read_lock(*store_, key());
  ASSERT_TRUE(free.ok());
  EXPECT_FALSE(*free);
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  auto held = read_lock(*store_, key());
  ASSERT_TRUE(held.ok() && *held);
  EXPECT_EQ((*held)->doc.holder, "pod-a");
  EXPECT_EQ((*held)->token, g.token);
  EXPECT_EQ(api_.calls("get"), 2);
  EXPECT_EQ(api_.total_calls() - before, 3);
}

TEST_F(StoreTest, RenewalWritesTheRealTokenAndKeepsIt) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  clock_.advance(Millis(3000));
  const MonoTime sent = clock_.monotonic();
  GrantRenewal r = renew_grant(*store_, g, Millis(0));
  ASSERT_EQ(r.result, RenewalResult::kRenewed);
  EXPECT_EQ(r.grant->token, g.token);
  EXPECT_EQ(r.grant->valid_until, sent + Millis(10000));
  EXPECT_EQ(api_.peek("batch/nightly")->source["fencingToken"], g.token);
  GrantRenewal again = renew_grant(*store_, *r.grant, Millis(0));
  ASSERT_EQ(again.result, RenewalResult::kRenewed);
  EXPECT_EQ(again.grant->token, g.token);
  EXPECT_EQ(api_.calls("bulk"), 2) << "one _bulk per renewal";
}

TEST_F(StoreTest, AStaleRenewalIsLostAndNamesTheNewHolder) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  auto taken = take_over(only_document(g), grantee("pod-b", "uid-b"));
  ASSERT_TRUE(taken.ok() && taken->grant);
  auto r = store_->renew_all({renewal(g)});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].result, RenewalResult::kLost);
  EXPECT_FALSE(r[0].held);
  ASSERT_TRUE(r[0].current);
  EXPECT_EQ(r[0].current->doc.holder, "pod-b");
  GrantRenewal lost = renew_grant(*store_, g, Millis(0));
  EXPECT_EQ(lost.result, RenewalResult::kLost);
  EXPECT_NE(lost.why.find("lost to pod-b"), std::string::npos) << lost.why;
}

TEST_F(StoreTest, TokensGrowThroughReleaseReacquireTakeoverAndTermBump) {
  std::vector<std::int64_t> tokens;
  HeldGrant a = acquire(key(), grantee("pod-a", "uid-a"));
  tokens.push_back(a.token);
  ASSERT_EQ(*store_->release(a, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/nightly"));
  HeldGrant b = acquire(key(), grantee("pod-b", "uid-b"));
  tokens.push_back(b.token);
  GrantRenewal renewed = renew_grant(*store_, b, Millis(0));
  ASSERT_EQ(renewed.result, RenewalResult::kRenewed);
  auto c = take_over(only_document(*renewed.grant), grantee("pod-c", "uid-c"));
  ASSERT_TRUE(c.ok() && c->grant);
  tokens.push_back(c->grant->token);
  EXPECT_EQ(only_document(*c->grant).doc.transitions, 2);
  api_.bump_primary_term();
  auto d = take_over(only_document(*c->grant), grantee("pod-d", "uid-d"));
  ASSERT_TRUE(d.ok() && d->grant);
  tokens.push_back(d->grant->token);
  EXPECT_EQ(only_document(*d->grant).doc.transitions, 3);
  for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_GT(tokens[i], tokens[i - 1]) << i;
  EXPECT_GE(tokens.back(), 2LL << 32);
}

TEST_F(StoreTest, ATakeoverOfAVersionThatMovedIsRefused) {
  HeldGrant a = acquire(key(), grantee("pod-a", "uid-a"));
  const LockState seen = only_document(a);
  ASSERT_EQ(renew_grant(*store_, a, Millis(0)).result, RenewalResult::kRenewed);  // alive after all
  const int before = api_.total_calls();
  auto r = take_over(seen, grantee("pod-b", "uid-b"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
  EXPECT_EQ(r->current[0]->doc.holder, "pod-a");
  EXPECT_EQ(api_.total_calls() - before, 2) << "the conditional write, and the read that settles it";
}

TEST_F(StoreTest, AReleaseOnlyDeletesOurOwnVersion) {
  HeldGrant a = acquire(key(), grantee("pod-a", "uid-a"));
  auto b = take_over(only_document(a), grantee("pod-b", "uid-b"));
  ASSERT_TRUE(b.ok() && b->grant);
  auto r = store_->release(a, ReleaseScope::kGrant);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, ReleaseOutcome::kNotHeld);
  ASSERT_TRUE(api_.peek("batch/nightly"));
  EXPECT_EQ(api_.peek("batch/nightly")->source["holder"], "pod-b");
  EXPECT_EQ(api_.calls("delete"), 1);
}

TEST_F(StoreTest, AReleaseOfOneLockIsOneDelete) {
  HeldGrant a = acquire(key(), grantee("pod-a", "uid-a"));
  const int before = api_.total_calls();
  ASSERT_EQ(*store_->release(a, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(api_.calls("delete"), 1);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

TEST_F(StoreTest, ACreateAppliedButWhoseAnswerWasLostIsOurGrant) {
  api_.inject({"create", true, make_error(ErrorCode::kTimeout, "no answer")});
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-a", "uid-a")));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_TRUE(r->grant);
  EXPECT_EQ(only_document(*r->grant).doc.holder, "pod-a");
  EXPECT_EQ(api_.calls("get"), 1);
}

TEST_F(StoreTest, ACreateNotAppliedWithUnknownOutcomeIsAnErrorNotAGrant) {
  api_.inject({"create", false, make_error(ErrorCode::kTimeout, "no answer")});
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-a", "uid-a")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

TEST_F(StoreTest, AConflictWithAnotherGranteesDocumentIsNotOurs) {
  acquire(key(), grantee("pod-a", "uid-a"));
  // Same holder name, different grantee: a name is not an identity.
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-a", "uid-other")));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
}

TEST_F(StoreTest, AnUnknownOutcomeWithAnUnreadableDocumentIsAnError) {
  api_.inject({"create", true, make_error(ErrorCode::kUnavailable, "reset")});
  api_.inject({"get", false, make_error(ErrorCode::kUnavailable, "down")});
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-a", "uid-a")));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("outcome unknown"), std::string::npos);
}

// A renewal's lost answer is settled by the next renewal, which meets our own write.
TEST_F(StoreTest, ARenewalAppliedButWhoseAnswerWasLostIsSettledByTheNext) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  clock_.advance(Millis(2000));
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "no answer")});
  GrantRenewal first = renew_grant(*store_, g, Millis(0));
  ASSERT_EQ(first.result, RenewalResult::kFailed);
  EXPECT_EQ(first.grant->valid_until, g.valid_until) << "unconfirmed: the deadline stays";
  GrantRenewal second = renew_grant(*store_, *first.grant, Millis(0));
  ASSERT_NE(second.result, RenewalResult::kLost);
  EXPECT_EQ(second.grant->docs[0].state.version, api_.peek("batch/nightly")->version)
      << "the newest version, read back";
  clock_.advance(Millis(1000));
  const MonoTime sent = clock_.monotonic();
  GrantRenewal third = renew_grant(*store_, *second.grant, Millis(0));
  ASSERT_EQ(third.result, RenewalResult::kRenewed);
  EXPECT_EQ(third.grant->valid_until, sent + Millis(10000));
}

TEST_F(StoreTest, ARenewalNotAppliedKeepsTheOldDeadlineAndReportsTheError) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  clock_.advance(Millis(2000));
  api_.inject({"bulk", false, make_error(ErrorCode::kTimeout, "no answer")});
  GrantRenewal r = renew_grant(*store_, g, Millis(0));
  ASSERT_EQ(r.result, RenewalResult::kFailed);
  EXPECT_EQ(r.error->code, ErrorCode::kTimeout);
  EXPECT_EQ(r.grant->valid_until, g.valid_until);
  // The next renewal from the same grant still works.
  EXPECT_EQ(renew_grant(*store_, g, Millis(0)).result, RenewalResult::kRenewed);
}

TEST_F(StoreTest, AReleaseAppliedButWhoseAnswerWasLostIsReleased) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  api_.inject({"delete", true, make_error(ErrorCode::kUnavailable, "reset after send")});
  auto r = store_->release(g, ReleaseScope::kGrant);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(*r, ReleaseOutcome::kReleased);
}

TEST_F(StoreTest, AReleaseFollowsOurOwnUnseenRenewal) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "lost")});
  ASSERT_EQ(renew_grant(*store_, g, Millis(0)).result,
            RenewalResult::kFailed);  // we keep the old version
  auto r = store_->release(g, ReleaseScope::kGrant);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(*r, ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

// A grant handed over because it expired is released only at the version judged expired:
// a later renewal by another process wrote a later expiresAt, which the holder may have seen.
TEST_F(StoreTest, AReleaseOfThisVersionLeavesAnotherProcessesRenewal) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  StoreOptions options;
  options.writer = "another-replica";
  auto other = make_es_lock_store(api_, clock_, options);
  ASSERT_TRUE(other.ok());
  clock_.advance(Millis(1000));
  ASSERT_EQ(renew_grant(**other, g, Millis(0)).result, RenewalResult::kRenewed);

  auto exact = store_->release(g, ReleaseScope::kThisVersion);
  ASSERT_TRUE(exact.ok()) << exact.error().describe();
  EXPECT_EQ(*exact, ReleaseOutcome::kNotHeld);
  ASSERT_TRUE(api_.peek("batch/nightly"));
  EXPECT_EQ(api_.peek("batch/nightly")->source["writer"], "another-replica");

  // The holder itself letting go releases the grant at whatever version it is.
  auto whole = store_->release(g, ReleaseScope::kGrant);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

TEST_F(StoreTest, BatchRenewalUsesChunkedBulkAndReportsStolenLocks) {
  constexpr int kLocks = 2500;
  std::vector<Renewal> held;
  for (int i = 0; i < kLocks; ++i)
    held.push_back(
        renewal(acquire(key("lock-" + std::to_string(i)), grantee("pod-a", "uid-" + std::to_string(i)))));
  for (int stolen : {7, 1500, 2499}) {
    auto taken =
        grant_one(*store_, one_lock(held[stolen].held.key, grantee("thief", "t"), held[stolen].held.state));
    ASSERT_TRUE(taken.ok() && taken->grant);
  }
  const int bulks_before = api_.calls("bulk");
  auto results = store_->renew_all(held);
  EXPECT_EQ(api_.calls("bulk") - bulks_before, 3);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kLocks));
  int renewed = 0;
  for (int i = 0; i < kLocks; ++i) {
    if (i == 7 || i == 1500 || i == 2499) {
      EXPECT_EQ(results[i].result, RenewalResult::kLost) << i;
    } else {
      ASSERT_EQ(results[i].result, RenewalResult::kRenewed) << i;
      EXPECT_EQ(results[i].held->key, held[i].held.key);
      EXPECT_EQ(results[i].held->state.version, api_.peek(held[i].held.key.id())->version);
      EXPECT_EQ(results[i].held->state.token, held[i].held.state.token);
      ++renewed;
    }
  }
  EXPECT_EQ(renewed, kLocks - 3);
}

// The expiresAt a holder is shown must never be later than the deadline the store reports
// (the controller hands a revoked lock over at that deadline): a batch of writes inside one
// millisecond must not stamp its documents ahead of the clock.
TEST_F(StoreTest, ShownExpiryIsNeverLaterThanTheDeadlineInABatch) {
  constexpr int kLocks = 20;
  const auto shown_after_deadline = [&](const HeldDocument& d) {
    const auto shown_in = d.state.doc.expires_at - clock_.now();
    const auto deadline_in = d.valid_until - clock_.monotonic();
    return shown_in > deadline_in;
  };
  std::vector<GrantRequest> requests;
  for (int i = 0; i < kLocks; ++i)
    requests.push_back(
        one_lock(key("lock-" + std::to_string(i)), grantee("pod", "uid-" + std::to_string(i))));
  std::vector<Renewal> held;
  for (const auto& outcome : store_->grant(requests)) {
    ASSERT_TRUE(outcome.ok() && outcome->grant);
    EXPECT_FALSE(shown_after_deadline(outcome->grant->docs[0]));
    held.push_back(renewal(*outcome->grant));
  }
  clock_.advance(Millis(3000));
  for (const BatchRenewal& renewal : store_->renew_all(held)) {
    ASSERT_EQ(renewal.result, RenewalResult::kRenewed);
    EXPECT_FALSE(shown_after_deadline(*renewal.held)) << renewal.held->key.id();
  }
}

// A takeover written in the same millisecond as the grant it replaces still gets its own
// acquiredAt, so the new grant is never mistaken for the old one.
TEST_F(StoreTest, ATakeoverInTheSameMillisecondIsADifferentGrant) {
  HeldGrant first = acquire(key(), grantee("pod-a", "uid-a"));
  auto second = take_over(only_document(first), grantee("pod-a", "uid-a"));
  ASSERT_TRUE(second.ok() && second->grant);
  EXPECT_FALSE(same_grant(only_document(*second->grant).doc, only_document(first).doc));
  EXPECT_GT(only_document(*second->grant).doc.acquired_at, only_document(first).doc.acquired_at);
}

TEST_F(StoreTest, ABatchRenewalFailureKeepsOldGrantsUnconfirmed) {
  HeldGrant g = acquire(key(), grantee("pod-a", "uid-a"));
  api_.inject({"bulk", false, make_error(ErrorCode::kUnavailable, "down")});
  auto results = store_->renew_all({renewal(g)});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].result, RenewalResult::kFailed);
  ASSERT_TRUE(results[0].error);
  EXPECT_EQ(results[0].held->valid_until, g.valid_until);
}

TEST_F(StoreTest, ListReturnsEveryLock) {
  acquire(key("a"), grantee("pod-a", "uid-a"));
  acquire(key("b"), grantee("pod-b", "uid-b"));
  api_.put_raw("batch/broken", nlohmann::json{{"lock", 1}});
  auto all = store_->list();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].doc.lock, "batch/a");
}

TEST_F(StoreTest, AMalformedDocumentIsAProtocolErrorNotAGrant) {
  api_.put_raw("batch/nightly", nlohmann::json{{"garbage", true}});
  auto r = grant_one(*store_, one_lock(key(), grantee("pod-a", "uid-a")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kProtocol);
  auto read = read_lock(*store_, key());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::kProtocol);
}

TEST_F(StoreTest, InvalidGranteesAreRefusedBeforeAnyRequest) {
  const int before = api_.total_calls();
  EXPECT_FALSE(grant_one(*store_, one_lock(key(), grantee("", "uid"))).ok());
  EXPECT_FALSE(grant_one(*store_, one_lock(key(), grantee("pod", ""))).ok());
  Grantee bad = grantee("pod", "uid");
  bad.ttl = Millis(0);
  EXPECT_FALSE(grant_one(*store_, one_lock(key(), bad)).ok());
  EXPECT_EQ(api_.total_calls(), before);
}

TEST(StoreOptionsTest, BadIndexNameIsRefused) {
  FakeDocumentApi api;
  FakeClock clock;
  StoreOptions options;
  options.index = "../_cluster";
  EXPECT_FALSE(make_es_lock_store(api, clock, options).ok());
}

}  // namespace
}  // namespace eslease::lock
