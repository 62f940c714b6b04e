// GET /, headers, index APIs, routing errors, content types and authentication.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

TEST(EsApiInfo, AnswersLikeAnElasticsearch8NodeWithProductHeader) {
  TestClient es;
  auto r = es.call("GET", "/");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["tagline"], "You Know, for Search");
  EXPECT_EQ(r.body["version"]["number"].get<std::string>().substr(0, 2), "8.");
  EXPECT_EQ(r.body["version"]["build_flavor"], "default");
  EXPECT_TRUE(r.body["version"].contains("lucene_version"));
  EXPECT_TRUE(r.body["version"].contains("minimum_wire_compatibility_version"));
  EXPECT_TRUE(r.body["version"].contains("minimum_index_compatibility_version"));
  EXPECT_EQ(r.raw.header("X-elastic-product"), "Elasticsearch");
  EXPECT_EQ(r.raw.header("content-type"), "application/json");
}

TEST(EsApiInfo, EveryAnswerCarriesTheProductHeaderEvenErrors) {
  TestClient es;
  for (const auto& target : {"/missing/_doc/1", "/_nothing/here/at/all", "/missing"}) {
    auto r = es.call("GET", target);
    EXPECT_GE(r.status, 400) << target;
    EXPECT_EQ(r.raw.header("X-elastic-product"), "Elasticsearch") << target;
  }
}

TEST(EsApiInfo, CompatibleWithMediaTypeIsAcceptedAndEchoed) {
  TestClient es;
  auto r =
      es.call("PUT", "/idx/_doc/1", R"({"a":1})", "application/vnd.elasticsearch+json; compatible-with=7",
              {{"Accept", "application/vnd.elasticsearch+json; compatible-with=7"}});
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.raw.header("content-type"), "application/vnd.elasticsearch+json;compatible-with=7");
}

TEST(EsApiInfo, ClusterHealthIsYellowWithUnassignedReplicasAndGreenWithout) {
  TestClient es;
  EXPECT_EQ(es.call("GET", "/_cluster/health").body["status"], "green");
  es.call("PUT", "/with-replica");
  auto yellow = es.call("GET", "/_cluster/health");
  EXPECT_EQ(yellow.body["status"], "yellow");
  EXPECT_EQ(yellow.body["unassigned_shards"], 1);
  es.call("PUT", "/no-replica", json{{"settings", {{"number_of_replicas", 0}}}});
  EXPECT_EQ(es.call("GET", "/_cluster/health/no-replica").body["status"], "green");
  auto waited = es.call("GET", "/_cluster/health?wait_for_status=green");
  EXPECT_EQ(waited.status, 408);
  EXPECT_EQ(waited.body["timed_out"], true);
}

TEST(EsApiIndices, CreateGetExistsDelete) {
  TestClient es;
  json body = {{"settings", {{"number_of_shards", 1}, {"number_of_replicas", 0}}},
               {"mappings",
                {{"dynamic", "strict"},
                 {"properties", {{"lock", {{"type", "keyword"}}}, {"expiresAt", {{"type", "date"}}}}}}}};
  auto created = es.call("PUT", "/locks", body);
  ASSERT_EQ(created.status, 200);
  EXPECT_EQ(created.body, (json{{"acknowledged", true}, {"shards_acknowledged", true}, {"index", "locks"}}));
  EXPECT_EQ(es.call("HEAD", "/locks").status, 200);
  EXPECT_EQ(es.call("HEAD", "/nope").status, 404);
  EXPECT_TRUE(es.call("HEAD", "/nope").raw.body.empty());

  auto got = es.call("GET", "/locks");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body["locks"]["mappings"]["dynamic"], "strict");
  EXPECT_EQ(got.body["locks"]["mappings"]["properties"]["lock"]["type"], "keyword");
  EXPECT_EQ(got.body["locks"]["settings"]["index"]["number_of_shards"], "1");
  EXPECT_EQ(got.body["locks"]["settings"]["index"]["number_of_replicas"], "0");
  EXPECT_EQ(got.body["locks"]["settings"]["index"]["provided_name"], "locks");
  auto mapping = es.call("GET", "/locks/_mapping");
  EXPECT_EQ(mapping.body["locks"]["mappings"]["properties"]["expiresAt"]["type"], "date");

  auto again = es.call("PUT", "/locks");
  EXPECT_EQ(again.status, 400);
  EXPECT_EQ(again.error_type(), "resource_already_exists_exception");
  EXPECT_EQ(again.reason().rfind("index [locks/", 0), 0u);
  EXPECT_EQ(again.body["error"]["root_cause"][0]["type"], "resource_already_exists_exception");

  EXPECT_EQ(es.call("DELETE", "/locks").body, (json{{"acknowledged", true}}));
  auto gone = es.call("DELETE", "/locks");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.error_type(), "index_not_found_exception");
  EXPECT_EQ(gone.reason(), "no such index [locks]");
  EXPECT_EQ(gone.body["error"]["index"], "locks");
  EXPECT_EQ(gone.body["status"], 404);
}

