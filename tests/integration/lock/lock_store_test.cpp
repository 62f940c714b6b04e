#include <gtest/gtest.h>

#include <set>

#include "integration/lock/lock_fixture.h"
#include "support/wait.h"

namespace eslease::lock {
namespace {

using testing::EsTestServer;
using testing::StoreOnServer;

class LockIntegration : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store().prepare().ok()); }
  LockStore& store() { return *backend_.store; }
  Grant acquire(const LockKey& key, const Grantee& grantee) {
    auto r = store().acquire(key, grantee);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r.ok() && r->grant.has_value());
    return *r->grant;
  }

  EsTestServer server_;
  std::string index_ = EsTestServer::unique_index("eslease-locks-it");
  StoreOnServer backend_{server_.url(), index_};
  LockKey key_ = *make_lock_key("batch", "nightly-report");
};

TEST_F(LockIntegration, PrepareAcceptsAnExistingIndex) {
  EXPECT_TRUE(store().prepare().ok());
  auto described = backend_.api->describe_index(index_);
  ASSERT_TRUE(described.ok()) << described.error().describe();
  ASSERT_TRUE(described->has_value());
  EXPECT_EQ(check_mapping((*described)->mappings).fit, MappingFit::kFits);
  EXPECT_FALSE((*described)->uuid.empty());
}

