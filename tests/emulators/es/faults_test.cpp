// Admin endpoints: request counters and injected faults.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

TEST(EsFaults, StatsCountEachOperationAndReset) {
  TestClient es;
  es.call("GET", "/");
  es.call("PUT", "/idx/_doc/1", R"({})");
  es.call("PUT", "/idx/_doc/2?op_type=create", R"({})");
  es.call("PUT", "/idx/_create/3", R"({})");
  es.call("GET", "/idx/_doc/1");
  es.call("HEAD", "/idx/_doc/1");
  es.call("POST", "/_bulk", "{\"delete\":{\"_index\":\"idx\",\"_id\":\"1\"}}\n", "application/x-ndjson");
  es.call("GET", "/_emulator/stats");
  auto stats = es.call("GET", "/_emulator/stats").body;
  EXPECT_EQ(stats["requests"],
            (json{{"bulk", 1}, {"create", 2}, {"get", 1}, {"head", 1}, {"index", 1}, {"info", 1}}));
  EXPECT_EQ(stats["total"], 7);
  EXPECT_EQ(es.call("POST", "/_emulator/stats/reset").status, 200);
  EXPECT_EQ(es.call("GET", "/_emulator/stats").body["total"], 0);
}

TEST(EsFaults, StatusFaultsAnswerWithoutApplyingTheOperation) {
  TestClient es;
  ASSERT_EQ(es.call("POST", "/_emulator/faults", R"({"op":"index","status":503,"count":2})").status, 200);
  for (int i = 0; i < 2; ++i) {
    auto r = es.call("PUT", "/idx/_doc/1", R"({"a":1})");
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.error_type(), "unavailable_shards_exception");
    EXPECT_EQ(r.body["error"]["root_cause"][0]["type"], "unavailable_shards_exception");
    EXPECT_EQ(r.body["status"], 503);
  }
  EXPECT_EQ(es.call("HEAD", "/idx").status, 404) << "a faulted write is not applied";
  auto third = es.call("PUT", "/idx/_doc/1", R"({"a":1})");
  EXPECT_EQ(third.status, 201);
  EXPECT_EQ(third.body["_seq_no"], 0);
  EXPECT_EQ(es.call("GET", "/_emulator/stats").body["requests"]["index"], 3);
}

TEST(EsFaults, WildcardRulesAndRejectionsUntilCleared) {
  TestClient es;
  es.call("POST", "/_emulator/faults", R"({"status":429,"count":-1})");
  for (const auto& target : {"/", "/idx/_doc/1", "/_cluster/health"}) {
    auto r = es.call("GET", target);
    EXPECT_EQ(r.status, 429);
    EXPECT_EQ(r.error_type(), "es_rejected_execution_exception");
  }
  EXPECT_EQ(es.call("GET", "/_emulator/stats").status, 200) << "admin endpoints are never faulted";
  es.call("DELETE", "/_emulator/faults");
  EXPECT_EQ(es.call("GET", "/").status, 200);
}

TEST(EsFaults, LatencyOnlyRulesDelayAndThenPerform) {
  TestClient es;
  std::vector<std::chrono::milliseconds> slept;
  es.call("POST", "/_emulator/faults", R"({"op":"get","latency_ms":250})");
  ApiRequest request;
  request.method = "GET";
  request.path = "/idx/_doc/1";
  auto r = es.api().handle(request, [&](std::chrono::milliseconds d) { slept.push_back(d); });
  ASSERT_EQ(slept.size(), 1u);
  EXPECT_EQ(slept[0].count(), 250);
  EXPECT_EQ(r.status, 404) << "the operation itself ran";
  EXPECT_EQ(r.header("content-type"), "application/json");
}

TEST(EsFaults, DropClosesWithoutAnAnswer) {
  TestClient es;
  es.call("POST", "/_emulator/faults", R"({"op":"update","drop":true})");
  es.call("PUT", "/idx/_doc/1", R"({"a":1})");
  auto dropped = es.call("POST", "/idx/_update/1", R"({"doc":{"a":2}})");
  EXPECT_TRUE(dropped.raw.drop);
  EXPECT_EQ(es.call("GET", "/idx/_doc/1").body["_source"]["a"], 1);
}

TEST(EsFaults, FirstMatchingRuleWinsInOrder) {
  TestClient es;
  es.call("POST", "/_emulator/faults", R"({"op":"search","status":500})");
  es.call("POST", "/_emulator/faults", R"({"status":502})");
  EXPECT_EQ(es.call("POST", "/_search", R"({})").status, 500);
  EXPECT_EQ(es.call("POST", "/_search", R"({})").status, 502);
  EXPECT_EQ(es.call("POST", "/_search", R"({})").status, 200);
}

TEST(EsFaults, BadRulesAreRejected) {
  TestClient es;
  EXPECT_EQ(es.call("POST", "/_emulator/faults", R"({"status":404})").status, 400);
  EXPECT_EQ(es.call("POST", "/_emulator/faults", R"({"op":"nope"})").status, 400);
  EXPECT_EQ(es.call("POST", "/_emulator/faults", R"({"count":0})").status, 400);
  EXPECT_EQ(es.call("POST", "/_emulator/faults", R"({"status":503,"drop":true})").status, 400);
  EXPECT_EQ(es.call("POST", "/_emulator/faults", "{").status, 400);
  EXPECT_EQ(es.call("GET", "/_emulator/faults").body["rules"].size(), 0u);
}

}  // namespace
}  // namespace eslease::esemu
