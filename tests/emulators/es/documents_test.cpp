// Document APIs: _seq_no/_primary_term/_version rules, conflicts, updates, hostile ids.
#include <gtest/gtest.h>

#include "common/text.h"
#include "emulators/es/test_client.h"
#include "support/fake_clock.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;
using testing::TestClient;

TEST(EsDocuments, IndexGetDeleteFollowTheSequenceNumberRules) {
  TestClient es;
  auto created = es.call("PUT", "/idx/_doc/a", R"({"n":1})");
  ASSERT_EQ(created.status, 201);
  EXPECT_EQ(created.body, (json{{"_index", "idx"},
                                {"_id", "a"},
                                {"_version", 1},
                                {"result", "created"},
                                {"_shards", {{"total", 2}, {"successful", 1}, {"failed", 0}}},
                                {"_seq_no", 0},
                                {"_primary_term", 1}}));
  auto updated = es.call("PUT", "/idx/_doc/a", R"({"n":2})");
  EXPECT_EQ(updated.status, 200);
  EXPECT_EQ(updated.body["result"], "updated");
  EXPECT_EQ(updated.body["_version"], 2);
  EXPECT_EQ(updated.body["_seq_no"], 1);
  // The sequence number is per index (one shard), not per document.
  EXPECT_EQ(es.call("PUT", "/idx/_doc/b", R"({"n":1})").body["_seq_no"], 2);

  auto got = es.call("GET", "/idx/_doc/a");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body, (json{{"_index", "idx"},
                            {"_id", "a"},
                            {"_version", 2},
                            {"_seq_no", 1},
                            {"_primary_term", 1},
                            {"found", true},
                            {"_source", {{"n", 2}}}}));
  EXPECT_EQ(es.call("HEAD", "/idx/_doc/a").status, 200);

  auto deleted = es.call("DELETE", "/idx/_doc/a");
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(deleted.body["result"], "deleted");
  EXPECT_EQ(deleted.body["_version"], 3);
  EXPECT_EQ(deleted.body["_seq_no"], 3);

  auto missing = es.call("GET", "/idx/_doc/a");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, (json{{"_index", "idx"}, {"_id", "a"}, {"found", false}}));
  EXPECT_EQ(es.call("HEAD", "/idx/_doc/a").status, 404);

  // Deleting a missing document answers 404 not_found and still takes a sequence number.
  auto again = es.call("DELETE", "/idx/_doc/a");
  EXPECT_EQ(again.status, 404);
  EXPECT_EQ(again.body["result"], "not_found");
  EXPECT_EQ(again.body["_seq_no"], 4);
  EXPECT_EQ(again.body["_version"], 4);

  // Re-creating continues from the tombstone's version (index.gc_deletes keeps it 60 s).
  auto recreated = es.call("PUT", "/idx/_create/a", R"({"n":3})");
  EXPECT_EQ(recreated.status, 201);
  EXPECT_EQ(recreated.body["result"], "created");
  EXPECT_EQ(recreated.body["_version"], 5);
  EXPECT_EQ(recreated.body["_seq_no"], 5);
}

TEST(EsDocuments, TombstonesExpireAfterGcDeletes) {
  eslease::testing::FakeClock clock;
  TestClient es({}, clock);
  es.call("PUT", "/idx/_doc/a", R"({"n":1})");
  es.call("DELETE", "/idx/_doc/a");
  clock.advance(std::chrono::seconds(61));
  auto recreated = es.call("PUT", "/idx/_doc/a", R"({"n":1})");
  EXPECT_EQ(recreated.body["_version"], 1);
  EXPECT_EQ(recreated.body["_seq_no"], 2);
}

TEST(EsDocuments, DeleteInAMissingIndexDoesNotCreateIt) {
  TestClient es;
  auto r = es.call("DELETE", "/nope/_doc/1");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.error_type(), "index_not_found_exception");
  EXPECT_EQ(es.call("HEAD", "/nope").status, 404);
  auto get = es.call("GET", "/nope/_doc/1");
  EXPECT_EQ(get.status, 404);
  EXPECT_EQ(get.error_type(), "index_not_found_exception");
}

