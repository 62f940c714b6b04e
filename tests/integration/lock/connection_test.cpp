// The lock store as both executables open it from their --es* flags, against the test
// server: its batch calls reach Elasticsearch as batches.
#include "lock/connection.h"

#include <gtest/gtest.h>

#include "integration/lock/lock_fixture.h"

namespace eslease::lock {
namespace {

using testing::EsTestServer;

TEST(OpenLockStore, BatchReadsAndGrantsAreOneRequestEach) {
  EsTestServer server;
  ESLEASE_REQUIRE_EMULATOR(server);
  ConnectionSettings settings;
  settings.hosts = {server.url()};
  settings.index = EsTestServer::unique_index("eslease-connection-it");
  auto store = open_lock_store(settings, SystemClock::instance());
  ASSERT_TRUE(store.ok()) << store.error().describe();
  ASSERT_TRUE((*store)->prepare().ok());
  std::vector<LockKey> keys;
  std::vector<std::pair<LockKey, Claim>> claims;
  for (int i = 0; i < 50; ++i) {
    keys.push_back(*make_lock_key("batch", "lock-" + std::to_string(i)));
    claims.emplace_back(keys.back(), testing::claim_for("pod-" + std::to_string(i)));
  }
  server.reset_stats();

  auto read = (*store)->get_many(keys);
  ASSERT_TRUE(read.ok()) << read.error().describe();
  EXPECT_EQ(server.count("mget"), 1);
  EXPECT_EQ(server.count("get"), 0) << "one GET per key instead of one _mget";

  auto granted = (*store)->acquire_many(claims);
  ASSERT_EQ(granted.size(), claims.size());
  for (const auto& one : granted) EXPECT_TRUE(one.ok() && one->grant);
  EXPECT_EQ(server.count("bulk"), 1);
  EXPECT_EQ(server.count("create"), 0) << "one create per key instead of one _bulk";
}

TEST(OpenLockStore, RefusesSettingsTheClientWouldRefuse) {
  ConnectionSettings settings;
  settings.hosts = {"http://127.0.0.1:9"};
  settings.username = "elastic";  // no password file
  auto store = open_lock_store(settings, SystemClock::instance());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(store.error().message.find("--es-password-file"), std::string::npos) << store.error().message;
}

}  // namespace
}  // namespace eslease::lock
