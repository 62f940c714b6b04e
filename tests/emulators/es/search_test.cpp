// _search, _count, _delete_by_query over refreshed data.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"
#include "support/fake_clock.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

class EsSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    es.call("PUT", "/locks",
            json{{"mappings",
                  {{"properties",
                    {{"lock", {{"type", "keyword"}}},
                     {"holder", {{"type", "keyword"}}},
                     {"priority", {{"type", "keyword"}}},
                     {"ttlMillis", {{"type", "long"}}},
                     {"expiresAt", {{"type", "date"}}},
                     {"note", {{"type", "text"}}}}}}}});
    put("1", {{"lock", "ns/a"},
              {"holder", "p1"},
              {"priority", "Foreground"},
              {"ttlMillis", 1000},
              {"expiresAt", "2026-01-01T00:00:00Z"},
              {"note", "Nightly Report job"}});
    put("2", {{"lock", "ns/b"},
              {"holder", "p2"},
              {"priority", "Background"},
              {"ttlMillis", 5000},
              {"expiresAt", "2026-01-02T00:00:00Z"},
              {"note", "weekly cleanup"}});
    put("3", {{"lock", "ns/c"},
              {"holder", "p1"},
              {"priority", "Background"},
              {"ttlMillis", 3000},
              {"expiresAt", "2026-01-03T00:00:00.500Z"}});
    es.call("POST", "/locks/_refresh");
  }
  void put(const std::string& id, const json& doc) { es.call("PUT", "/locks/_doc/" + id, doc); }
  std::vector<std::string> ids(const json& query, const std::string& extra = "") {
    auto r = es.call("POST", "/locks/_search" + extra, json{{"query", query}});
    EXPECT_EQ(r.status, 200) << r.raw.body;
    std::vector<std::string> out;
    for (const auto& h : r.body["hits"]["hits"]) out.push_back(h["_id"]);
    std::sort(out.begin(), out.end());
    return out;
  }
  // A clock that stands still (in 2027, after every expiresAt), so that only an explicit
  // refresh shows writes.
  eslease::testing::FakeClock clock;
  TestClient es{{}, clock};
};

using Ids = std::vector<std::string>;

TEST_F(EsSearch, QueriesSelectTheRightDocuments) {
  EXPECT_EQ(ids({{"match_all", json::object()}}), (Ids{"1", "2", "3"}));
  EXPECT_EQ(ids({{"term", {{"holder", "p1"}}}}), (Ids{"1", "3"}));
  EXPECT_EQ(ids({{"term", {{"holder", {{"value", "p2"}}}}}}), (Ids{"2"}));
  EXPECT_EQ(ids({{"terms", {{"lock", {"ns/a", "ns/c", "ns/z"}}}}}), (Ids{"1", "3"}));
  EXPECT_EQ(ids({{"range", {{"ttlMillis", {{"gt", 1000}, {"lte", 5000}}}}}}), (Ids{"2", "3"}));
  EXPECT_EQ(ids({{"range", {{"expiresAt", {{"gte", "2026-01-02T00:00:00Z"}}}}}}), (Ids{"2", "3"}));
  EXPECT_EQ(ids({{"range", {{"expiresAt", {{"lt", "2026-01-03T00:00:00.500Z"}}}}}}), (Ids{"1", "2"}));
  EXPECT_EQ(ids({{"range", {{"expiresAt", {{"lt", "now"}}}}}}), (Ids{"1", "2", "3"}));
  EXPECT_EQ(ids({{"ids", {{"values", {"2", "9"}}}}}), (Ids{"2"}));
  EXPECT_EQ(ids({{"term", {{"note", "nightly"}}}}), (Ids{"1"})) << "text fields match analyzed terms";
  EXPECT_EQ(ids({{"term", {{"note", "Nightly"}}}}), Ids{}) << "term queries are not analyzed";
  EXPECT_EQ(ids({{"exists", {{"field", "note"}}}}), (Ids{"1", "2"}));
  EXPECT_EQ(ids({{"bool",
                  {{"filter", json::array({{{"term", {{"holder", "p1"}}}}})},
                   {"must_not", {{"term", {{"priority", "Foreground"}}}}}}}}),
            (Ids{"3"}));
  EXPECT_EQ(
      ids({{"bool",
            {{"should", json::array({{{"term", {{"holder", "p2"}}}}, {{"term", {{"lock", "ns/c"}}}}})}}}}),
      (Ids{"2", "3"}));
  EXPECT_EQ(ids({{"bool",
                  {{"should",
                    json::array({{{"term", {{"holder", "p1"}}}}, {{"term", {{"priority", "Background"}}}}})},
                   {"minimum_should_match", 2}}}}),
            (Ids{"3"}));
  EXPECT_EQ(ids({{"term", {{"unmapped", "x"}}}}), Ids{});
}

TEST_F(EsSearch, ResponseShapeSortPagingAndSeqNo) {
  auto r = es.call("POST", "/locks/_search",
                   json{{"query", {{"match_all", json::object()}}},
                        {"sort", json::array({{{"ttlMillis", {{"order", "desc"}}}}})},
                        {"size", 2},
                        {"seq_no_primary_term", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["timed_out"], false);
  EXPECT_EQ(r.body["_shards"]["total"], 1);
  EXPECT_EQ(r.body["hits"]["total"], (json{{"value", 3}, {"relation", "eq"}}));
  EXPECT_TRUE(r.body["hits"]["max_score"].is_null());
  const auto& hits = r.body["hits"]["hits"];
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0]["_id"], "2");
  EXPECT_EQ(hits[0]["sort"], json::array({5000}));
  EXPECT_EQ(hits[0]["_seq_no"], 1);
  EXPECT_EQ(hits[0]["_primary_term"], 1);
  EXPECT_TRUE(hits[0]["_score"].is_null());
  EXPECT_EQ(hits[1]["_id"], "3");
  auto page2 = es.call("GET", "/locks/_search?sort=ttlMillis:desc&from=2&size=5");
  ASSERT_EQ(page2.body["hits"]["hits"].size(), 1u);
  EXPECT_EQ(page2.body["hits"]["hits"][0]["_id"], "1");
  auto text_sort = es.call("POST", "/locks/_search", json{{"sort", "note"}});
  EXPECT_EQ(text_sort.status, 400);
}

