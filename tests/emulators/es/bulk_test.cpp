// _bulk: framing, per-item results and conditions, request-level validation.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

TEST(EsBulk, ItemsReportTheirOwnResultsAndConditions) {
  TestClient es;
  es.call("PUT", "/locks/_doc/a", R"({"v":1})");  // seq 0
  es.call("PUT", "/locks/_doc/b", R"({"v":1})");  // seq 1
  const std::string body =
      "{\"index\":{\"_index\":\"locks\",\"_id\":\"a\",\"if_seq_no\":0,\"if_primary_term\":1}}\n"
      "{\"v\":2}\n"
      "{\"index\":{\"_index\":\"locks\",\"_id\":\"b\",\"if_seq_no\":0,\"if_primary_term\":1}}\n"
      "{\"v\":2}\n"
      "{\"create\":{\"_index\":\"locks\",\"_id\":\"c\"}}\n"
      "{\"v\":1}\n"
      "{\"update\":{\"_index\":\"locks\",\"_id\":\"c\"}}\n"
      "{\"doc\":{\"v\":5}}\n"
      "{\"delete\":{\"_index\":\"locks\",\"_id\":\"missing\"}}\n"
      "{\"create\":{\"_index\":\"locks\",\"_id\":\"a\"}}\n"
      "{\"v\":9}\n";
  auto r = es.call("POST", "/_bulk", body, "application/x-ndjson");
  ASSERT_EQ(r.status, 200) << r.raw.body;
  EXPECT_EQ(r.body["errors"], true);
  EXPECT_TRUE(r.body["took"].is_number());
  const auto& items = r.body["items"];
  ASSERT_EQ(items.size(), 6u);
  EXPECT_EQ(items[0]["index"]["status"], 200);
  EXPECT_EQ(items[0]["index"]["result"], "updated");
  EXPECT_EQ(items[0]["index"]["_seq_no"], 2);
  EXPECT_EQ(items[1]["index"]["status"], 409);
  EXPECT_EQ(items[1]["index"]["error"]["type"], "version_conflict_engine_exception");
  EXPECT_EQ(items[1]["index"]["error"]["reason"],
            "[b]: version conflict, required seqNo [0], primary term [1]. current document has seqNo [1] and "
            "primary "
            "term [1]");
  EXPECT_FALSE(items[1]["index"]["error"].contains("root_cause"));
  EXPECT_EQ(items[2]["create"]["status"], 201);
  EXPECT_EQ(items[2]["create"]["_seq_no"], 3);
  EXPECT_EQ(items[3]["update"]["status"], 200);
  EXPECT_EQ(items[3]["update"]["_version"], 2);
  EXPECT_EQ(items[4]["delete"]["status"], 404);
  EXPECT_EQ(items[4]["delete"]["result"], "not_found");
  EXPECT_FALSE(items[4]["delete"].contains("error")) << "a missing delete is not an error";
  EXPECT_EQ(items[5]["create"]["status"], 409);
  EXPECT_EQ(es.call("GET", "/locks/_doc/b").body["_source"]["v"], 1);
}

TEST(EsBulk, ItemsMayCarryExternalVersions) {
  TestClient es;
  es.call("PUT", "/p/_doc/a?version=20&version_type=external", R"({"v":1})");
  const std::string body =
      "{\"index\":{\"_index\":\"p\",\"_id\":\"a\",\"version\":10,\"version_type\":\"external_gte\"}}\n"
      "{\"v\":2}\n"
      "{\"index\":{\"_index\":\"p\",\"_id\":\"a\",\"version\":20,\"version_type\":\"external_gte\"}}\n"
      "{\"v\":3}\n"
      "{\"delete\":{\"_index\":\"p\",\"_id\":\"a\",\"version\":21,\"version_type\":\"external\"}}\n";
  auto r = es.call("POST", "/_bulk", body, "application/x-ndjson");
  ASSERT_EQ(r.status, 200) << r.raw.body;
  const auto& items = r.body["items"];
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0]["index"]["status"], 409);
  EXPECT_EQ(items[0]["index"]["error"]["reason"],
            "[a]: version conflict, current version [20] is higher than the one provided [10]");
  EXPECT_EQ(items[1]["index"]["status"], 200);
  EXPECT_EQ(items[1]["index"]["_version"], 20);
  EXPECT_EQ(items[2]["delete"]["status"], 200);
  EXPECT_EQ(items[2]["delete"]["_version"], 21);

  auto update = es.call("POST", "/_bulk",
                        "{\"update\":{\"_index\":\"p\",\"_id\":\"a\",\"version\":30,\"version_type\":"
                        "\"external\"}}\n{\"doc\":{}}\n",
                        "application/x-ndjson");
  EXPECT_EQ(update.status, 400);
  EXPECT_EQ(
      update.reason(),
      "Update requests do not support versioning. Please use `if_seq_no` and `if_primary_term` instead");
  auto create = es.call("POST", "/_bulk",
                        "{\"create\":{\"_index\":\"p\",\"_id\":\"b\",\"version\":3,\"version_type\":"
                        "\"external\"}}\n{}\n",
                        "application/x-ndjson");
  EXPECT_EQ(create.status, 400);
  EXPECT_EQ(create.reason(),
            "Validation Failed: 1: create operations only support internal versioning. use index instead;");
  auto unknown = es.call("POST", "/_bulk",
                         "{\"index\":{\"_index\":\"p\",\"_id\":\"b\",\"version\":3,\"version_type\":"
                         "\"newest\"}}\n{}\n",
                         "application/x-ndjson");
  EXPECT_EQ(unknown.reason(), "No version type match [newest]");
}