TEST(EsApiIndices, InvalidIndexNamesAreRejected) {
  TestClient es;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/Upper", "must be lowercase"},
      {"/_under", "must not start with '_', '-', or '+'"},
      {"/-dash", "must not start with '_', '-', or '+'"},
      {"/a%23b", "must not contain '#'"},
      {"/a%20b", "must not contain the following characters"},
      {"/a%2Ab", "must not contain the following characters"},
      {"/..", "must not be '.' or '..'"},
  };
  for (const auto& [target, why] : cases) {
    auto r = es.call("PUT", target);
    EXPECT_EQ(r.status, 400) << target;
    EXPECT_EQ(r.error_type(), "invalid_index_name_exception") << target;
    EXPECT_NE(r.reason().find(why), std::string::npos) << target << ": " << r.reason();
  }
  // Writes auto-create indices, with the same validation.
  auto r = es.call("PUT", "/Bad/_doc/1", R"({"a":1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error_type(), "invalid_index_name_exception");
}

TEST(EsApiIndices, MappingsWithUnknownTypesOrKeysAreRejected) {
  TestClient es;
  auto bad_type = es.call("PUT", "/a", json{{"mappings", {{"properties", {{"f", {{"type", "nonsense"}}}}}}}});
  EXPECT_EQ(bad_type.status, 400);
  EXPECT_EQ(bad_type.error_type(), "mapper_parsing_exception");
  EXPECT_NE(bad_type.reason().find("No handler for type [nonsense] declared on field [f]"),
            std::string::npos);
  auto bad_key = es.call("PUT", "/b", json{{"setting", json::object()}});
  EXPECT_EQ(bad_key.status, 400);
  EXPECT_EQ(bad_key.error_type(), "parse_exception");
  EXPECT_EQ(bad_key.reason(), "unknown key [setting] for create index");
}

// indices.create/10_basic.yml "Create index with invalid mappings": ObjectMapper refuses the
// name with an IllegalArgumentException, which MapperService wraps; the wrapper is the root cause.
TEST(EsApiIndices, EmptyOrBlankFieldNamesAreIllegalArguments) {
  TestClient es;
  auto empty =
      es.call("PUT", "/test_index", json{{"mappings", {{"properties", {{"", {{"type", "keyword"}}}}}}}});
  EXPECT_EQ(empty.status, 400);
  EXPECT_EQ(empty.error_type(), "mapper_parsing_exception");
  EXPECT_EQ(empty.reason(), "Failed to parse mapping: field name cannot be an empty string");
  EXPECT_EQ(empty.body["error"]["caused_by"], (json{{"type", "illegal_argument_exception"},
                                                    {"reason", "field name cannot be an empty string"}}));
  EXPECT_EQ(empty.body["error"]["root_cause"],
            (json::array({{{"type", "mapper_parsing_exception"},
                           {"reason", "Failed to parse mapping: field name cannot be an empty string"}}})));
  auto blank =
      es.call("PUT", "/test_index",
              json{{"mappings", {{"properties", {{"o", {{"properties", {{"  ", {{"type", "long"}}}}}}}}}}}});
  EXPECT_EQ(blank.status, 400);
  EXPECT_EQ(blank.reason(), "Failed to parse mapping: field name cannot contain only whitespaces");
  EXPECT_EQ(blank.body["error"]["caused_by"]["type"], "illegal_argument_exception");
  EXPECT_EQ(es.call("HEAD", "/test_index").status, 404);
}

