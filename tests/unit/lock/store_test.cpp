#include <gtest/gtest.h>

#include "lock/lock_store.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;

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
  Grant acquire(const LockKey& k, const Grantee& c) {
    auto r = store_->acquire(k, c);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->grant.has_value());
    return *r->grant;
  }

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

TEST_F(StoreTest, AcquireIsOneCreateAndTokenIsTheVersions) {
  const int before = api_.total_calls();
  const MonoTime sent = clock_.monotonic();
  auto r = store_->acquire(key(), grantee("pod-a", "uid-a"));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->grant);
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(api_.calls("create"), 1);
  const auto stored = api_.peek("batch/nightly");
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->source["fencingToken"], 0) << "the granting write cannot know its own version";
  EXPECT_EQ(r->grant->state.token, *fencing_token_of(stored->version));
  EXPECT_EQ(r->grant->valid_until, sent + Millis(10000));
  EXPECT_EQ(stored->source["transitions"], 1);
  EXPECT_EQ(stored->source["holder"], "pod-a");
}

TEST_F(StoreTest, HeldLockIsReportedWithItsHolder) {
  acquire(key(), grantee("pod-a", "uid-a"));
  auto r = store_->acquire(key(), grantee("pod-b", "uid-b"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
  ASSERT_TRUE(r->current);
  EXPECT_EQ(r->current->doc.holder, "pod-a");
}

TEST_F(StoreTest, RenewWritesTheRealTokenAndKeepsIt) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  const std::int64_t token = g.state.token;
  clock_.advance(Millis(3000));
  const MonoTime sent = clock_.monotonic();
  auto r = store_->renew(key(), g, Millis(0));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->grant);
  EXPECT_TRUE(r->renewed);
  EXPECT_EQ(r->grant->state.token, token);
  EXPECT_EQ(r->grant->valid_until, sent + Millis(10000));
  EXPECT_EQ(api_.peek("batch/nightly")->source["fencingToken"], token);
  auto again = store_->renew(key(), *r->grant, Millis(0));
  ASSERT_TRUE(again.ok() && again->grant);
  EXPECT_EQ(again->grant->state.token, token);
}

TEST_F(StoreTest, StaleRenewIsLostAndNamesTheNewHolder) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  auto taken = store_->take_over(key(), g.state, grantee("pod-b", "uid-b"));
  ASSERT_TRUE(taken.ok() && taken->grant);
  auto r = store_->renew(key(), g, Millis(0));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
  ASSERT_TRUE(r->current);
  EXPECT_EQ(r->current->doc.holder, "pod-b");
}