TEST(EsBulk, DefaultIndexFromThePathAndNoErrorsFlag) {
  TestClient es;
  auto r =
      es.call("POST", "/idx/_bulk?refresh=true",
              "{\"index\":{\"_id\":\"1\"}}\n{\"a\":1}\n{\"index\":{}}\n{\"a\":2}\n", "application/x-ndjson");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["errors"], false);
  EXPECT_EQ(r.body["items"][0]["index"]["_index"], "idx");
  EXPECT_EQ(r.body["items"][0]["index"]["forced_refresh"], true);
  EXPECT_EQ(r.body["items"][1]["index"]["result"], "created");
  EXPECT_EQ(es.call("POST", "/idx/_count").body["count"], 2) << "refresh=true made both searchable";
}

TEST(EsBulk, FramingAndActionLineErrorsRejectTheWholeRequest) {
  TestClient es;
  auto no_newline =
      es.call("POST", "/_bulk", "{\"index\":{\"_index\":\"i\"}}\n{\"a\":1}", "application/x-ndjson");
  EXPECT_EQ(no_newline.status, 400);
  EXPECT_EQ(no_newline.reason(), "The bulk request must be terminated by a newline [\\n]");
  auto bad_action =
      es.call("POST", "/_bulk", "{\"upsert\":{\"_index\":\"i\"}}\n{}\n", "application/x-ndjson");
  EXPECT_EQ(bad_action.status, 400);
  EXPECT_EQ(bad_action.reason(),
            "Malformed action/metadata line [1], expected field [create], [delete], [index] or [update] but "
            "found [upsert]");
  auto unknown_param = es.call("POST", "/_bulk", "{\"index\":{\"_index\":\"i\",\"if_seqno\":1}}\n{}\n",
                               "application/x-ndjson");
  EXPECT_EQ(unknown_param.reason(), "Action/metadata line [1] contains an unknown parameter [if_seqno]");
  auto malformed = es.call("POST", "/_bulk", "{\"index\":\n", "application/x-ndjson");
  EXPECT_EQ(malformed.status, 400);
  auto empty = es.call("POST", "/_bulk", "\n", "application/x-ndjson");
  EXPECT_EQ(empty.reason(), "Validation Failed: 1: no requests added;");
  auto half_cas = es.call("POST", "/_bulk", "{\"delete\":{\"_index\":\"i\",\"_id\":\"1\",\"if_seq_no\":1}}\n",
                          "application/x-ndjson");
  EXPECT_EQ(half_cas.reason(), "Validation Failed: 1: ifSeqNo is set, but primary term is [0];");
  EXPECT_EQ(es.call("HEAD", "/i").status, 404) << "nothing was executed";
}

// Elasticsearch's REST test bulk/10_basic.yml "empty action", and the other shapes an action
// line can take, in BulkRequestParser's words.
TEST(EsBulk, MalformedActionLinesAreNamedByTheTokenFound) {
  TestClient es;
  auto reason = [&](const std::string& body) {
    auto r = es.call("POST", "/_bulk", body, "application/x-ndjson");
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.error_type(), "illegal_argument_exception") << body;
    return r.reason();
  };
  EXPECT_EQ(reason("{\"index\": {\"_index\": \"test_index\", \"_id\": \"test_id\"}}\n"
                   "{\"f1\": \"v1\", \"f2\": 42}\n"
                   "{}\n"),
            "Malformed action/metadata line [3], expected FIELD_NAME but found [END_OBJECT]");
  EXPECT_EQ(reason("[]\n"),
            "Malformed action/metadata line [1], expected START_OBJECT but found [START_ARRAY]");
  EXPECT_EQ(
      reason("{\"index\":\"i\"}\n{}\n"),
      "Malformed action/metadata line [1], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]");
  EXPECT_EQ(reason("{\"index\":{},\"extra\":1}\n{}\n"),
            "Malformed action/metadata line [1], expected END_OBJECT but found [FIELD_NAME]");
  EXPECT_EQ(es.call("HEAD", "/test_index").status, 404) << "nothing was executed";
}

