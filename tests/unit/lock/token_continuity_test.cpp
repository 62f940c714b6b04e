// Fencing tokens never go backwards through the lock store, when its index is deleted and
// re-created or restored from an older snapshot, and nothing is granted while that cannot
// be proven.
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

constexpr Millis kTtl{10000};

class TokenContinuityTest : public ::testing::Test {
 protected:
  void SetUp() override { store_ = make_store(); }

  std::unique_ptr<LockStore> make_store(StoreOptions options = {}) {
    options.on_fencing = [this](const FencingReport& report) {
      epoch_reported_ = report.epoch;
      if (report.refused) ++refusals_;
    };
    auto made = make_es_lock_store(api_, clock_, options);
    EXPECT_TRUE(made.ok());
    auto store = std::move(*made);
    EXPECT_TRUE(store->prepare().ok());
    return store;
  }
  static LockKey key(const std::string& name) { return *make_lock_key("batch", name); }
  static Grantee claim(const std::string& holder) {
    Grantee c;
    c.holder = holder;
    c.lease_uid = "uid-" + holder;
    c.ttl = kTtl;
    return c;
  }
  HeldGrant acquire(LockStore& store, const std::string& lock, const std::string& holder) {
    return testing::granted(store, one_lock(key(lock), claim(holder)));
  }
  static Result<GrantOutcome> try_acquire(LockStore& store, const std::string& lock,
                                          const std::string& holder) {
    return grant_one(store, one_lock(key(lock), claim(holder)));
  }
  // Grants and renews a few locks, moving the index's sequence numbers on.
  std::int64_t issue_tokens(int locks, const std::string& prefix = "lock-") {
    std::int64_t largest = 0;
    for (int i = 0; i < locks; ++i) {
      const std::string name = prefix + std::to_string(i);
      HeldGrant g = acquire(*store_, name, "pod-" + name);
      EXPECT_EQ(renew_grant(*store_, g, kTtl).result, RenewalResult::kRenewed);
      largest = std::max(largest, g.token);
    }
    return largest;
  }
  std::int64_t recorded_epoch() const {
    return api_.mappings()["_meta"]["eslease"]["tokenEpoch"].get<std::int64_t>();
  }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
  std::int64_t epoch_reported_ = -1;
  int refusals_ = 0;
};

TEST_F(TokenContinuityTest, AFreshIndexRecordsEpochZeroAndItsUuid) {
  EXPECT_EQ(recorded_epoch(), 0);
  EXPECT_EQ(api_.mappings()["_meta"]["eslease"]["indexUUID"], api_.uuid());
  HeldGrant g = acquire(*store_, "a", "pod-a");
  EXPECT_EQ(epoch_of(g.token), 0);
  EXPECT_EQ(epoch_reported_, 0);
}

TEST_F(TokenContinuityTest, SteadyStateGrantsCostOneRequestEach) {
  acquire(*store_, "warm", "pod-w");
  const int before = api_.total_calls();
  for (int i = 0; i < 5; ++i) acquire(*store_, "lock-" + std::to_string(i), "pod");
  EXPECT_EQ(api_.total_calls() - before, 5);
  EXPECT_EQ(api_.calls("create"), 6);
}

TEST_F(TokenContinuityTest, AReCreatedIndexIsRefusedUntilEarlierGrantsExpireThenIssuesLargerTokens) {
  const std::int64_t largest = issue_tokens(3);
  api_.drop_index();  // an operator deletes the index; its documents and sequence numbers are gone

  // The next grant's token would come out low: it is undone, and refused.
  auto low = try_acquire(*store_, "fresh", "pod-x");
  ASSERT_FALSE(low.ok());
  EXPECT_EQ(low.error().code, ErrorCode::kGrantsPaused);
  EXPECT_NE(low.error().message.find("not larger than token " + std::to_string(largest)), std::string::npos)
      << low.error().message;
  EXPECT_FALSE(api_.peek("batch/fresh")) << "the refused grant was deleted again";

  // Refused until the grants made on the old index (10 s TTL) have expired.
  ASSERT_TRUE(store_->grants_refused());
  auto paused = try_acquire(*store_, "fresh", "pod-x");
  ASSERT_FALSE(paused.ok());
  EXPECT_NE(paused.error().message.find("grants wait"), std::string::npos) << paused.error().message;
  EXPECT_FALSE(api_.peek("batch/fresh"));

  clock_.advance(kTtl);
  HeldGrant g = acquire(*store_, "fresh", "pod-x");
  EXPECT_GT(g.token, largest);
  EXPECT_EQ(epoch_of(g.token), 1);
  EXPECT_EQ(recorded_epoch(), 1);
  EXPECT_EQ(api_.mappings()["dynamic"], "strict") << "the auto-created index got eslease's mapping";
  EXPECT_FALSE(store_->grants_refused());
  EXPECT_GE(refusals_, 2);
}

