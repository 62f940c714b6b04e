// The index's life beyond create and delete: the update-mapping API (merging new fields,
// refusing type changes, replacing `_meta`) and the test-only snapshot and restore, with the
// sequence-number, UUID and primary-term rules a restored index follows.
#include <gtest/gtest.h>

#include "emulators/es/test_client.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

json strict_locks() {
  return {{"mappings",
           {{"dynamic", "strict"},
            {"_meta", {{"owner", "team-a"}, {"eslease", {{"tokenEpoch", 0}}}}},
            {"properties", {{"lock", {{"type", "keyword"}}}, {"ttlMillis", {{"type", "long"}}}}}}}};
}

TEST(EsApiPutMapping, AddsFieldsAndReplacesMetaAsAWhole) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/locks", strict_locks()).status, 200);
  auto put = es.call("PUT", "/locks/_mapping",
                     json{{"_meta", {{"eslease", {{"tokenEpoch", 3}}}}},
                          {"properties", {{"writer", {{"type", "keyword"}}}}}});
  ASSERT_EQ(put.status, 200) << put.raw.body;
  EXPECT_EQ(put.body, (json{{"acknowledged", true}}));

  const json mappings = es.call("GET", "/locks").body["locks"]["mappings"];
  EXPECT_EQ(mappings["_meta"], (json{{"eslease", {{"tokenEpoch", 3}}}}));  // "owner" is gone
  EXPECT_EQ(mappings["dynamic"], "strict");
  EXPECT_EQ(mappings["properties"]["lock"]["type"], "keyword");
  EXPECT_EQ(mappings["properties"]["writer"]["type"], "keyword");
  // The new field is mapped: documents may now carry it under the strict mapping.
  EXPECT_EQ(es.call("PUT", "/locks/_doc/1", json{{"lock", "a"}, {"writer", "w"}}).status, 201);
}

TEST(EsApiPutMapping, AnUpdateWithoutMetaKeepsIt) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/locks", strict_locks()).status, 200);
  ASSERT_EQ(
      es.call("POST", "/locks/_mapping", json{{"properties", {{"node", {{"type", "keyword"}}}}}}).status,
      200);
  EXPECT_EQ(es.call("GET", "/locks/_mapping").body["locks"]["mappings"]["_meta"]["owner"], "team-a");
}

TEST(EsApiPutMapping, ATypeChangeIsRefusedAndNothingIsApplied) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/locks", strict_locks()).status, 200);
  auto changed =
      es.call("PUT", "/locks/_mapping",
              json{{"_meta", {{"x", 1}}},
                   {"properties", {{"node", {{"type", "keyword"}}}, {"lock", {{"type", "text"}}}}}});
  EXPECT_EQ(changed.status, 400);
  EXPECT_EQ(changed.error_type(), "illegal_argument_exception");
  EXPECT_EQ(changed.reason(), "mapper [lock] cannot be changed from type [keyword] to [text]");
  const json mappings = es.call("GET", "/locks").body["locks"]["mappings"];
  EXPECT_FALSE(mappings["properties"].contains("node"));
  EXPECT_EQ(mappings["_meta"]["owner"], "team-a");
}

TEST(EsApiPutMapping, AnAutoCreatedIndexCanBeGivenItsMapping) {
  TestClient es;
  // A conditional write to a missing index creates it (dynamic mapping), then fails.
  auto write = es.call("PUT", "/locks/_doc/a?if_seq_no=3&if_primary_term=1", json{{"lock", "a"}});
  EXPECT_EQ(write.status, 409);
  EXPECT_EQ(es.call("HEAD", "/locks").status, 200);
  auto put = es.call("PUT", "/locks/_mapping", strict_locks()["mappings"]);
  ASSERT_EQ(put.status, 200) << put.raw.body;
  EXPECT_EQ(es.call("GET", "/locks").body["locks"]["mappings"]["dynamic"], "strict");
}

TEST(EsApiPutMapping, MissingIndexAndEmptyBodyAreErrors) {
  TestClient es;
  auto missing = es.call("PUT", "/nope/_mapping", json{{"properties", {{"a", {{"type", "long"}}}}}});
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_type(), "index_not_found_exception");
  EXPECT_EQ(es.call("HEAD", "/nope").status, 404);  // not created by the attempt

  ASSERT_EQ(es.call("PUT", "/locks").status, 200);
  auto empty = es.call("PUT", "/locks/_mapping");
  EXPECT_EQ(empty.status, 400);
  EXPECT_EQ(empty.error_type(), "action_request_validation_exception");
  auto unknown = es.call("PUT", "/locks/_mapping", json{{"nonsense", 1}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.error_type(), "mapper_parsing_exception");
}