TEST(EsApiRouting, UnknownPathsAndMethodsAnswerLikeTheRestController) {
  TestClient es;
  auto unknown = es.call("GET", "/a/b/c/d");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.body["error"], "no handler found for uri [/a/b/c/d] and method [GET]");
  auto wrong = es.call("PATCH", "/idx/_doc/1");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.body["error"],
            "Incorrect HTTP method for uri [/idx/_doc/1] and method [PATCH], allowed: [DELETE, GET, HEAD, "
            "POST, PUT]");
  EXPECT_EQ(wrong.body["status"], 405);
  EXPECT_EQ(wrong.raw.header("Allow"), "DELETE,GET,HEAD,POST,PUT");
}

TEST(EsApiRouting, UnknownParametersAreRejected) {
  TestClient es;
  auto r = es.call("PUT", "/idx/_doc/1?if_seqno=1", R"({"a":1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error_type(), "illegal_argument_exception");
  EXPECT_EQ(r.reason(), "request [/idx/_doc/1] contains unrecognized parameter: [if_seqno]");
  EXPECT_EQ(es.call("GET", "/idx/_doc/1").status, 404) << "the rejected write must not happen";
}

TEST(EsApiRouting, BodiesNeedAJsonContentType) {
  TestClient es;
  auto missing = es.call("PUT", "/idx/_doc/1", R"({"a":1})", "");
  EXPECT_EQ(missing.status, 406);
  EXPECT_EQ(missing.body["error"], "Content-Type header is missing");
  auto text = es.call("PUT", "/idx/_doc/1", R"({"a":1})", "text/plain");
  EXPECT_EQ(text.status, 406);
  EXPECT_EQ(text.body["error"], "Content-Type header [text/plain] is not supported");
  auto get_with_body = es.call("GET", "/idx/_doc/1", R"({"a":1})");
  EXPECT_EQ(get_with_body.status, 400);
  EXPECT_EQ(get_with_body.reason(), "request [GET /idx/_doc/1] does not support having a body");
}

TEST(EsApiRouting, MalformedJsonIsA400NeverACrash) {
  TestClient es;
  const std::vector<std::string> bodies = {"{", "{\"a\":}", "[1,2", "\xff\xfe", "nul", "{\"a\":\"\\ud800\"}",
                                           "5"};
  for (const auto& body : bodies) {
    auto doc = es.call("PUT", "/idx/_doc/1", body);
    EXPECT_EQ(doc.status, 400) << body;
    EXPECT_EQ(doc.error_type(), "document_parsing_exception") << body;
    auto search = es.call("POST", "/_search", body);
    EXPECT_EQ(search.status, 400) << body;
    auto create = es.call("PUT", "/idx2", body);
    EXPECT_EQ(create.status, 400) << body;
  }
}

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(k[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(k[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

TEST(EsApiAuth, BasicAuthIsRequiredEverywhereButTheAdminEndpoints) {
  TestClient es(ApiOptions{std::make_pair(std::string("elastic"), std::string("s3cret")), std::nullopt, {}});
  auto none = es.call("GET", "/");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.error_type(), "security_exception");
  EXPECT_EQ(none.reason(), "missing authentication credentials for REST request [/]");
  EXPECT_TRUE(none.raw.header("WWW-Authenticate").has_value());
  EXPECT_EQ(none.raw.header("X-elastic-product"), "Elasticsearch");

  auto wrong = es.call("GET", "/", "", "", {{"Authorization", "Basic " + base64("elastic:nope")}});
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.reason(), "unable to authenticate user [elastic] for REST request [/]");

  auto right = es.call("GET", "/", "", "", {{"Authorization", "Basic " + base64("elastic:s3cret")}});
  EXPECT_EQ(right.status, 200);
  auto api_key = es.call("GET", "/", "", "", {{"Authorization", "ApiKey " + base64("id:key")}});
  EXPECT_EQ(api_key.status, 401);
  EXPECT_EQ(es.call("GET", "/_emulator/stats").status, 200);
}

TEST(EsApiAuth, ApiKeyAuth) {
  TestClient es(ApiOptions{std::nullopt, std::string("key-id:key-secret"), {}});
  EXPECT_EQ(es.call("PUT", "/idx/_doc/1", R"({"a":1})").status, 401);
  auto ok = es.call("PUT", "/idx/_doc/1", R"({"a":1})", "application/json",
                    {{"Authorization", "ApiKey " + base64("key-id:key-secret")}});
  EXPECT_EQ(ok.status, 201);
  auto bad = es.call("GET", "/idx/_doc/1", "", "", {{"Authorization", "ApiKey " + base64("key-id:other")}});
  EXPECT_EQ(bad.status, 401);
}

}  // namespace
}  // namespace eslease::esemu