// bulk/10_basic.yml "Empty _id" and "Empty _id with op_type create": routing refuses an
// empty id for its own item; an absent id is generated.
TEST(EsBulk, AnEmptyIdFailsOnlyItsOwnItem) {
  TestClient es;
  const std::string body =
      "{\"index\":{\"_index\":\"test\",\"_id\":\"\"}}\n{\"f\":1}\n"
      "{\"index\":{\"_index\":\"test\",\"_id\":\"id\"}}\n{\"f\":2}\n"
      "{\"index\":{\"_index\":\"test\"}}\n{\"f\":3}\n"
      "{\"create\":{\"_index\":\"test\"}}\n{\"f\":4}\n"
      "{\"index\":{\"_index\":\"test\",\"op_type\":\"create\"}}\n{\"f\":5}\n"
      "{\"create\":{\"_index\":\"test\",\"_id\":\"\"}}\n{\"f\":6}\n";
  auto r = es.call("POST", "/_bulk?refresh=true", body, "application/x-ndjson");
  ASSERT_EQ(r.status, 200) << r.raw.body;
  EXPECT_EQ(r.body["errors"], true);
  const auto& items = r.body["items"];
  ASSERT_EQ(items.size(), 6u);
  for (const auto& [position, action] : {std::pair{0, "index"}, std::pair{5, "create"}}) {
    const auto& failed = items[position][action];
    EXPECT_EQ(failed["status"], 400) << position;
    EXPECT_EQ(failed["_index"], "test") << position;
    EXPECT_EQ(failed["_id"], "") << position;
    EXPECT_EQ(failed["error"], (json{{"type", "illegal_argument_exception"},
                                     {"reason", "if _id is specified it must not be empty"}}))
        << position;
  }
  EXPECT_EQ(items[1]["index"]["result"], "created");
  EXPECT_EQ(items[2]["index"]["result"], "created");
  EXPECT_EQ(items[3]["create"]["result"], "created");
  EXPECT_EQ(items[4]["create"]["result"], "created");
  EXPECT_EQ(items[1]["index"]["_seq_no"], 0) << "the refused item took no sequence number";
  EXPECT_EQ(es.call("GET", "/test/_count").body["count"], 4);
}

// UpdateRequest and DeleteRequest validate an empty id as a missing one: the whole request fails.
TEST(EsBulk, UpdatesAndDeletesNeedAnId) {
  TestClient es;
  auto del =
      es.call("POST", "/_bulk", "{\"delete\":{\"_index\":\"test\",\"_id\":\"\"}}\n", "application/x-ndjson");
  EXPECT_EQ(del.status, 400);
  EXPECT_EQ(del.error_type(), "action_request_validation_exception");
  EXPECT_EQ(del.reason(), "Validation Failed: 1: id is missing;");
  auto update =
      es.call("POST", "/_bulk", "{\"update\":{\"_index\":\"test\",\"_id\":\"\"}}\n{\"doc\":{\"a\":1}}\n",
              "application/x-ndjson");
  EXPECT_EQ(update.reason(), "Validation Failed: 1: id is missing;");
  EXPECT_EQ(es.call("HEAD", "/test").status, 404);
}

// Update lines are read by UpdateRequest's own parser, suggestions included (update/90_error.yml).
TEST(EsBulk, MisspelledUpdateFieldsRejectTheRequest) {
  TestClient es;
  auto r = es.call("POST", "/_bulk",
                   "{\"update\":{\"_index\":\"test\",\"_id\":\"1\"}}\n{\"dac\":{\"foo\":\"baz\"}}\n",
                   "application/x-ndjson");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error_type(), "x_content_parse_exception");
  EXPECT_EQ(r.reason(), "[1:2] [UpdateRequest] unknown field [dac] did you mean [doc]?");
}

TEST(EsBulk, DocumentLevelFailuresArePerItem) {
  TestClient es;
  es.call("PUT", "/strict",
          json{{"mappings", {{"dynamic", "strict"}, {"properties", {{"a", {{"type", "long"}}}}}}}});
  const std::string body =
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"1\"}}\n{\"a\":1}\n"
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"2\"}}\n{\"b\":1}\n"
      "{\"index\":{\"_index\":\"strict\",\"_id\":\"3\"}}\n{not json}\n"
      "{\"update\":{\"_index\":\"strict\",\"_id\":\"9\"}}\n{\"doc\":{\"a\":1}}\n"
      "{\"update\":{\"_index\":\"strict\",\"_id\":\"1\"}}\n{\"script\":\"ctx._source.a++\"}\n";
  auto r = es.call("POST", "/_bulk", body, "application/x-ndjson");
  ASSERT_EQ(r.status, 200) << r.raw.body;
  EXPECT_EQ(r.body["items"][0]["index"]["status"], 201);
  EXPECT_EQ(r.body["items"][1]["index"]["error"]["type"], "strict_dynamic_mapping_exception");
  EXPECT_EQ(r.body["items"][1]["index"]["status"], 400);
  EXPECT_EQ(r.body["items"][2]["index"]["error"]["type"], "document_parsing_exception");
  EXPECT_EQ(r.body["items"][3]["update"]["error"]["type"], "document_missing_exception");
  EXPECT_EQ(r.body["items"][3]["update"]["status"], 404);
  EXPECT_EQ(r.body["items"][4]["update"]["status"], 400);
}

}  // namespace
}  // namespace eslease::esemu
