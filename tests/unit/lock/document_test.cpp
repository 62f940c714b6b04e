#include "lock/document.h"

#include <gtest/gtest.h>

#include "common/text.h"

namespace eslease::lock {
namespace {

using nlohmann::json;

LockDocument sample() {
  LockDocument doc;
  doc.lock = "batch/nightly-report";
  doc.lease = "batch/nightly-report-a";
  doc.lease_uid = "uid-1";
  doc.holder = "batch/report-7f9c";
  doc.acquired_at = to_millis(*parse_rfc3339("2026-11-21T15:00:00.123Z"));
  doc.renewed_at = doc.acquired_at;
  doc.expires_at = doc.acquired_at + std::chrono::seconds(30);
  doc.ttl_millis = 30000;
  doc.transitions = 3;
  doc.writer = "controller-0";
  return doc;
}

// The document as Elasticsearch receives it, read back as a JSON value.
json as_json(const LockDocument& doc) {
  return json::parse(source_of(doc).text);
}

TEST(FencingToken, IsPrimaryTermHighAndSeqNoLow) {
  EXPECT_EQ(*fencing_token_of(es::Version{15, 1}), 4294967311LL);
  EXPECT_EQ(*fencing_token_of(es::Version{0, 2}), 2LL << 32);
  EXPECT_LT(*fencing_token_of(es::Version{0xFFFFFFFFLL, 1}), *fencing_token_of(es::Version{0, 2}));
}

TEST(FencingToken, EveryTokenOfAnEpochIsBelowEveryTokenOfTheNext) {
  EXPECT_EQ(*fencing_token_of(es::Version{15, 1}, 2), (2LL << 48) | 4294967311LL);
  EXPECT_LT(*fencing_token_of(es::Version{0xFFFFFFFFLL, 0xFFFF}, 0), *fencing_token_of(es::Version{0, 1}, 1));
  EXPECT_EQ(epoch_of(*fencing_token_of(es::Version{7, 3}, kMaxEpoch)), kMaxEpoch);
  EXPECT_GT(*fencing_token_of(es::Version{0xFFFFFFFFLL, 0xFFFF}, kMaxEpoch), 0);  // never wraps negative
}

TEST(FencingToken, RefusesPairsThatWouldNotGrow) {
  EXPECT_FALSE(fencing_token_of(es::Version{1LL << 32, 1}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{1, 1LL << 16}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{-1, 1}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{1, 0}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{1, 1}, kMaxEpoch + 1).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{1, 1}, -1).ok());
}

TEST(FencingToken, ZeroFieldMeansTheVersionsOwnToken) {
  LockDocument doc = sample();
  doc.fencing_token = 0;
  EXPECT_EQ(make_state(doc, es::Version{15, 1})->token, 4294967311LL);
  // Once a renewal wrote the grant's token, later versions keep it.
  doc.fencing_token = 4294967311LL;
  EXPECT_EQ(make_state(doc, es::Version{99, 1})->token, 4294967311LL);
}

TEST(FencingToken, AGrantWrittenInAnEpochReadsTheSameWhateverTheReaderKnows) {
  LockDocument doc = sample();
  doc.fencing_token = epoch_base(3);  // the granting write of epoch 3
  EXPECT_EQ(make_state(doc, es::Version{15, 1})->token, (3LL << 48) | 4294967311LL);
  // Its first renewal writes that token; every later version shows it.
  doc.fencing_token = (3LL << 48) | 4294967311LL;
  EXPECT_EQ(make_state(doc, es::Version{40, 2})->token, (3LL << 48) | 4294967311LL);
}

TEST(LockDocumentJson, RoundTripsEveryField) {
  const LockDocument doc = sample();
  const json j = as_json(doc);
  for (const char* field :
       {"lock", "lease", "leaseUID", "holder", "holderUID", "node", "priority", "acquiredAt", "renewedAt",
        "expiresAt", "ttlMillis", "fencingToken", "transitions", "writer", "slot", "capacity", "access"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  EXPECT_EQ(j.size(), 17u) << "a grant of one document names no grant";
  EXPECT_EQ(j["acquiredAt"], "2026-11-21T15:00:00.123Z");
  auto back = parse_lock_document(j);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_TRUE(same_grant(*back, doc));
  EXPECT_EQ(back->expires_at, doc.expires_at);
  EXPECT_EQ(back->transitions, 3);
}

// The text written directly is the text a JSON value of the document prints, for a grant of
// one document and for one of several.
TEST(LockDocumentJson, TheTextWrittenIsWhatTheDocumentsJsonValuePrints) {
  LockDocument doc = sample();
  EXPECT_EQ(source_of(doc).text, as_json(doc).dump());
  doc.grant = "g-1";
  doc.grant_docs = {"batch/nightly-report#2", "batch/other"};
  doc.access = Access::kShared;
  EXPECT_EQ(source_of(doc).text, as_json(doc).dump());
}

TEST(LockDocumentJson, MalformedDocumentsAreProtocolErrors) {
  const json good = as_json(sample());
  for (const char* field : {"lock", "leaseUID", "holder", "acquiredAt", "ttlMillis", "fencingToken"}) {
    json missing = good;
    missing.erase(field);
    auto r = parse_lock_document(missing);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.error().code, ErrorCode::kProtocol);
    EXPECT_NE(r.error().message.find(field), std::string::npos);
  }
  json wrong = good;
  wrong["ttlMillis"] = "30000";
  EXPECT_FALSE(parse_lock_document(wrong).ok());
  wrong = good;
  wrong["renewedAt"] = "yesterday";
  EXPECT_FALSE(parse_lock_document(wrong).ok());
  wrong = good;
  wrong["ttlMillis"] = 0;
  EXPECT_FALSE(parse_lock_document(wrong).ok());
  EXPECT_FALSE(parse_lock_document(json::array()).ok());
}

TEST(LockIndex, DefinitionIsStrictOneShardWithDesignFields) {
  const json def = index_definition();
  EXPECT_EQ(def["settings"]["number_of_shards"], 1);
  EXPECT_EQ(def["mappings"]["dynamic"], "strict");
  const json& p = def["mappings"]["properties"];
  EXPECT_EQ(p.size(), 19u);
  EXPECT_EQ(p["holder"]["type"], "keyword");
  EXPECT_EQ(p["slot"]["type"], "long");
  EXPECT_EQ(p["grantDocs"]["type"], "keyword");
  EXPECT_EQ(p["expiresAt"]["type"], "date");
  EXPECT_EQ(p["fencingToken"]["type"], "long");
  EXPECT_EQ(check_mapping(def["mappings"]).fit, MappingFit::kFits);
}

TEST(LockIndex, AFieldMappedOtherwiseConflicts) {
  json mappings = index_definition()["mappings"];
  mappings["properties"]["holder"]["type"] = "text";
  auto check = check_mapping(mappings);
  EXPECT_EQ(check.fit, MappingFit::kConflicts);
  EXPECT_NE(check.problem.find("holder"), std::string::npos);
  // Even when other fields are missing too.
  mappings["properties"].erase("fencingToken");
  EXPECT_EQ(check_mapping(mappings).fit, MappingFit::kConflicts);
}

TEST(LockIndex, MissingFieldsCanBeAdded) {
  json mappings = index_definition()["mappings"];
  mappings["properties"].erase("fencingToken");
  auto check = check_mapping(mappings);
  EXPECT_EQ(check.fit, MappingFit::kLacksFields);
  EXPECT_NE(check.problem.find("fencingToken"), std::string::npos);
  EXPECT_EQ(check.missing, (json{{"fencingToken", {{"type", "long"}}}}));
  EXPECT_EQ(check_mapping(json::object()).missing.size(), 19u);  // an empty index
}

TEST(LockIndex, AnIndexMadeBeforeLockShapesGetsOnlyTheirFields) {
  json mappings = index_definition()["mappings"];
  for (const char* field : {"slot", "capacity", "access", "grant", "grantDocs"})
    mappings["properties"].erase(field);
  auto check = check_mapping(mappings);
  EXPECT_EQ(check.fit, MappingFit::kLacksFields);
  EXPECT_EQ(check.missing, (json{{"slot", {{"type", "long"}}},
                                 {"capacity", {{"type", "long"}}},
                                 {"access", {{"type", "keyword"}}},
                                 {"grant", {{"type", "keyword"}}},
                                 {"grantDocs", {{"type", "keyword"}}}}));
  EXPECT_TRUE(check.lacks_only_shape_fields);
  mappings["properties"].erase("holder");
  EXPECT_FALSE(check_mapping(mappings).lacks_only_shape_fields);
}

TEST(SlotDocuments, SlotZeroIsTheLocksOwnDocument) {
  EXPECT_EQ(slot_document_id("batch/db", 0), "batch/db");
  EXPECT_EQ(slot_document_id("batch/db", 7), "batch/db#7");
  LockDocument doc = sample();
  doc.slot = 2;
  EXPECT_EQ(document_id(doc), "batch/nightly-report#2");
}

TEST(SlotDocuments, ADocumentWrittenBeforeShapesIsSlotZeroOfCapacityOneExclusive) {
  json old = as_json(sample());
  for (const char* field : {"slot", "capacity", "access"}) old.erase(field);
  auto doc = parse_lock_document(old);
  ASSERT_TRUE(doc.ok()) << doc.error().describe();
  EXPECT_EQ(doc->slot, 0);
  EXPECT_EQ(doc->capacity, 1);
  EXPECT_EQ(doc->access, Access::kExclusive);
  EXPECT_TRUE(doc->grant.empty());
  EXPECT_TRUE(doc->grant_docs.empty());
}

TEST(SlotDocuments, ShapeAndGrantFieldsRoundTrip) {
  LockDocument doc = sample();
  doc.slot = 2;
  doc.capacity = 3;
  doc.access = Access::kShared;
  doc.grant = "g-1";
  doc.grant_docs = {"batch/nightly-report#2", "batch/other"};
  const json j = as_json(doc);
  EXPECT_EQ(j["access"], "Shared");
  EXPECT_EQ(j["grantDocs"], (json{"batch/nightly-report#2", "batch/other"}));
  auto back = parse_lock_document(j);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->slot, 2);
  EXPECT_EQ(back->capacity, 3);
  EXPECT_EQ(back->access, Access::kShared);
  EXPECT_EQ(back->grant, "g-1");
  EXPECT_EQ(back->grant_docs, doc.grant_docs);
  EXPECT_TRUE(same_grant(*back, doc));
  LockDocument other_slot = doc;
  other_slot.slot = 1;
  EXPECT_FALSE(same_grant(other_slot, doc)) << "two slots of one grant are two documents";
}

TEST(SlotDocuments, MalformedShapesAreProtocolErrors) {
  LockDocument doc = sample();
  doc.capacity = 3;
  doc.slot = 1;
  const json good = as_json(doc);
  const std::vector<std::pair<const char*, json>> bad{
      {"slot", 3},   {"slot", -1},       {"capacity", 0},        {"capacity", 1001}, {"access", "Read"},
      {"access", 1}, {"grantDocs", "x"}, {"grantDocs", json{1}}, {"grant", "g"},  // a grant id without its
                                                                                  // documents
  };
  for (const auto& [field, value] : bad) {
    json wrong = good;
    wrong[field] = value;
    auto r = parse_lock_document(wrong);
    ASSERT_FALSE(r.ok()) << field << " " << value.dump();
    EXPECT_EQ(r.error().code, ErrorCode::kProtocol);
  }
}

TEST(LockIndex, AMappingAWriteInferredIsUsableUnlessTheIndexIsStrict) {
  // As Elasticsearch's dynamic mapping maps a lock document written to a missing index.
  json dynamic = {
      {"properties",
       {{"lock", {{"type", "text"}, {"fields", {{"keyword", {{"type", "keyword"}, {"ignore_above", 256}}}}}}},
        {"acquiredAt", {{"type", "date"}}},
        {"fencingToken", {{"type", "long"}}}}}};
  auto check = check_mapping(dynamic);
  EXPECT_EQ(check.fit, MappingFit::kDynamic);
  EXPECT_FALSE(check.missing.contains("lock"));
  EXPECT_TRUE(check.missing.contains("holder"));
  dynamic["dynamic"] = "strict";
  EXPECT_EQ(check_mapping(dynamic).fit, MappingFit::kConflicts);
}

}  // namespace
}  // namespace eslease::lock
