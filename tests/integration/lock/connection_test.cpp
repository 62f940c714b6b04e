// The lock store as both executables open it from their --es* flags, against the test
// server: its batch calls reach Elasticsearch as batches.
#include "lock/connection.h"

#include <gtest/gtest.h>

#include "integration/lock/lock_fixture.h"
#include "support/lock_grants.h"

namespace eslease::lock {
namespace {

using testing::EsTestServer;

TEST(OpenLockStore, BatchReadsAndGrantsAreOneRequestEach) {
  EsTestServer server;
  ConnectionSettings settings;
  settings.hosts = {server.url()};
  settings.index = EsTestServer::unique_index("eslease-connection-it");
  auto store = open_lock_store(settings, SystemClock::instance());
  ASSERT_TRUE(store.ok()) << store.error().describe();
  ASSERT_TRUE((*store)->prepare().ok());
  std::vector<SlotRange> locks;
  std::vector<GrantRequest> requests;
  for (int i = 0; i < 50; ++i) {
    locks.push_back(SlotRange{*make_lock_key("batch", "lock-" + std::to_string(i)), 1});
    requests.push_back(testing::one_lock(locks.back().key, direct_grantee("pod-" + std::to_string(i))));
  }
  server.reset_stats();

  auto read = (*store)->read_slots(locks);
  ASSERT_TRUE(read.ok()) << read.error().describe();
  EXPECT_EQ(server.count("mget"), 1);
  EXPECT_EQ(server.count("get"), 0) << "one GET per key instead of one _mget";

  auto granted = (*store)->grant(requests);
  ASSERT_EQ(granted.size(), requests.size());
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