// The controller checks the tokens at the start of its leadership while the index may still
// be being prepared beside it (Elasticsearch was away at start): what prepare() read after
// that check must not stand in for the index at a later check.
TEST_F(TokenContinuityTest, AnIndexPreparedAfterTheCheckIsReadAfreshAtTheNextCheck) {
  FakeDocumentApi api;
  StoreOptions options;
  options.awaits_token_history = true;
  auto store = std::move(make_es_lock_store(api, clock_, options).value());
  ASSERT_TRUE(store->check_tokens([] { return IssuedBefore{}; }).ok());
  ASSERT_TRUE(store->prepare().ok());
  HeldGrant g = acquire(*store, "a", "pod-a");
  api.drop_index();  // an operator deletes the index

  auto low = try_acquire(*store, "fresh", "pod-x");
  ASSERT_FALSE(low.ok());
  // The check that follows reads the index as it is now (gone), and raises the epoch.
  auto paused = try_acquire(*store, "fresh", "pod-x");
  ASSERT_FALSE(paused.ok());
  EXPECT_NE(paused.error().message.find("grants wait"), std::string::npos) << paused.error().message;
  clock_.advance(kTtl);
  HeldGrant fresh = acquire(*store, "fresh", "pod-x");
  EXPECT_GT(fresh.token, g.token);
  EXPECT_EQ(epoch_of(fresh.token), 1);
}

TEST_F(TokenContinuityTest, ARestoredIndexNeverHandsOutATokenLowerThanOneIssuedAfterItsSnapshot) {
  issue_tokens(1);
  api_.take_snapshot();
  const std::int64_t largest = issue_tokens(4, "later-");  // tokens issued after the snapshot
  api_.restore_snapshot();                                 // older documents and sequence numbers, a new UUID

  // The first grant after the restore is refused (its token would be below `largest`) ...
  auto first = try_acquire(*store_, "after", "pod-y");
  ASSERT_FALSE(first.ok());
  EXPECT_FALSE(api_.peek("batch/after"));
  // ... and once the grants made since have expired, tokens are above every earlier one.
  clock_.advance(kTtl);
  HeldGrant g = acquire(*store_, "after", "pod-y");
  EXPECT_GT(g.token, largest);
  EXPECT_EQ(api_.mappings()["_meta"]["eslease"]["indexUUID"], api_.uuid());
}

TEST_F(TokenContinuityTest, ANewProcessOnARestoredIndexRaisesTheEpochBeforeItsFirstGrant) {
  issue_tokens(1);
  api_.take_snapshot();
  const std::int64_t largest = issue_tokens(4, "later-");
  api_.restore_snapshot();

  // A controller starting now learns the largest token from its Leases before any grant.
  StoreOptions options;
  options.awaits_token_history = true;
  auto restarted = make_store(options);
  const int creates = api_.calls("create");
  ASSERT_TRUE(restarted->check_tokens([largest] { return IssuedBefore{largest, Millis(30000)}; }).ok());
  EXPECT_EQ(recorded_epoch(), 1);
  EXPECT_FALSE(try_acquire(*restarted, "after", "pod-y").ok()) << "paused for the Leases' 30 s";
  EXPECT_EQ(api_.calls("create"), creates) << "nothing is written while grants wait";
  clock_.advance(Millis(30000));
  HeldGrant g = acquire(*restarted, "after", "pod-y");
  EXPECT_GT(g.token, largest);
}