TEST(EsDocuments, CreateConflictsWithAnExistingDocument) {
  TestClient es;
  ASSERT_EQ(es.call("PUT", "/idx/_create/lock", R"({"holder":"a"})").status, 201);
  auto conflict = es.call("PUT", "/idx/_create/lock", R"({"holder":"b"})");
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.error_type(), "version_conflict_engine_exception");
  EXPECT_EQ(conflict.reason(), "[lock]: version conflict, document already exists (current version [1])");
  EXPECT_EQ(conflict.body["error"]["root_cause"][0]["type"], "version_conflict_engine_exception");
  EXPECT_EQ(conflict.body["error"]["shard"], "0");
  EXPECT_EQ(conflict.body["error"]["index"], "idx");
  EXPECT_EQ(conflict.body["status"], 409);
  auto op_type = es.call("PUT", "/idx/_doc/lock?op_type=create", R"({"holder":"b"})");
  EXPECT_EQ(op_type.status, 409);
  EXPECT_EQ(es.call("GET", "/idx/_doc/lock").body["_source"]["holder"], "a");
  // A failed write takes no sequence number.
  EXPECT_EQ(es.call("PUT", "/idx/_doc/other", R"({})").body["_seq_no"], 1);
}

TEST(EsDocuments, ConditionalWritesCheckSeqNoAndPrimaryTerm) {
  TestClient es;
  es.call("PUT", "/idx/_doc/lock", R"({"v":1})");  // seq 0
  es.call("PUT", "/idx/_doc/lock", R"({"v":2})");  // seq 1
  auto stale = es.call("PUT", "/idx/_doc/lock?if_seq_no=0&if_primary_term=1", R"({"v":3})");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(
      stale.reason(),
      "[lock]: version conflict, required seqNo [0], primary term [1]. current document has seqNo [1] and "
      "primary term [1]");
  auto fresh = es.call("PUT", "/idx/_doc/lock?if_seq_no=1&if_primary_term=1", R"({"v":3})");
  EXPECT_EQ(fresh.status, 200);
  EXPECT_EQ(fresh.body["_seq_no"], 2);

  auto wrong_term = es.call("DELETE", "/idx/_doc/lock?if_seq_no=2&if_primary_term=2");
  EXPECT_EQ(wrong_term.status, 409);
  EXPECT_EQ(
      wrong_term.reason(),
      "[lock]: version conflict, required seqNo [2], primary term [2]. current document has seqNo [2] and "
      "primary term [1]");
  EXPECT_EQ(es.call("DELETE", "/idx/_doc/lock?if_seq_no=2&if_primary_term=1").status, 200);
  auto after_delete = es.call("PUT", "/idx/_doc/lock?if_seq_no=3&if_primary_term=1", R"({"v":4})");
  EXPECT_EQ(after_delete.status, 409);
  EXPECT_EQ(after_delete.reason(),
            "[lock]: version conflict, required seqNo [3], primary term [1]. but no document was found");
}

TEST(EsDocuments, OnlyOneOfTheConditionalParametersIsAValidationError) {
  TestClient es;
  auto seq_only = es.call("PUT", "/idx/_doc/a?if_seq_no=1", R"({})");
  EXPECT_EQ(seq_only.status, 400);
  EXPECT_EQ(seq_only.error_type(), "action_request_validation_exception");
  EXPECT_EQ(seq_only.reason(), "Validation Failed: 1: ifSeqNo is set, but primary term is [0];");
  auto term_only = es.call("DELETE", "/idx/_doc/a?if_primary_term=3");
  EXPECT_EQ(term_only.status, 400);
  EXPECT_EQ(term_only.reason(), "Validation Failed: 1: ifSeqNo is unassigned, but primary term is [3];");
  auto create_cas = es.call("PUT", "/idx/_create/a?if_seq_no=1&if_primary_term=1", R"({})");
  EXPECT_EQ(create_cas.reason(),
            "Validation Failed: 1: create operations do not support compare and set. use index instead;");
  auto not_a_number = es.call("PUT", "/idx/_doc/a?if_seq_no=x&if_primary_term=1", R"({})");
  EXPECT_EQ(not_a_number.status, 400);
  EXPECT_EQ(not_a_number.reason(), "Failed to parse long parameter [if_seq_no] with value [x]");
}