TEST_F(StoreTest, TokensGrowThroughReleaseReacquireTakeoverAndTermBump) {
  std::vector<std::int64_t> tokens;
  Grant a = acquire(key(), grantee("pod-a", "uid-a"));
  tokens.push_back(a.state.token);
  ASSERT_EQ(*store_->release(key(), a, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/nightly"));
  Grant b = acquire(key(), grantee("pod-b", "uid-b"));
  tokens.push_back(b.state.token);
  auto renewed = store_->renew(key(), b, Millis(0));
  ASSERT_TRUE(renewed.ok() && renewed->grant);
  auto c = store_->take_over(key(), renewed->grant->state, grantee("pod-c", "uid-c"));
  ASSERT_TRUE(c.ok() && c->grant);
  tokens.push_back(c->grant->state.token);
  EXPECT_EQ(c->grant->state.doc.transitions, 2);
  api_.bump_primary_term();
  auto d = store_->take_over(key(), c->grant->state, grantee("pod-d", "uid-d"));
  ASSERT_TRUE(d.ok() && d->grant);
  tokens.push_back(d->grant->state.token);
  EXPECT_EQ(d->grant->state.doc.transitions, 3);
  for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_GT(tokens[i], tokens[i - 1]) << i;
  EXPECT_GE(tokens.back(), 2LL << 32);
}

TEST_F(StoreTest, TakeoverOfAVersionThatMovedIsRefused) {
  Grant a = acquire(key(), grantee("pod-a", "uid-a"));
  const LockState seen = a.state;
  ASSERT_TRUE(store_->renew(key(), a, Millis(0))->grant);  // the holder is alive after all
  auto r = store_->take_over(key(), seen, grantee("pod-b", "uid-b"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
  EXPECT_EQ(r->current->doc.holder, "pod-a");
}

TEST_F(StoreTest, ReleaseOnlyDeletesOurOwnVersion) {
  Grant a = acquire(key(), grantee("pod-a", "uid-a"));
  auto b = store_->take_over(key(), a.state, grantee("pod-b", "uid-b"));
  ASSERT_TRUE(b.ok() && b->grant);
  auto r = store_->release(key(), a, ReleaseScope::kGrant);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, ReleaseOutcome::kNotHeld);
  ASSERT_TRUE(api_.peek("batch/nightly"));
  EXPECT_EQ(api_.peek("batch/nightly")->source["holder"], "pod-b");
  EXPECT_EQ(api_.calls("delete"), 1);
}

TEST_F(StoreTest, CreateAppliedButAnswerLostIsOurGrant) {
  api_.inject({"create", true, make_error(ErrorCode::kTimeout, "no answer")});
  auto r = store_->acquire(key(), grantee("pod-a", "uid-a"));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_TRUE(r->grant);
  EXPECT_EQ(r->grant->state.doc.holder, "pod-a");
  EXPECT_EQ(api_.calls("get"), 1);
}

TEST_F(StoreTest, CreateNotAppliedWithUnknownOutcomeIsAnErrorNotAGrant) {
  api_.inject({"create", false, make_error(ErrorCode::kTimeout, "no answer")});
  auto r = store_->acquire(key(), grantee("pod-a", "uid-a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

TEST_F(StoreTest, ConflictWithAnotherGranteesDocumentIsNotOurs) {
  acquire(key(), grantee("pod-a", "uid-a"));
  // Same holder name, different grantee: a name is not an identity.
  auto r = store_->acquire(key(), grantee("pod-a", "uid-other"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->grant);
}

TEST_F(StoreTest, UnknownOutcomeWithUnreadableDocumentIsAnError) {
  api_.inject({"create", true, make_error(ErrorCode::kUnavailable, "reset")});
  api_.inject({"get", false, make_error(ErrorCode::kUnavailable, "down")});
  auto r = store_->acquire(key(), grantee("pod-a", "uid-a"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("outcome unknown"), std::string::npos);
}

TEST_F(StoreTest, RenewAppliedButAnswerLostIsRenewed) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  clock_.advance(Millis(2000));
  const MonoTime sent = clock_.monotonic();
  api_.inject({"index", true, make_error(ErrorCode::kTimeout, "no answer")});
  auto r = store_->renew(key(), g, Millis(0));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_TRUE(r->grant);
  EXPECT_TRUE(r->renewed);
  EXPECT_EQ(r->grant->valid_until, sent + Millis(10000));
  EXPECT_EQ(r->grant->state.version, api_.peek("batch/nightly")->version);
}

TEST_F(StoreTest, RenewNotAppliedKeepsTheOldDeadlineAndReportsTheError) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  clock_.advance(Millis(2000));
  api_.inject({"index", false, make_error(ErrorCode::kTimeout, "no answer")});
  auto r = store_->renew(key(), g, Millis(0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kTimeout);
  // The next renewal from the same grant still works.
  auto again = store_->renew(key(), g, Millis(0));
  ASSERT_TRUE(again.ok() && again->renewed);
}

TEST_F(StoreTest, ReleaseAppliedButAnswerLostIsReleased) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  api_.inject({"delete", true, make_error(ErrorCode::kUnavailable, "reset after send")});
  auto r = store_->release(key(), g, ReleaseScope::kGrant);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(*r, ReleaseOutcome::kReleased);
}

TEST_F(StoreTest, ReleaseFollowsOurOwnUnseenRenewal) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  api_.inject({"index", true, make_error(ErrorCode::kTimeout, "lost")});
  api_.inject({"get", false, make_error(ErrorCode::kTimeout, "lost too")});
  ASSERT_FALSE(store_->renew(key(), g, Millis(0)).ok());  // outcome unknown: we keep the old version
  auto r = store_->release(key(), g, ReleaseScope::kGrant);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(*r, ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

// A grant handed over because it expired is released only at the version judged expired:
// a later renewal by another process wrote a later expiresAt, which the holder may have seen.
TEST_F(StoreTest, ReleaseOfThisVersionLeavesAnotherProcessesRenewal) {
  Grant g = acquire(key(), grantee("pod-a", "uid-a"));
  StoreOptions options;
  options.writer = "another-replica";
  auto other = make_es_lock_store(api_, clock_, options);
  ASSERT_TRUE(other.ok());
  clock_.advance(Millis(1000));
  auto renewed = (*other)->renew(key(), g, Millis(0));
  ASSERT_TRUE(renewed.ok() && renewed->renewed);

  auto exact = store_->release(key(), g, ReleaseScope::kThisVersion);
  ASSERT_TRUE(exact.ok()) << exact.error().describe();
  EXPECT_EQ(*exact, ReleaseOutcome::kNotHeld);
  ASSERT_TRUE(api_.peek("batch/nightly"));
  EXPECT_EQ(api_.peek("batch/nightly")->source["writer"], "another-replica");

  // The holder itself letting go releases the grant at whatever version it is.
  auto whole = store_->release(key(), g, ReleaseScope::kGrant);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(*whole, ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/nightly"));
}

TEST_F(StoreTest, BatchRenewalUsesChunkedBulkAndReportsStolenLocks) {
  constexpr int kLocks = 2500;
  std::vector<HeldLock> held;
  for (int i = 0; i < kLocks; ++i) {
    LockKey k = key("lock-" + std::to_string(i));
    held.push_back(
        HeldLock{k, acquire(k, grantee("pod-a", "uid-" + std::to_string(i))), Millis(0), std::nullopt});
  }
  for (int stolen : {7, 1500, 2499}) {
    ASSERT_TRUE(store_->take_over(held[stolen].key, held[stolen].grant.state, grantee("thief", "t"))->grant);
  }
  const int bulks_before = api_.calls("bulk");
  auto results = store_->renew_all(held);
  EXPECT_EQ(api_.calls("bulk") - bulks_before, 3);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kLocks));
  int renewed = 0;
  for (int i = 0; i < kLocks; ++i) {
    EXPECT_EQ(results[i].key, held[i].key);
    if (i == 7 || i == 1500 || i == 2499) {
      EXPECT_EQ(results[i].result, BatchRenewal::Result::kLost) << i;
    } else {
      ASSERT_EQ(results[i].result, BatchRenewal::Result::kRenewed) << i;
      EXPECT_EQ(results[i].grant->state.version, api_.peek(held[i].key.id())->version);
      EXPECT_EQ(results[i].grant->state.token, held[i].grant.state.token);
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
  const auto shown_after_deadline = [&](const Grant& g) {
    const auto shown_in = g.state.doc.expires_at - clock_.now();
    const auto deadline_in = g.valid_until - clock_.monotonic();
    return shown_in > deadline_in;
  };
  std::vector<std::pair<LockKey, Grantee>> grantees;
  for (int i = 0; i < kLocks; ++i)
    grantees.emplace_back(key("lock-" + std::to_string(i)), grantee("pod", "uid-" + std::to_string(i)));
  std::vector<HeldLock> held;
  for (const auto& granted : store_->acquire_many(grantees)) {
    ASSERT_TRUE(granted.ok() && granted->grant);
    EXPECT_FALSE(shown_after_deadline(*granted->grant));
    held.push_back(HeldLock{grantees[held.size()].first, *granted->grant, Millis(0), std::nullopt});
  }
  clock_.advance(Millis(3000));
  for (const BatchRenewal& renewal : store_->renew_all(held)) {
    ASSERT_EQ(renewal.result, BatchRenewal::Result::kRenewed);
    EXPECT_FALSE(shown_after_deadline(*renewal.grant)) << renewal.key.id();
  }
}

// A takeover written in the same millisecond as the grant it replaces still gets its own
// acquiredAt, so the new grant is never mistaken for the old one.
TEST_F(StoreTest, TakeoverInTheSameMillisecondIsADifferentGrant) {
  Grant first = acquire(key(), grantee("pod-a", "uid-a"));
  auto second = store_->take_over(key(), first.state, grantee("pod-a", "uid-a"));
  ASSERT_TRUE(second.ok() && second->grant);
  EXPECT_FALSE(same_grant(second->grant->state.doc, first.state.doc));
  EXPECT_GT(second->grant->state.doc.acquired_at, first.state.doc.acquired_at);
}

TEST_F(StoreTest, BatchRenewalFailureKeepsOldGrantsUnconfirmed) {
  LockKey k = key();
  Grant g = acquire(k, grantee("pod-a", "uid-a"));
  api_.inject({"bulk", false, make_error(ErrorCode::kUnavailable, "down")});
  auto results = store_->renew_all({HeldLock{k, g, Millis(0), std::nullopt}});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].result, BatchRenewal::Result::kFailed);
  ASSERT_TRUE(results[0].error);
  EXPECT_EQ(results[0].grant->valid_until, g.valid_until);
}

TEST_F(StoreTest, BatchRenewalAppliedButAnswerLostIsResolvedOnTheNextTick) {
  LockKey k = key();
  Grant g = acquire(k, grantee("pod-a", "uid-a"));
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "lost")});
  auto first = store_->renew_all({HeldLock{k, g, Millis(0), std::nullopt}});
  EXPECT_EQ(first[0].result, BatchRenewal::Result::kFailed);
  // The next tick conflicts with our own write, reads it back and is still ours.
  auto second = store_->renew_all({HeldLock{k, *first[0].grant, Millis(0), std::nullopt}});
  EXPECT_NE(second[0].result, BatchRenewal::Result::kLost);
  ASSERT_TRUE(second[0].grant);
  EXPECT_EQ(second[0].grant->state.version, api_.peek(k.id())->version);
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

TEST_F(StoreTest, MalformedDocumentIsAProtocolErrorNotAGrant) {
  api_.put_raw("batch/nightly", nlohmann::json{{"garbage", true}});
  auto r = store_->acquire(key(), grantee("pod-a", "uid-a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kProtocol);
}

TEST_F(StoreTest, InvalidGranteesAreRefusedBeforeAnyRequest) {
  const int before = api_.total_calls();
  EXPECT_FALSE(store_->acquire(key(), grantee("", "uid")).ok());
  EXPECT_FALSE(store_->acquire(key(), grantee("pod", "")).ok());
  Grantee bad = grantee("pod", "uid");
  bad.ttl = Millis(0);
  EXPECT_FALSE(store_->acquire(key(), bad).ok());
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
