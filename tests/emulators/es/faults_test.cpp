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
  auto r = es.api().handle(request, [&](std::chrono::milliseconds d, EsApi::Hold hold) {
    slept.push_back(d);
    EXPECT_EQ(hold, EsApi::Hold::kRequest);
    return true;
  });
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
  EXPECT_EQ(es.call("POST", "/_emulator/faults", R"({"phase":"later","drop":true})").status, 400);
  auto read = es.call("POST", "/_emulator/faults", R"({"op":"get","phase":"after_apply","drop":true})");
  EXPECT_EQ(read.status, 400);
  EXPECT_EQ(read.reason(),
            "phase [after_apply] is for writes: op must be index, create, update, delete, bulk or *");
  EXPECT_EQ(
      es.call("POST", "/_emulator/faults", R"({"op":"index","phase":"after_apply","status":503})").status,
      400);
  auto idle = es.call("POST", "/_emulator/faults", R"({"op":"index","phase":"after_apply"})");
  EXPECT_EQ(idle.reason(), "a fault after the write is applied needs drop or latency_ms");
  EXPECT_EQ(es.call("GET", "/_emulator/faults").body["rules"].size(), 0u);
}

long long applied_unanswered(TestClient& es) {
  return es.call("GET", "/_emulator/stats").body["es_write_applied_unanswered"].get<long long>();
}

TEST(EsFaults, AfterApplyDropPerformsTheWriteAndLosesItsAnswer) {
  TestClient es;
  auto added = es.call("POST", "/_emulator/faults", R"({"op":"index","phase":"after_apply","drop":true})");
  ASSERT_EQ(added.status, 200);
  EXPECT_EQ(added.body["rule"]["phase"], "after_apply");
  auto lost = es.call("PUT", "/idx/_doc/1", R"({"a":1})");
  EXPECT_TRUE(lost.raw.drop);
  auto got = es.call("GET", "/idx/_doc/1");
  EXPECT_EQ(got.status, 200) << "the write was applied";
  EXPECT_EQ(got.body["_source"]["a"], 1);
  EXPECT_EQ(applied_unanswered(es), 1);
  auto next = es.call("PUT", "/idx/_doc/1", R"({"a":2})");
  EXPECT_EQ(next.status, 200) << "the rule's one use is spent";
  EXPECT_EQ(next.body["_seq_no"], 1);
  EXPECT_EQ(applied_unanswered(es), 1);
  es.call("POST", "/_emulator/stats/reset");
  EXPECT_EQ(applied_unanswered(es), 0);
}

TEST(EsFaults, AfterApplyRulesWaitForAWriteThatSucceeds) {
  TestClient es;
  es.call("PUT", "/idx/_create/1", R"({"a":1})");
  es.call("POST", "/_emulator/faults", R"({"op":"*","phase":"after_apply","drop":true,"count":2})");
  EXPECT_EQ(es.call("GET", "/idx/_doc/1").status, 200) << "reads are not writes";
  auto conflict = es.call("PUT", "/idx/_create/1", R"({"a":2})");
  EXPECT_EQ(conflict.status, 409) << "a write that was not applied is answered";
  EXPECT_EQ(es.call("DELETE", "/idx/_doc/missing").status, 404);
  EXPECT_EQ(es.call("GET", "/_emulator/faults").body["rules"][0]["count"], 2);
  EXPECT_TRUE(es.call("POST", "/idx/_update/1", R"({"doc":{"a":3}})").raw.drop);
  EXPECT_TRUE(es.call("DELETE", "/idx/_doc/1").raw.drop);
  EXPECT_EQ(es.call("GET", "/idx/_doc/1").status, 404) << "the update and then the delete were applied";
  EXPECT_EQ(applied_unanswered(es), 2);
  EXPECT_EQ(es.call("GET", "/_emulator/faults").body["rules"].size(), 0u);
}

TEST(EsFaults, ABulkWhoseAnswerIsLostAppliedEveryItem) {
  TestClient es;
  es.call("POST", "/_emulator/faults", R"({"op":"bulk","phase":"after_apply","drop":true})");
  auto lost = es.call("POST", "/_bulk",
                      "{\"create\":{\"_index\":\"idx\",\"_id\":\"a\"}}\n{\"v\":1}\n"
                      "{\"index\":{\"_index\":\"idx\",\"_id\":\"b\"}}\n{\"v\":2}\n",
                      "application/x-ndjson");
  EXPECT_TRUE(lost.raw.drop);
  EXPECT_EQ(es.call("GET", "/idx/_doc/a").body["_source"]["v"], 1);
  EXPECT_EQ(es.call("GET", "/idx/_doc/b").body["_source"]["v"], 2);
  EXPECT_EQ(applied_unanswered(es), 1) << "one request, one lost answer";
}

// The delay is waited through the server's sleeper, which reports whether the client is
// still there to be answered.
TEST(EsFaults, AfterApplyLatencyLosesTheAnswerOnlyWhenTheClientLeft) {
  TestClient es;
  es.call("POST", "/_emulator/faults",
          R"({"op":"create","phase":"after_apply","latency_ms":15000,"count":2})");
  ApiRequest request;
  request.method = "PUT";
  request.path = "/idx/_create/1";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = R"({"a":1})";
  std::vector<std::chrono::milliseconds> waited;
  auto client_waits = [&](std::chrono::milliseconds d, EsApi::Hold hold) {
    EXPECT_EQ(hold, EsApi::Hold::kAnswer);
    waited.push_back(d);
    return true;
  };
  auto late = es.api().handle(request, client_waits);
  EXPECT_EQ(late.status, 201) << "a client that waited long enough gets the answer";
  EXPECT_EQ(applied_unanswered(es), 0);
  request.path = "/idx/_create/2";
  auto client_leaves = [&](std::chrono::milliseconds d, EsApi::Hold) {
    waited.push_back(d);
    return false;
  };
  EXPECT_TRUE(es.api().handle(request, client_leaves).drop);
  EXPECT_EQ(waited, (std::vector<std::chrono::milliseconds>{std::chrono::milliseconds(15000),
                                                            std::chrono::milliseconds(15000)}));
  EXPECT_EQ(es.call("GET", "/idx/_doc/2").status, 200);
  EXPECT_EQ(applied_unanswered(es), 1);
}

// A client that left during an injected delay before the write still has it applied, as
// Elasticsearch does not cancel a write whose client went away; nobody gets its answer.
TEST(EsFaults, AWriteAfterAnInjectedDelayTheClientLeftIsCounted) {
  TestClient es;
  es.call("POST", "/_emulator/faults", R"({"op":"index","latency_ms":15000})");
  ApiRequest request;
  request.method = "PUT";
  request.path = "/idx/_doc/1";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = R"({"a":1})";
  EXPECT_TRUE(es.api().handle(request, [](std::chrono::milliseconds, EsApi::Hold) { return false; }).drop);
  EXPECT_EQ(es.call("GET", "/idx/_doc/1").status, 200);
  EXPECT_EQ(applied_unanswered(es), 1);
}

}  // namespace
}  // namespace eslease::esemu