// Fencing with external versions (docs/concepts.md): the writer's token is the version, and a
// smaller one than the stored version is refused.
TEST(EsDocuments, ExternalVersionsAreTheWritersOwn) {
  TestClient es;
  auto first = es.call("PUT", "/p/_doc/job?version=4294967311&version_type=external_gte", R"({"by":"a"})");
  ASSERT_EQ(first.status, 201) << first.raw.body;
  EXPECT_EQ(first.body["result"], "created");
  EXPECT_EQ(first.body["_version"], 4294967311LL);
  EXPECT_EQ(first.body["_seq_no"], 0);
  // external_gte takes an equal version again (a retried write); external does not.
  auto same = es.call("PUT", "/p/_doc/job?version=4294967311&version_type=external_gte", R"({"by":"a2"})");
  EXPECT_EQ(same.status, 200);
  EXPECT_EQ(same.body["result"], "updated");
  EXPECT_EQ(same.body["_seq_no"], 1);
  auto equal_gt = es.call("PUT", "/p/_doc/job?version=4294967311&version_type=external", R"({"by":"x"})");
  EXPECT_EQ(equal_gt.status, 409);
  EXPECT_EQ(equal_gt.error_type(), "version_conflict_engine_exception");
  EXPECT_EQ(equal_gt.reason(),
            "[job]: version conflict, current version [4294967311] is higher or equal to the one provided "
            "[4294967311]");
  auto stale = es.call("PUT", "/p/_doc/job?version=4294967300&version_type=external_gte", R"({"by":"old"})");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(
      stale.reason(),
      "[job]: version conflict, current version [4294967311] is higher than the one provided [4294967300]");
  auto newer = es.call("PUT", "/p/_doc/job?version=8589934593&version_type=external", R"({"by":"b"})");
  EXPECT_EQ(newer.status, 200);
  EXPECT_EQ(newer.body["_version"], 8589934593LL);
  EXPECT_EQ(newer.body["_seq_no"], 2) << "a refused write takes no sequence number";
  auto got = es.call("GET", "/p/_doc/job");
  EXPECT_EQ(got.body["_version"], 8589934593LL);
  EXPECT_EQ(got.body["_source"]["by"], "b");
}

TEST(EsDocuments, ExternallyVersionedDeletesLeaveTheirVersionUntilGcDeletes) {
  eslease::testing::FakeClock clock;
  TestClient es({}, clock);
  es.call("PUT", "/p/_doc/job?version=10&version_type=external", R"({})");
  EXPECT_EQ(es.call("DELETE", "/p/_doc/job?version=9&version_type=external_gte").status, 409);
  auto deleted = es.call("DELETE", "/p/_doc/job?version=12&version_type=external");
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(deleted.body["_version"], 12);
  // The tombstone keeps version 12: a smaller token is still refused...
  auto late = es.call("PUT", "/p/_doc/job?version=11&version_type=external_gte", R"({})");
  EXPECT_EQ(late.status, 409);
  EXPECT_EQ(late.reason(),
            "[job]: version conflict, current version [12] is higher than the one provided [11]");
  // ...until index.gc_deletes (60 s) has passed: then the document and its version are forgotten.
  clock.advance(std::chrono::seconds(61));
  auto forgotten = es.call("PUT", "/p/_doc/job?version=11&version_type=external_gte", R"({})");
  EXPECT_EQ(forgotten.status, 201);
  EXPECT_EQ(forgotten.body["_version"], 11);
  // A delete of a missing document with an external version still records that version.
  EXPECT_EQ(es.call("DELETE", "/p/_doc/other?version=7&version_type=external").status, 404);
  EXPECT_EQ(es.call("PUT", "/p/_doc/other?version=6&version_type=external", R"({})").status, 409);
}