TEST(EsApiPutMapping, IsCountedAndFaultableUnderItsOwnOp) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/locks").status, 200);
  ASSERT_EQ(es.call("POST", "/_emulator/faults", json{{"op", "indices.put_mapping"}, {"status", 503}}).status,
            200);
  EXPECT_EQ(es.call("PUT", "/locks/_mapping", json{{"_meta", {{"a", 1}}}}).status, 503);
  EXPECT_EQ(es.call("PUT", "/locks/_mapping", json{{"_meta", {{"a", 1}}}}).status, 200);
  EXPECT_EQ(es.call("GET", "/_emulator/stats").body["requests"]["indices.put_mapping"], 2);
}

std::string uuid_of(TestClient& es, const std::string& index) {
  return es.call("GET", "/" + index).body[index]["settings"]["index"]["uuid"].get<std::string>();
}

TEST(EsEmulatorSnapshots, RestoreBringsBackOlderDocumentsAndSequenceNumbers) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/locks", strict_locks()).status, 200);
  ASSERT_EQ(es.call("PUT", "/locks/_doc/a", json{{"lock", "a"}}).body["_seq_no"], 0);
  ASSERT_EQ(es.call("POST", "/_emulator/snapshot?index=locks&snapshot=s1").status, 200);
  ASSERT_EQ(es.call("PUT", "/locks/_doc/b", json{{"lock", "b"}}).body["_seq_no"], 1);
  ASSERT_EQ(es.call("PUT", "/locks/_doc/a", json{{"lock", "a"}}).body["_seq_no"], 2);
  ASSERT_EQ(es.call("DELETE", "/locks").status, 200);

  auto restored = es.call("POST", "/_emulator/restore?snapshot=s1");
  ASSERT_EQ(restored.status, 200) << restored.raw.body;
  EXPECT_EQ(restored.body["index"], "locks");
  EXPECT_EQ(es.call("GET", "/locks/_doc/b").status, 404);
  auto a = es.call("GET", "/locks/_doc/a");
  EXPECT_EQ(a.body["_seq_no"], 0);
  // The next write continues from the snapshot's sequence numbers, not from the lost ones.
  EXPECT_EQ(es.call("PUT", "/locks/_doc/c", json{{"lock", "c"}}).body["_seq_no"], 1);
  // The mapping (and its _meta) is the snapshot's; search sees the restored documents.
  EXPECT_EQ(es.call("GET", "/locks").body["locks"]["mappings"]["_meta"]["eslease"]["tokenEpoch"], 0);
  EXPECT_EQ(es.call("POST", "/locks/_search", json{{"query", {{"ids", {{"values", {"a"}}}}}}})
                .body["hits"]["total"]["value"],
            1);
}

TEST(EsEmulatorSnapshots, RestoreIntoAMissingIndexGetsANewUuidAndOverAnIndexKeepsItsOwn) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/locks").status, 200);
  const std::string original = uuid_of(es, "locks");
  ASSERT_EQ(es.call("POST", "/_emulator/snapshot?index=locks&snapshot=s1").status, 200);
  ASSERT_EQ(es.call("DELETE", "/locks").status, 200);
  ASSERT_EQ(es.call("POST", "/_emulator/restore?snapshot=s1").status, 200);
  const std::string fresh = uuid_of(es, "locks");
  EXPECT_NE(fresh, original);

  // Over an existing index (a closed one, in Elasticsearch): UUID kept, primary term never lower.
  ASSERT_EQ(es.call("POST", "/_emulator/bump_primary_term?index=locks").body["primary_term"], 2);
  auto over = es.call("POST", "/_emulator/restore?snapshot=s1");
  ASSERT_EQ(over.status, 200);
  EXPECT_EQ(over.body["primary_term"], 2);
  EXPECT_EQ(uuid_of(es, "locks"), fresh);
  EXPECT_EQ(es.call("PUT", "/locks/_doc/x", json{{"a", 1}}).body["_primary_term"], 2);
}

TEST(EsEmulatorSnapshots, UnknownIndexOrSnapshotAndMissingParametersAreErrors) {
  TestClient es;
  EXPECT_EQ(es.call("POST", "/_emulator/snapshot?index=nope&snapshot=s").status, 404);
  EXPECT_EQ(es.call("POST", "/_emulator/snapshot?snapshot=s").status, 400);
  EXPECT_EQ(es.call("POST", "/_emulator/restore").status, 400);
  auto missing = es.call("POST", "/_emulator/restore?snapshot=never");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_type(), "snapshot_missing_exception");
}

}  // namespace
}  // namespace eslease::esemu