TEST_F(LockIntegration, AcquireRenewReleaseRoundTrip) {
  Grant g = acquire(key_, direct_grantee("pod-a"));
  auto read = store().get(key_);
  ASSERT_TRUE(read.ok() && *read);
  EXPECT_EQ((*read)->doc.holder, "pod-a");
  EXPECT_EQ((*read)->token, g.state.token);
  EXPECT_EQ((*read)->doc.fencing_token, 0);

  auto renewed = store().renew(key_, g, Millis(0));
  ASSERT_TRUE(renewed.ok() && renewed->renewed);
  read = store().get(key_);
  EXPECT_EQ((*read)->doc.fencing_token, g.state.token);

  auto other = store().acquire(key_, direct_grantee("pod-b"));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->grant);
  EXPECT_EQ(other->current->doc.holder, "pod-a");

  ASSERT_EQ(*store().release(key_, renewed->grant.value(), ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  read = store().get(key_);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(*read);
}

TEST_F(LockIntegration, TokensGrowThroughReleaseReacquireAndTakeover) {
  std::vector<std::int64_t> tokens;
  for (int round = 0; round < 3; ++round) {
    Grant g = acquire(key_, direct_grantee("pod-" + std::to_string(round)));
    tokens.push_back(g.state.token);
    ASSERT_EQ(*store().release(key_, g, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  }
  Grant a = acquire(key_, direct_grantee("pod-a"));
  tokens.push_back(a.state.token);
  auto b = store().take_over(key_, a.state, direct_grantee("pod-b"));
  ASSERT_TRUE(b.ok() && b->grant);
  tokens.push_back(b->grant->state.token);
  EXPECT_EQ(b->grant->state.doc.transitions, 2);
  auto stale = store().renew(key_, a, Millis(0));
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->grant) << "the old holder's renewal must fail after a takeover";
  for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_GT(tokens[i], tokens[i - 1]);
}

TEST_F(LockIntegration, TokensKeepGrowingAfterPrimaryTermBump) {
  ESLEASE_REQUIRE_EMULATOR(server_);
  Grant a = acquire(key_, direct_grantee("pod-a"));
  server_.bump_primary_term(index_);
  auto renewed = store().renew(key_, a, Millis(0));
  ASSERT_TRUE(renewed.ok() && renewed->grant) << (renewed.ok() ? "" : renewed.error().describe());
  EXPECT_EQ(renewed->grant->state.token, a.state.token) << "a renewal keeps the grant's token";
  EXPECT_GT(renewed->grant->state.version.primary_term, a.state.version.primary_term);
  ASSERT_EQ(*store().release(key_, *renewed->grant, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  Grant b = acquire(key_, direct_grantee("pod-b"));
  EXPECT_GT(b.state.token, a.state.token);
  EXPECT_GE(b.state.token, 2LL << 32);
}

TEST_F(LockIntegration, ColdStartReadsAndGrantsTwoThousandLocksInFourRequests) {
  constexpr int kLocks = 2000;
  std::vector<LockKey> keys;
  for (int i = 0; i < kLocks; ++i) keys.push_back(*make_lock_key("batch", "cold-" + std::to_string(i)));
  // Some locks are held already.
  const std::set<int> taken{0, 1001, 1999};
  for (int i : taken) acquire(keys[i], direct_grantee("earlier"));
  server_.reset_stats();

  auto read = store().get_many(keys);
  ASSERT_TRUE(read.ok()) << read.error().describe();
  ASSERT_EQ(read->size(), keys.size());
  std::vector<std::pair<LockKey, Grantee>> free;
  for (int i = 0; i < kLocks; ++i) {
    ASSERT_TRUE((*read)[i].ok()) << i;
    EXPECT_EQ((*read)[i]->has_value(), taken.count(i) > 0) << i;
    if (!(*read)[i]->has_value()) free.emplace_back(keys[i], direct_grantee("pod-" + std::to_string(i)));
  }
  // One lock is taken between the read and the grant: it comes back as not granted.
  acquire(free[10].first, direct_grantee("racer"));
  auto granted = store().acquire_many(free);
  ASSERT_EQ(granted.size(), free.size());
  for (std::size_t i = 0; i < free.size(); ++i) {
    ASSERT_TRUE(granted[i].ok()) << i;
    EXPECT_EQ(granted[i]->grant.has_value(), i != 10) << i;
  }
  ASSERT_TRUE(granted[10]->current);
  EXPECT_EQ(granted[10]->current->doc.holder, "racer");
  EXPECT_EQ(server_.count("mget"), 3);  // 2 reads + 1 read of the conflicted item
  EXPECT_EQ(server_.count("bulk"), 2);
}

TEST_F(LockIntegration, BatchRenewalOfManyLocksReportsStolenOnes) {
  constexpr int kLocks = 2500;
  std::vector<HeldLock> held;
  for (int i = 0; i < kLocks; ++i) {
    LockKey key = *make_lock_key("batch", "lock-" + std::to_string(i));
    held.push_back(HeldLock{key, acquire(key, direct_grantee("pod-a")), Millis(0), std::nullopt});
  }
  const std::set<int> stolen{3, 999, 1000, 2498};
  for (int i : stolen)
    ASSERT_TRUE(store().take_over(held[i].key, held[i].grant.state, direct_grantee("thief"))->grant);
  server_.reset_stats();
  auto results = store().renew_all(held);
  EXPECT_EQ(server_.count("bulk"), 3);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kLocks));
  for (int i = 0; i < kLocks; ++i) {
    if (stolen.count(i)) {
      EXPECT_EQ(results[i].result, BatchRenewal::Result::kLost) << i;
    } else {
      EXPECT_EQ(results[i].result, BatchRenewal::Result::kRenewed) << i;
    }
  }
  auto thief = store().get(held[999].key);
  EXPECT_EQ((*thief)->doc.holder, "thief");
}

TEST_F(LockIntegration, TransientBackendFaultsAreRetried) {
  server_.fault({{"op", "create"}, {"status", 503}, {"count", 2}});
  Grant g = acquire(key_, direct_grantee("pod-a"));
  server_.fault({{"op", "index"}, {"status", 429}, {"count", 1}});
  auto renewed = store().renew(key_, g, Millis(0));
  ASSERT_TRUE(renewed.ok() && renewed->renewed);
}

TEST_F(LockIntegration, PersistentOutageIsAClearErrorAndNoGrant) {
  server_.fault({{"op", "*"}, {"status", 503}, {"count", -1}});
  auto r = store().acquire(key_, direct_grantee("pod-a"));
  server_.clear_faults();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  auto read = store().get(key_);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(*read);
}

TEST_F(LockIntegration, DelayedCreateNeverGivesTwoHolders) {
  es::ClientOptions fast;
  fast.request_timeout = Millis(200);
  StoreOnServer impatient(server_.url(), index_, fast);
  server_.fault({{"op", "create"}, {"latency_ms", 800}, {"count", 1}});
  auto first = impatient.store->acquire(key_, direct_grantee("pod-a"));
  // The create lands later: wait for it, then a contender must not get the lock.
  ASSERT_TRUE(testing::wait_until([&] {
    auto read = store().get(key_);
    return read.ok() && read->has_value();
  }));
  auto second = store().acquire(key_, direct_grantee("pod-b"));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->grant);
  EXPECT_EQ(second->current->doc.holder, "pod-a");
  if (first.ok()) {
    EXPECT_TRUE(first->grant.has_value()) << "a resolved outcome must be ours";
  } else {
    EXPECT_EQ(first.error().code, ErrorCode::kTimeout);
  }
}

TEST_F(LockIntegration, SlowRenewalIsResolvedByReadingBack) {
  es::ClientOptions fast;
  fast.request_timeout = Millis(300);
  StoreOnServer impatient(server_.url(), index_, fast);
  Grant g = acquire(key_, direct_grantee("pod-a"));
  server_.fault({{"op", "index"}, {"latency_ms", 1000}, {"count", 1}});
  auto renewed = impatient.store->renew(key_, g, Millis(0));
  // Whatever the answer, the lock is never reported lost and never renewed without proof.
  if (renewed.ok()) {
    ASSERT_TRUE(renewed->grant);
  } else {
    EXPECT_EQ(renewed.error().code, ErrorCode::kTimeout);
  }
  // Once the delayed write landed, the holder still owns its grant and can release it.
  ASSERT_TRUE(testing::wait_until([&] {
    auto read = store().get(key_);
    return read.ok() && *read && !((*read)->version == g.state.version);
  }));
  auto released = store().release(key_, g, ReleaseScope::kGrant);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
}

TEST_F(LockIntegration, DroppedConnectionsAreRetriedAndResolved) {
  server_.fault({{"op", "create"}, {"drop", true}, {"count", 1}});
  Grant g = acquire(key_, direct_grantee("pod-a"));
  server_.fault({{"op", "delete"}, {"drop", true}, {"count", 1}});
  auto released = store().release(key_, g, ReleaseScope::kGrant);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
}

TEST(LockIntegrationAuth, WrongCredentialsAreAClearError) {
  esemu::EsEmulatorOptions options;
  options.basic_auth = std::make_pair(std::string("elastic"), std::string("secret"));
  EsTestServer server(options);
  ESLEASE_REQUIRE_EMULATOR(server);
  StoreOnServer backend(server.url(), EsTestServer::unique_index());
  auto s = backend.store->prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kUnauthorized);
  EXPECT_NE(s.error().message.find("rejected the credentials"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace eslease::lock