TEST(EsDocuments, VersioningValidationSpeaksAsElasticsearch) {
  TestClient es;
  auto internal = es.call("PUT", "/p/_doc/a?version=3", R"({})");
  EXPECT_EQ(internal.status, 400);
  EXPECT_EQ(internal.error_type(), "action_request_validation_exception");
  EXPECT_EQ(
      internal.reason(),
      "Validation Failed: 1: internal versioning can not be used for optimistic concurrency control. Please "
      "use `if_seq_no` and `if_primary_term` instead;");
  EXPECT_EQ(es.call("PUT", "/p/_doc/a?version_type=external", R"({})").reason(),
            "Validation Failed: 1: illegal version value [-3] for version type [EXTERNAL];");
  EXPECT_EQ(es.call("PUT", "/p/_doc/a?version=-1&version_type=external_gte", R"({})").reason(),
            "Validation Failed: 1: illegal version value [-1] for version type [EXTERNAL_GTE];");
  EXPECT_EQ(es.call("PUT", "/p/_create/a?version=5&version_type=external", R"({})").reason(),
            "Validation Failed: 1: create operations only support internal versioning. use index instead;");
  EXPECT_EQ(es.call("PUT", "/p/_create/a?version=5", R"({})").reason(),
            "Validation Failed: 1: create operations do not support explicit versions. use index instead;");
  EXPECT_EQ(es.call("POST", "/p/_doc?op_type=index&version=5&version_type=external", R"({})").reason(),
            "Validation Failed: 1: an id must be provided if version type or value are set;");
  EXPECT_EQ(es.call("PUT", "/p/_doc/a?version=5&version_type=external&if_seq_no=0&if_primary_term=1", R"({})")
                .reason(),
            "Validation Failed: 1: compare and write operations can not use versioning;");
  auto unknown = es.call("PUT", "/p/_doc/a?version=5&version_type=force", R"({})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.error_type(), "illegal_argument_exception");
  EXPECT_EQ(unknown.reason(), "No version type match [force]");
  EXPECT_EQ(es.call("PUT", "/p/_doc/a?version=x&version_type=external", R"({})").reason(),
            "Failed to parse long parameter [version] with value [x]");
  EXPECT_EQ(es.call("GET", "/p/_doc/a").status, 404) << "nothing refused was written";
}

TEST(EsDocuments, PrimaryTermBumpIsCarriedByLaterWrites) {
  TestClient es;
  es.call("PUT", "/idx/_doc/a", R"({})");
  auto bumped = es.call("POST", "/_emulator/bump_primary_term?index=idx");
  ASSERT_EQ(bumped.status, 200);
  EXPECT_EQ(bumped.body["primary_term"], 2);
  auto old_term = es.call("PUT", "/idx/_doc/a?if_seq_no=0&if_primary_term=2", R"({"x":1})");
  EXPECT_EQ(old_term.status, 409) << "the stored document still has primary term 1";
  auto write = es.call("PUT", "/idx/_doc/a?if_seq_no=0&if_primary_term=1", R"({"x":1})");
  EXPECT_EQ(write.status, 200);
  EXPECT_EQ(write.body["_primary_term"], 2);
  EXPECT_EQ(write.body["_seq_no"], 1);
  EXPECT_EQ(es.call("POST", "/_emulator/bump_primary_term?index=none").status, 404);
}

TEST(EsDocuments, AutoGeneratedIdsAreCreates) {
  TestClient es;
  auto r = es.call("POST", "/idx/_doc", R"({"a":1})");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body["result"], "created");
  std::string id = r.body["_id"];
  EXPECT_EQ(id.size(), 20u);
  EXPECT_EQ(es.call("GET", "/idx/_doc/" + id).body["_source"]["a"], 1);
}

TEST(EsDocuments, HostileIdsStayOneDocument) {
  TestClient es;
  for (const std::string id : {"../_cluster/settings", "a/b?x=y#z", "ns/lock name", "%2F", "é/ü"}) {
    const std::string path = "/idx/_doc/" + percent_encode(id);
    auto put = es.call("PUT", path, R"({"v":1})");
    ASSERT_EQ(put.status, 201) << id;
    EXPECT_EQ(put.body["_id"], id);
    auto got = es.call("GET", path);
    EXPECT_EQ(got.body["_id"], id);
    EXPECT_EQ(got.body["found"], true);
  }
  es.call("POST", "/idx/_refresh");
  EXPECT_EQ(es.call("POST", "/idx/_count").body["count"], 5) << "each id is one document of idx";
  EXPECT_EQ(es.call("POST", "/_count").body["count"], 5) << "no other index was written";
}