TEST_F(TokenContinuityTest, ATakeoverMustExceedTheTokenOfTheGrantItReplaces) {
  HeldGrant first = acquire(*store_, "a", "pod-a");
  // Another process renewed the grant with a token far above the pairs this index reaches
  // now (it was issued on an index since lost); this store never read it.
  nlohmann::json source = api_.peek("batch/a")->source;
  source["fencingToken"] = first.token + 1000;
  api_.put_raw("batch/a", source);
  const auto raw = api_.peek("batch/a");
  auto dead = make_state(*parse_lock_document(raw->source), raw->version);
  ASSERT_TRUE(dead.ok());
  auto taken = grant_one(*store_, one_lock(key("a"), claim("pod-b"), *dead));
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find(std::to_string(dead->token)), std::string::npos)
      << taken.error().message;
  EXPECT_FALSE(api_.peek("batch/a")) << "the refused takeover was undone";
}

TEST_F(TokenContinuityTest, NoGrantWhenNoEpochIsLeft) {
  StoreOptions options;
  options.awaits_token_history = true;
  auto store = make_store(options);
  const std::int64_t huge = epoch_base(kMaxEpoch) | (std::int64_t{1} << 32);
  Status checked = store->check_tokens([huge] { return IssuedBefore{huge, Millis(0)}; });
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.error().code, ErrorCode::kTokensExhausted);
  auto refused = try_acquire(*store, "a", "pod-a");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(api_.calls("create"), 0);
  ASSERT_TRUE(store->grants_refused());
  EXPECT_NE(store->grants_refused()->find("fencing tokens are not proven"), std::string::npos);
}

TEST_F(TokenContinuityTest, AnUnreadableIndexRefusesTheGrantWithoutWriting) {
  StoreOptions options;
  options.awaits_token_history = true;
  auto store = make_store(options);
  api_.inject({"indices.get", false, make_error(ErrorCode::kUnavailable, "no route to host")});
  EXPECT_FALSE(store->check_tokens([] { return IssuedBefore{}; }).ok());
  api_.inject({"indices.get", false, make_error(ErrorCode::kUnavailable, "no route to host")});
  auto refused = try_acquire(*store, "a", "pod-a");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().unavailable());
  EXPECT_EQ(api_.calls("create"), 0);
  acquire(*store, "a", "pod-a");  // answers again: checked, then granted
}

TEST_F(TokenContinuityTest, AHeldLockWhoseDocumentVanishedPausesGrantsUntilItsValidityEnds) {
  HeldGrant held = acquire(*store_, "held", "pod-h");
  api_.drop_index();
  EXPECT_EQ(renew_grant(*store_, held, kTtl).result, RenewalResult::kLost);
  // Its holder may still run until its validity ends: no grant before that, on any lock.
  EXPECT_FALSE(try_acquire(*store_, "other", "pod-o").ok());
  clock_.advance(kTtl);
  HeldGrant g = acquire(*store_, "other", "pod-o");
  EXPECT_GT(g.token, held.token);
}

TEST_F(TokenContinuityTest, StartUpGrantsInBulkAreKeptOnlyAboveTheFloor) {
  const std::int64_t largest = issue_tokens(2);
  api_.drop_index();
  const std::vector<GrantRequest> claims = {one_lock(key("x"), claim("pod-x")),
                                            one_lock(key("y"), claim("pod-y"))};
  auto outcomes = store_->grant(claims);
  ASSERT_EQ(outcomes.size(), 2u);
  for (const auto& o : outcomes) EXPECT_FALSE(o.ok());
  EXPECT_FALSE(api_.peek("batch/x"));
  EXPECT_FALSE(api_.peek("batch/y"));
  clock_.advance(kTtl);
  outcomes = store_->grant(claims);
  for (const auto& o : outcomes) {
    ASSERT_TRUE(o.ok() && o->grant) << (o.ok() ? "no grant" : o.error().describe());
    EXPECT_GT(o->grant->token, largest);
  }
}

}  // namespace
}  // namespace eslease::lock