TEST_F(EsSearch, UnrefreshedWritesAreInvisibleToSearchButNotToGet) {
  put("4", {{"lock", "ns/d"}, {"holder", "p9"}});
  es.call("DELETE", "/locks/_doc/1");
  EXPECT_EQ(ids({{"match_all", json::object()}}), (Ids{"1", "2", "3"}));
  EXPECT_EQ(es.call("GET", "/locks/_doc/4").status, 200);
  EXPECT_EQ(es.call("GET", "/locks/_doc/1").status, 404);
  EXPECT_EQ(es.call("POST", "/locks/_count").body["count"], 3);
  auto refreshed = es.call("POST", "/locks/_refresh");
  EXPECT_EQ(refreshed.body["_shards"], (json{{"total", 2}, {"successful", 1}, {"failed", 0}}));
  EXPECT_EQ(ids({{"match_all", json::object()}}), (Ids{"2", "3", "4"}));
  es.call("PUT", "/locks/_doc/5?refresh=wait_for", json{{"lock", "ns/e"}});
  EXPECT_EQ(es.call("POST", "/locks/_count").body["count"], 4);
}

TEST_F(EsSearch, UnknownQueriesAndKeysAreParsingErrors) {
  auto r = es.call("POST", "/locks/_search", R"({"query":{"fuzzy_match":{"a":1}}})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error_type(), "parsing_exception");
  EXPECT_EQ(r.reason(), "unknown query [fuzzy_match]");
  auto key = es.call("POST", "/locks/_search", R"({"querry":{}})");
  EXPECT_EQ(key.status, 400);
  EXPECT_EQ(key.reason(), "Unknown key for a START_OBJECT in [querry].");
  auto number = es.call("POST", "/locks/_search", R"({"query":{"term":{"ttlMillis":"abc"}}})");
  EXPECT_EQ(number.status, 400);
  EXPECT_EQ(number.error_type(), "search_phase_execution_exception");
  EXPECT_EQ(number.body["error"]["root_cause"][0]["type"], "query_shard_exception");
  auto missing = es.call("POST", "/nope/_search", R"({})");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_type(), "index_not_found_exception");
  EXPECT_EQ(es.call("POST", "/nope*/_search", R"({})").body["hits"]["total"]["value"], 0);
}

// count/10_basic.yml "test negative terminate_after throws IAE": RestCountAction refuses it
// before it looks at the (here missing) index.
TEST_F(EsSearch, CountRefusesANegativeTerminateAfter) {
  auto negative = es.call("GET", "/index1/_count?terminate_after=-1");
  EXPECT_EQ(negative.status, 400);
  EXPECT_EQ(negative.error_type(), "illegal_argument_exception");
  EXPECT_EQ(negative.reason(), "terminateAfter must be > 0");
  auto not_a_number = es.call("GET", "/locks/_count?terminate_after=x");
  EXPECT_EQ(not_a_number.reason(), "Failed to parse int parameter [terminate_after] with value [x]");
  auto bad_body = es.call("POST", "/locks/_count?terminate_after=-1", R"({"querry":{}})");
  EXPECT_EQ(bad_body.error_type(), "parsing_exception") << "the body is read first";
  auto zero = es.call("GET", "/locks/_count?terminate_after=0");
  EXPECT_EQ(zero.status, 200);
  EXPECT_EQ(zero.body["count"], 3);
  EXPECT_FALSE(zero.body.contains("terminated_early")) << "0 is the default: no early termination";
}

TEST_F(EsSearch, DeleteByQueryDeletesRefreshedMatches) {
  auto r = es.call("POST", "/locks/_delete_by_query?refresh=true",
                   json{{"query", {{"term", {{"holder", "p1"}}}}}});
  ASSERT_EQ(r.status, 200) << r.raw.body;
  EXPECT_EQ(r.body["deleted"], 2);
  EXPECT_EQ(r.body["total"], 2);
  EXPECT_EQ(r.body["version_conflicts"], 0);
  EXPECT_EQ(es.call("GET", "/locks/_doc/1").status, 404);
  EXPECT_EQ(es.call("POST", "/locks/_count").body["count"], 1);
}

TEST_F(EsSearch, DeleteByQueryConflictsWithUnrefreshedChanges) {
  put("2", {{"lock", "ns/b"}, {"holder", "p2"}, {"ttlMillis", 1}});  // changed since the refresh
  auto r = es.call("POST", "/locks/_delete_by_query", json{{"query", {{"match_all", json::object()}}}});
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.body["version_conflicts"], 1);
  EXPECT_EQ(r.body["deleted"], 2);
  EXPECT_EQ(r.body["failures"][0]["id"], "2");
  EXPECT_EQ(r.body["failures"][0]["cause"]["type"], "version_conflict_engine_exception");
  EXPECT_EQ(es.call("GET", "/locks/_doc/2").status, 200);
  auto proceed = es.call("POST", "/locks/_delete_by_query?conflicts=proceed",
                         json{{"query", {{"match_all", json::object()}}}});
  EXPECT_EQ(proceed.status, 200);
}

}  // namespace
}  // namespace eslease::esemu