TEST(EsDocuments, IdsLongerThan512BytesAreRejected) {
  TestClient es;
  std::string ok(512, 'a');
  EXPECT_EQ(es.call("PUT", "/idx/_doc/" + ok, R"({})").status, 201);
  std::string long_id(10 * 1024, 'b');
  auto r = es.call("PUT", "/idx/_doc/" + long_id, R"({})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.error_type(), "action_request_validation_exception");
  EXPECT_EQ(r.reason(), "Validation Failed: 1: id [" + long_id +
                            "] is too long, must be no longer than 512 bytes but was: 10240;");
  EXPECT_EQ(es.call("DELETE", "/idx/_doc/" + long_id).status, 400);
}

TEST(EsDocuments, StrictMappingRejectsUnknownFieldsAndWrongTypes) {
  TestClient es;
  es.call("PUT", "/locks",
          json{{"mappings",
                {{"dynamic", "strict"},
                 {"properties",
                  {{"holder", {{"type", "keyword"}}},
                   {"ttlMillis", {{"type", "long"}}},
                   {"meta", {{"properties", {{"node", {{"type", "keyword"}}}}}}}}}}}});
  auto unknown = es.call("PUT", "/locks/_doc/1", R"({"holder":"a","extra":1})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_EQ(unknown.error_type(), "strict_dynamic_mapping_exception");
  EXPECT_EQ(unknown.reason(),
            "[1:23] mapping set to strict, dynamic introduction of [extra] within [_doc] is not allowed");
  auto nested = es.call("PUT", "/locks/_doc/1", R"({"meta":{"zone":"x"}})");
  EXPECT_EQ(nested.error_type(), "strict_dynamic_mapping_exception");
  EXPECT_NE(nested.reason().find("within [meta]"), std::string::npos);
  auto wrong = es.call("PUT", "/locks/_doc/1", R"({"ttlMillis":"soon"})");
  EXPECT_EQ(wrong.status, 400);
  EXPECT_EQ(wrong.error_type(), "document_parsing_exception");
  EXPECT_NE(wrong.reason().find("failed to parse field [ttlMillis] of type [long] in document with id '1'"),
            std::string::npos);
  auto metadata = es.call("PUT", "/locks/_doc/1", R"({"_id":"x"})");
  EXPECT_EQ(metadata.status, 400);
  EXPECT_EQ(
      es.call("PUT", "/locks/_doc/1", R"({"holder":"a","ttlMillis":"30000","meta":{"node":"n"}})").status,
      201);
  EXPECT_EQ(es.call("PUT", "/locks/_doc/2", R"({"holder":"a"})").body["_seq_no"], 1);
}

TEST(EsDocuments, DynamicMappingInfersTypes) {
  TestClient es;
  es.call("PUT", "/auto/_doc/1",
          R"({"name":"x","n":1,"f":1.5,"b":true,"at":"2026-01-02T03:04:05Z","o":{"k":"v"}})");
  auto m = es.call("GET", "/auto/_mapping").body["auto"]["mappings"]["properties"];
  EXPECT_EQ(m["name"]["type"], "text");
  EXPECT_EQ(m["name"]["fields"]["keyword"]["type"], "keyword");
  EXPECT_EQ(m["n"]["type"], "long");
  EXPECT_EQ(m["f"]["type"], "float");
  EXPECT_EQ(m["b"]["type"], "boolean");
  EXPECT_EQ(m["at"]["type"], "date");
  EXPECT_EQ(m["o"]["properties"]["k"]["type"], "text");
  auto wrong = es.call("PUT", "/auto/_doc/2", R"({"n":"abc"})");
  EXPECT_EQ(wrong.status, 400);
}

TEST(EsDocuments, UpdateMergesDetectsNoopsAndUpserts) {
  TestClient es;
  es.call("PUT", "/idx/_doc/1", R"({"a":1,"o":{"x":1,"y":2}})");
  auto merged = es.call("POST", "/idx/_update/1", R"({"doc":{"b":2,"o":{"y":3}}})");
  ASSERT_EQ(merged.status, 200);
  EXPECT_EQ(merged.body["result"], "updated");
  EXPECT_EQ(merged.body["_version"], 2);
  EXPECT_EQ(merged.body["_seq_no"], 1);
  EXPECT_EQ(es.call("GET", "/idx/_doc/1").body["_source"],
            (json{{"a", 1}, {"o", {{"x", 1}, {"y", 3}}}, {"b", 2}}));

  auto noop = es.call("POST", "/idx/_update/1", R"({"doc":{"b":2}})");
  EXPECT_EQ(noop.status, 200);
  EXPECT_EQ(noop.body["result"], "noop");
  EXPECT_EQ(noop.body["_seq_no"], 1);
  EXPECT_EQ(noop.body["_version"], 2);
  EXPECT_EQ(noop.body["_shards"], (json{{"total", 0}, {"successful", 0}, {"failed", 0}}));
  auto forced = es.call("POST", "/idx/_update/1", R"({"doc":{"b":2},"detect_noop":false})");
  EXPECT_EQ(forced.body["result"], "updated");
  EXPECT_EQ(forced.body["_seq_no"], 2);

  auto missing = es.call("POST", "/idx/_update/none", R"({"doc":{"a":1}})");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_type(), "document_missing_exception");
  EXPECT_EQ(missing.reason(), "[none]: document missing");
  auto upsert = es.call("POST", "/idx/_update/new", R"({"doc":{"a":1},"upsert":{"a":0}})");
  EXPECT_EQ(upsert.status, 201);
  EXPECT_EQ(upsert.body["result"], "created");
  EXPECT_EQ(es.call("GET", "/idx/_doc/new").body["_source"]["a"], 0);
  auto doc_as_upsert = es.call("POST", "/idx/_update/new2", R"({"doc":{"a":5},"doc_as_upsert":true})");
  EXPECT_EQ(doc_as_upsert.status, 201);
  EXPECT_EQ(es.call("GET", "/idx/_doc/new2").body["_source"]["a"], 5);
}

TEST(EsDocuments, UpdateConditionsAndRefusals) {
  TestClient es;
  es.call("PUT", "/idx/_doc/1", R"({"a":1})");
  auto stale = es.call("POST", "/idx/_update/1?if_seq_no=5&if_primary_term=1", R"({"doc":{"a":2}})");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.error_type(), "version_conflict_engine_exception");
  EXPECT_EQ(es.call("POST", "/idx/_update/1?if_seq_no=0&if_primary_term=1", R"({"doc":{"a":2}})").status,
            200);
  EXPECT_EQ(es.call("POST", "/idx/_update/1?retry_on_conflict=3", R"({"doc":{"a":3}})").status, 200);
  auto retried_cas = es.call("POST", "/idx/_update/1?retry_on_conflict=2&if_seq_no=1&if_primary_term=1",
                             R"({"doc":{"a":2}})");
  EXPECT_EQ(retried_cas.reason(), "Validation Failed: 1: compare and write operations can not be retried;");
  auto script = es.call("POST", "/idx/_update/1", R"({"script":{"source":"ctx._source.a++"}})");
  EXPECT_EQ(script.status, 400);
  EXPECT_NE(script.reason().find("does not support scripts"), std::string::npos);
  auto nothing = es.call("POST", "/idx/_update/1", R"({})");
  EXPECT_EQ(nothing.reason(), "Validation Failed: 1: script or doc is missing;");
  auto unknown = es.call("POST", "/idx/_update/1", R"({"dock":{}})");
  EXPECT_EQ(unknown.status, 400);
}

