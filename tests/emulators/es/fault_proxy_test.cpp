// The fault proxy (EsApi with an upstream): a real engine answers, the proxy's rules strike
// before a request reaches it or after it applied a write, and the counters count as the
// emulator's do. A second emulator stands in for the engine here; the real-engine tests run
// the proxy in front of OpenSearch.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

class FaultProxy : public ::testing::Test {
 protected:
  FaultProxy()
      : proxy_(ApiOptions{std::nullopt, std::nullopt,
                          [this](const ApiRequest& request) -> std::optional<ApiResponse> {
                            ++forwarded_;
                            if (engine_away_) return std::nullopt;
                            return engine_.api().handle(request);
                          }}) {}

  TestClient engine_;
  TestClient proxy_;
  int forwarded_ = 0;
  bool engine_away_ = false;
};

TEST_F(FaultProxy, PassesRequestsAndTheEnginesAnswersAsTheyAre) {
  auto created = proxy_.call("PUT", "/idx/_create/a%2Fb", R"({"n":1})");
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(created.body["_id"], "a/b");
  auto conflict = proxy_.call("PUT", "/idx/_create/a%2Fb", R"({"n":2})");
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.error_type(), "version_conflict_engine_exception");
  auto read = proxy_.call("GET", "/idx/_doc/a%2Fb");
  EXPECT_EQ(read.body["_source"], (json{{"n", 1}}));
  int product_headers = 0;
  for (const auto& [name, value] : read.raw.headers) product_headers += name == "X-elastic-product";
  EXPECT_EQ(product_headers, 1) << "the engine's headers pass once, none is added";
  EXPECT_EQ(forwarded_, 3);
}

TEST_F(FaultProxy, CountsEachOperationAsTheEmulatorDoes) {
  proxy_.call("PUT", "/idx/_doc/1?op_type=create", R"({})");
  proxy_.call("PUT", "/idx/_doc/2", R"({})");
  proxy_.call("POST", "/idx/_mget", R"({"ids":["1","2"]})");
  proxy_.call("GET", "/_cat/indices");  // an API the emulator does not route still passes
  auto stats = proxy_.call("GET", "/_emulator/stats").body;
  EXPECT_EQ(stats["requests"], (json{{"create", 1}, {"index", 1}, {"mget", 1}, {"other", 1}}));
  EXPECT_EQ(stats["total"], 4);
  EXPECT_EQ(forwarded_, 4) << "admin requests stay in the proxy";
}

TEST_F(FaultProxy, AStatusRuleAnswersWithoutReachingTheEngine) {
  proxy_.call("POST", "/_emulator/faults", R"({"op":"create","status":503,"count":1})");
  auto refused = proxy_.call("PUT", "/idx/_create/x", R"({})");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.error_type(), "unavailable_shards_exception");
  EXPECT_EQ(forwarded_, 0);
  EXPECT_EQ(engine_.call("HEAD", "/idx").status, 404) << "the engine never saw the write";
  EXPECT_EQ(proxy_.call("PUT", "/idx/_create/x", R"({})").status, 201) << "the rule was used up";
}

TEST_F(FaultProxy, AnAnswerLostAfterTheEngineAppliedTheWrite) {
  proxy_.call("POST", "/_emulator/faults", R"({"op":"bulk","phase":"after_apply","drop":true})");
  auto lost = proxy_.call("POST", "/_bulk", "{\"create\":{\"_index\":\"idx\",\"_id\":\"k\"}}\n{\"n\":1}\n",
                          "application/x-ndjson");
  EXPECT_TRUE(lost.raw.drop);
  EXPECT_EQ(engine_.call("GET", "/idx/_doc/k").status, 200) << "the write was applied all the same";
  EXPECT_EQ(proxy_.call("GET", "/_emulator/stats").body["es_write_applied_unanswered"], 1);
}

TEST_F(FaultProxy, AnEngineThatGivesNoAnswerIsADroppedConnection) {
  engine_away_ = true;
  EXPECT_TRUE(proxy_.call("GET", "/").raw.drop);
}

TEST_F(FaultProxy, RefusesWhatOnlyTheEmulatorsOwnStoreCanDo) {
  proxy_.call("PUT", "/idx", R"({})");
  auto bump = proxy_.call("POST", "/_emulator/bump_primary_term?index=idx");
  EXPECT_EQ(bump.status, 400);
  EXPECT_NE(bump.body["error"]["reason"].get<std::string>().find("real engine"), std::string::npos);
  EXPECT_EQ(proxy_.call("POST", "/_emulator/snapshot?index=idx&snapshot=s").status, 400);
}

}  // namespace
}  // namespace eslease::esemu
