// Fencing tokens keep growing over HTTP when the lock index is deleted (and auto-created
// again by the next write, as Elasticsearch does) or restored from an older snapshot.
#include <gtest/gtest.h>

#include "integration/lock/lock_fixture.h"
#include "support/lock_grants.h"
#include "support/wait.h"

namespace eslease::lock {
namespace {

using testing::EsTestServer;
using testing::one_lock;
using testing::StoreOnServer;

constexpr Millis kTtl{300};

class TokenContinuityIntegration : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store().prepare().ok()); }
  LockStore& store() { return *backend_.store; }
  static LockKey key(const std::string& name) { return *make_lock_key("batch", name); }

  // Grants (and renews) `n` locks; the largest token issued.
  std::int64_t issue(int n, const std::string& prefix) {
    std::int64_t largest = 0;
    for (int i = 0; i < n; ++i) {
      HeldGrant g =
          testing::granted(store(), one_lock(key(prefix + std::to_string(i)), direct_grantee("pod", kTtl)));
      if (g.docs.empty()) continue;
      GrantRenewal renewed = renew_grant(store(), g, kTtl);
      EXPECT_NE(renewed.result, RenewalResult::kLost) << renewed.why;
      largest = std::max(largest, g.token);
    }
    return largest;
  }
  // Grants are refused for a while (the old index's grants may still be valid); the first
  // one accepted.
  HeldGrant first_grant_after(const std::string& lock) {
    std::optional<HeldGrant> granted;
    testing::wait_until(
        [&] {
          auto r = grant_one(store(), one_lock(key(lock), direct_grantee("pod-next", kTtl)));
          if (r.ok() && r->grant) granted = r->grant;
          return granted.has_value();
        },
        std::chrono::seconds(10));
    EXPECT_TRUE(granted) << "no grant once the old grants expired";
    return granted.value_or(HeldGrant{});
  }

  EsTestServer server_;
  std::string index_ = EsTestServer::unique_index("eslease-tokens-it");
  StoreOnServer backend_{server_.url(), index_};
};

TEST_F(TokenContinuityIntegration, AfterTheIndexIsDeletedTokensStillGrow) {
  const std::int64_t largest = issue(3, "before-");
  server_.delete_index(index_);
  const HeldGrant g = first_grant_after("after");
  EXPECT_GT(g.token, largest);
  EXPECT_EQ(epoch_of(g.token), 1);
  auto described = backend_.api->describe_index(index_);
  ASSERT_TRUE(described.ok() && described->has_value());
  EXPECT_EQ((*described)->mappings["_meta"]["eslease"]["tokenEpoch"], 1);
  EXPECT_EQ((*described)->mappings["_meta"]["eslease"]["indexUUID"], (*described)->uuid);
  // The next write created the index with a dynamic mapping; it got every field and went strict.
  EXPECT_TRUE(check_mapping((*described)->mappings).missing.empty());
  EXPECT_EQ((*described)->mappings["dynamic"], "strict");
}

TEST_F(TokenContinuityIntegration, AfterARestoreFromAnOlderSnapshotTokensStillGrow) {
  ESLEASE_REQUIRE_EMULATOR(server_);
  issue(1, "early-");
  server_.snapshot(index_, "before-the-rest");
  const std::int64_t largest = issue(4, "late-");
  server_.restore("before-the-rest");
  const HeldGrant g = first_grant_after("after");
  EXPECT_GT(g.token, largest);
}

}  // namespace
}  // namespace eslease::lock