// update/90_error.yml: UpdateRequest's parser names the closest fields it knows, as
// Elasticsearch's SuggestingErrorOnUnknown ranks them, at the position of the unknown key.
TEST(EsDocuments, MisspelledUpdateFieldsSuggestTheClosestKnownOnes) {
  TestClient es;
  auto dac = es.call("POST", "/test/_update/1", R"({"dac":{"foo":"baz"},"upsert":{"foo":"bar"}})");
  EXPECT_EQ(dac.status, 400);
  EXPECT_EQ(dac.error_type(), "x_content_parse_exception");
  EXPECT_EQ(dac.reason(), "[1:2] [UpdateRequest] unknown field [dac] did you mean [doc]?");
  EXPECT_EQ(dac.body["error"]["root_cause"][0]["reason"], dac.reason());
  auto two = es.call("POST", "/test/_update/1", "{\n  \"doc\": {\"a\": 1},\n  \"doc_upsert\": true\n}");
  EXPECT_EQ(two.reason(),
            "[3:3] [UpdateRequest] unknown field [doc_upsert] did you mean any of [doc_as_upsert, upsert]?");
  auto none = es.call("POST", "/test/_update/1", R"({"zzz":1})");
  EXPECT_EQ(none.reason(), "[1:2] [UpdateRequest] unknown field [zzz]");
  auto wrong_type = es.call("POST", "/test/_update/1", R"({"doc": 5})");
  EXPECT_EQ(wrong_type.reason(), "[1:9] [UpdateRequest] failed to parse field [doc]");
  auto not_object = es.call("POST", "/test/_update/1", R"([])");
  EXPECT_EQ(not_object.reason(), "[1:1] [UpdateRequest] Expected START_OBJECT but was: START_ARRAY");
  EXPECT_EQ(es.call("HEAD", "/test").status, 404) << "no refused update created the index";
}

