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

TEST(FencingToken, IsPrimaryTermHighAndSeqNoLow) {
  EXPECT_EQ(*fencing_token_of(es::Version{15, 1}), 4294967311LL);
  EXPECT_EQ(*fencing_token_of(es::Version{0, 2}), 2LL << 32);
  EXPECT_LT(*fencing_token_of(es::Version{0xFFFFFFFFLL, 1}), *fencing_token_of(es::Version{0, 2}));
}

TEST(FencingToken, RefusesPairsThatWouldNotGrow) {
  EXPECT_FALSE(fencing_token_of(es::Version{1LL << 32, 1}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{1, 1LL << 31}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{-1, 1}).ok());
  EXPECT_FALSE(fencing_token_of(es::Version{1, 0}).ok());
}

TEST(FencingToken, ZeroFieldMeansTheVersionsOwnToken) {
  LockDocument doc = sample();
  doc.fencing_token = 0;
  EXPECT_EQ(make_state(doc, es::Version{15, 1})->token, 4294967311LL);
  // Once a renewal wrote the grant's token, later versions keep it.
  doc.fencing_token = 4294967311LL;
  EXPECT_EQ(make_state(doc, es::Version{99, 1})->token, 4294967311LL);
}

TEST(LockDocumentJson, RoundTripsEveryField) {
  const LockDocument doc = sample();
  const json j = to_json(doc);
  for (const char* field :
       {"lock", "lease", "leaseUID", "holder", "holderUID", "node", "priority", "acquiredAt", "renewedAt",
        "expiresAt", "ttlMillis", "fencingToken", "transitions", "writer"}) {
    EXPECT_TRUE(j.contains(field)) << field;
  }
  EXPECT_EQ(j.size(), 14u);
  EXPECT_EQ(j["acquiredAt"], "2026-11-21T15:00:00.123Z");
  auto back = parse_lock_document(j);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_TRUE(same_grant(*back, doc));
  EXPECT_EQ(back->expires_at, doc.expires_at);
  EXPECT_EQ(back->transitions, 3);
}

TEST(LockDocumentJson, MalformedDocumentsAreProtocolErrors) {
  const json good = to_json(sample());
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
  EXPECT_EQ(p.size(), 14u);
  EXPECT_EQ(p["holder"]["type"], "keyword");
  EXPECT_EQ(p["expiresAt"]["type"], "date");
  EXPECT_EQ(p["fencingToken"]["type"], "long");
  EXPECT_TRUE(check_mapping(def["mappings"]).ok());
}

TEST(LockIndex, IncompatibleMappingIsRefused) {
  json mappings = index_definition()["mappings"];
  mappings["properties"]["holder"]["type"] = "text";
  auto s = check_mapping(mappings);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("holder"), std::string::npos);
  mappings = index_definition()["mappings"];
  mappings["properties"].erase("fencingToken");
  EXPECT_FALSE(check_mapping(mappings).ok());
  EXPECT_FALSE(check_mapping(json::object()).ok());
}

}  // namespace
}  // namespace eslease::lock
