#include <gtest/gtest.h>

#include <set>

#include "integration/lock/lock_fixture.h"
#include "support/lock_grants.h"
#include "support/wait.h"

namespace eslease::lock {
namespace {

using testing::EsTestServer;
using testing::one_lock;
using testing::only_document;
using testing::StoreOnServer;

class LockIntegration : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store().prepare().ok()); }
  LockStore& store() { return *backend_.store; }
  HeldGrant acquire(const LockKey& key, const Grantee& grantee,
                    std::optional<LockState> replaces = std::nullopt) {
    return testing::granted(store(), one_lock(key, grantee, std::move(replaces)));
  }
  DocumentRead read() { return read_lock(store(), key_); }

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
  HeldGrant g = acquire(key_, direct_grantee("pod-a"));
  auto current = read();
  ASSERT_TRUE(current.ok() && *current);
  EXPECT_EQ((*current)->doc.holder, "pod-a");
  EXPECT_EQ((*current)->token, g.token);
  EXPECT_EQ((*current)->doc.fencing_token, 0);

  GrantRenewal renewed = renew_grant(store(), g, Millis(0));
  ASSERT_EQ(renewed.result, RenewalResult::kRenewed);
  current = read();
  EXPECT_EQ((*current)->doc.fencing_token, g.token);

  auto other = grant_one(store(), one_lock(key_, direct_grantee("pod-b")));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->grant);
  EXPECT_EQ(other->current[0]->doc.holder, "pod-a");

  ASSERT_EQ(*store().release(*renewed.grant, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  current = read();
  ASSERT_TRUE(current.ok());
  EXPECT_FALSE(*current);
}

TEST_F(LockIntegration, TokensGrowThroughReleaseReacquireAndTakeover) {
  std::vector<std::int64_t> tokens;
  for (int round = 0; round < 3; ++round) {
    HeldGrant g = acquire(key_, direct_grantee("pod-" + std::to_string(round)));
    tokens.push_back(g.token);
    ASSERT_EQ(*store().release(g, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  }
  HeldGrant a = acquire(key_, direct_grantee("pod-a"));
  tokens.push_back(a.token);
  HeldGrant b = acquire(key_, direct_grantee("pod-b"), only_document(a));
  tokens.push_back(b.token);
  EXPECT_EQ(only_document(b).doc.transitions, 2);
  EXPECT_EQ(renew_grant(store(), a, Millis(0)).result, RenewalResult::kLost)
      << "the old holder's renewal must fail after a takeover";
  for (std::size_t i = 1; i < tokens.size(); ++i) EXPECT_GT(tokens[i], tokens[i - 1]);
}

TEST_F(LockIntegration, TokensKeepGrowingAfterPrimaryTermBump) {
  ESLEASE_REQUIRE_EMULATOR(server_);
  HeldGrant a = acquire(key_, direct_grantee("pod-a"));
  server_.bump_primary_term(index_);
  GrantRenewal renewed = renew_grant(store(), a, Millis(0));
  ASSERT_EQ(renewed.result, RenewalResult::kRenewed) << (renewed.error ? renewed.error->describe() : "");
  EXPECT_EQ(renewed.grant->token, a.token) << "a renewal keeps the grant's token";
  EXPECT_GT(only_document(*renewed.grant).version.primary_term, only_document(a).version.primary_term);
  ASSERT_EQ(*store().release(*renewed.grant, ReleaseScope::kGrant), ReleaseOutcome::kReleased);
  HeldGrant b = acquire(key_, direct_grantee("pod-b"));
  EXPECT_GT(b.token, a.token);
  EXPECT_GE(b.token, 2LL << 32);
}

TEST_F(LockIntegration, ColdStartReadsAndGrantsTwoThousandLocksInFourRequests) {
  constexpr int kLocks = 2000;
  std::vector<LockKey> keys;
  for (int i = 0; i < kLocks; ++i) keys.push_back(*make_lock_key("batch", "cold-" + std::to_string(i)));
  // Some locks are held already.
  const std::set<int> taken{0, 1001, 1999};
  for (int i : taken) acquire(keys[i], direct_grantee("earlier"));
  server_.reset_stats();

  std::vector<SlotRange> ranges;
  for (const LockKey& key : keys) ranges.push_back(SlotRange{key, 1});
  auto read = store().read_slots(ranges);
  ASSERT_TRUE(read.ok()) << read.error().describe();
  ASSERT_EQ(read->size(), keys.size());
  std::vector<GrantRequest> free;
  for (int i = 0; i < kLocks; ++i) {
    const DocumentRead& slot = (*read)[i].front();
    ASSERT_TRUE(slot.ok()) << i;
    EXPECT_EQ(slot->has_value(), taken.count(i) > 0) << i;
    if (!slot->has_value()) free.push_back(one_lock(keys[i], direct_grantee("pod-" + std::to_string(i))));
  }
  // One lock is taken between the read and the grant: it comes back as not granted.
  acquire(free[10].writes[0].key, direct_grantee("racer"));
  auto granted = store().grant(free);
  ASSERT_EQ(granted.size(), free.size());
  for (std::size_t i = 0; i < free.size(); ++i) {
    ASSERT_TRUE(granted[i].ok()) << i;
    EXPECT_EQ(granted[i]->grant.has_value(), i != 10) << i;
  }
  ASSERT_TRUE(granted[10]->current[0]);
  EXPECT_EQ(granted[10]->current[0]->doc.holder, "racer");
  EXPECT_EQ(server_.count("mget"), 2);
  EXPECT_EQ(server_.count("bulk"), 2);
  EXPECT_EQ(server_.count("get"), 1) << "the one read that settles the conflicted grant";
}

TEST_F(LockIntegration, BatchRenewalOfManyLocksReportsStolenOnes) {
  constexpr int kLocks = 2500;
  std::vector<Renewal> held;
  for (int i = 0; i < kLocks; ++i) {
    LockKey key = *make_lock_key("batch", "lock-" + std::to_string(i));
    held.push_back(Renewal{acquire(key, direct_grantee("pod-a")).docs.front(), Millis(0), std::nullopt});
  }
  const std::set<int> stolen{3, 999, 1000, 2498};
  for (int i : stolen) acquire(held[i].held.key, direct_grantee("thief"), held[i].held.state);
  server_.reset_stats();
  auto results = store().renew_all(held);
  EXPECT_EQ(server_.count("bulk"), 3);
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kLocks));
  for (int i = 0; i < kLocks; ++i) {
    if (stolen.count(i)) {
      EXPECT_EQ(results[i].result, RenewalResult::kLost) << i;
    } else {
      EXPECT_EQ(results[i].result, RenewalResult::kRenewed) << i;
    }
  }
  auto thief = read_lock(store(), held[999].held.key);
  EXPECT_EQ((*thief)->doc.holder, "thief");
}

TEST_F(LockIntegration, TransientBackendFaultsAreRetried) {
  server_.fault({{"op", "create"}, {"status", 503}, {"count", 2}});
  HeldGrant g = acquire(key_, direct_grantee("pod-a"));
  server_.fault({{"op", "bulk"}, {"status", 429}, {"count", 1}});
  EXPECT_EQ(renew_grant(store(), g, Millis(0)).result, RenewalResult::kRenewed);
}

TEST_F(LockIntegration, PersistentOutageIsAClearErrorAndNoGrant) {
  server_.fault({{"op", "*"}, {"status", 503}, {"count", -1}});
  auto r = grant_one(store(), one_lock(key_, direct_grantee("pod-a")));
  server_.clear_faults();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  auto current = read();
  ASSERT_TRUE(current.ok());
  EXPECT_FALSE(*current);
}

TEST_F(LockIntegration, DelayedCreateNeverGivesTwoHolders) {
  es::ClientOptions fast;
  fast.request_timeout = Millis(200);
  StoreOnServer impatient(server_.url(), index_, fast);
  server_.fault({{"op", "create"}, {"latency_ms", 800}, {"count", 1}});
  auto first = grant_one(*impatient.store, one_lock(key_, direct_grantee("pod-a")));
  // The create lands later: wait for it, then a contender must not get the lock.
  ASSERT_TRUE(testing::wait_until([&] {
    auto current = read();
    return current.ok() && current->has_value();
  }));
  auto second = grant_one(store(), one_lock(key_, direct_grantee("pod-b")));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->grant);
  EXPECT_EQ(second->current[0]->doc.holder, "pod-a");
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
  HeldGrant g = acquire(key_, direct_grantee("pod-a"));
  server_.fault({{"op", "bulk"}, {"latency_ms", 1000}, {"count", 1}});
  GrantRenewal renewed = renew_grant(*impatient.store, g, Millis(0));
  // Whatever the answer, the lock is never reported lost and never renewed without proof.
  ASSERT_NE(renewed.result, RenewalResult::kLost);
  if (renewed.result == RenewalResult::kFailed) {
    EXPECT_EQ(renewed.error->code, ErrorCode::kTimeout);
    EXPECT_EQ(renewed.grant->valid_until, g.valid_until);
  }
  // Once the delayed write landed, the holder still owns its grant and can release it.
  ASSERT_TRUE(testing::wait_until([&] {
    auto current = read();
    return current.ok() && *current && !((*current)->version == only_document(g).version);
  }));
  auto released = store().release(g, ReleaseScope::kGrant);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
}

TEST_F(LockIntegration, DroppedConnectionsAreRetriedAndResolved) {
  server_.fault({{"op", "create"}, {"drop", true}, {"count", 1}});
  HeldGrant g = acquire(key_, direct_grantee("pod-a"));
  server_.fault({{"op", "delete"}, {"drop", true}, {"count", 1}});
  auto released = store().release(g, ReleaseScope::kGrant);
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