// if_seq_no and if_primary_term are fields of the update body too.
TEST(EsDocuments, UpdateBodiesMayCarryTheirCondition) {
  TestClient es;
  es.call("PUT", "/idx/_doc/1", R"({"a":1})");
  auto stale = es.call("POST", "/idx/_update/1", R"({"doc":{"a":2},"if_seq_no":5,"if_primary_term":1})");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.error_type(), "version_conflict_engine_exception");
  auto half = es.call("POST", "/idx/_update/1", R"({"doc":{"a":2},"if_seq_no":0})");
  EXPECT_EQ(half.reason(), "Validation Failed: 1: ifSeqNo is set, but primary term is [0];");
  auto current = es.call("POST", "/idx/_update/1", R"({"doc":{"a":2},"if_seq_no":0,"if_primary_term":1})");
  EXPECT_EQ(current.status, 200);
  EXPECT_EQ(current.body["_seq_no"], 1);
}

TEST(EsDocuments, SourceFilteringAndRealtimeFlag) {
  eslease::testing::FakeClock clock;
  TestClient es({}, clock);  // no scheduled refresh while it stands still
  es.call("PUT", "/idx/_doc/1", R"({"a":1,"b":{"c":2,"d":3}})");
  EXPECT_FALSE(es.call("GET", "/idx/_doc/1?_source=false").body.contains("_source"));
  EXPECT_EQ(es.call("GET", "/idx/_doc/1?_source_includes=b.c").body["_source"], (json{{"b", {{"c", 2}}}}));
  EXPECT_EQ(es.call("GET", "/idx/_doc/1?_source_excludes=b").body["_source"], (json{{"a", 1}}));
  EXPECT_EQ(es.call("GET", "/idx/_source/1").body, (json{{"a", 1}, {"b", {{"c", 2}, {"d", 3}}}}));
  EXPECT_EQ(es.call("GET", "/idx/_doc/1?realtime=false").status, 404) << "not refreshed yet";
  EXPECT_EQ(es.call("GET", "/idx/_doc/1?realtime=false&refresh=true").status, 200);
}

TEST(EsDocuments, MgetReturnsEachDocument) {
  TestClient es;
  es.call("PUT", "/idx/_doc/1", R"({"a":1})");
  auto r = es.call(
      "POST", "/_mget",
      R"({"docs":[{"_index":"idx","_id":"1"},{"_index":"idx","_id":"2"},{"_index":"none","_id":"1"}]})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["docs"][0]["found"], true);
  EXPECT_EQ(r.body["docs"][1]["found"], false);
  EXPECT_EQ(r.body["docs"][2]["error"]["type"], "index_not_found_exception");
  EXPECT_EQ(es.call("POST", "/idx/_mget", R"({"ids":["1"]})").body["docs"][0]["_source"]["a"], 1);
}

}  // namespace
}  // namespace eslease::esemu
