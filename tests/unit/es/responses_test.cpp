#include "es/responses.h"

#include <gtest/gtest.h>

namespace eslease::es {
namespace {

http::Response answer(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

TEST(Responses, CreatedWriteCarriesVersion) {
  auto r = parse_write(
      answer(201,
             R"j({"_index":"i","_id":"a","_version":1,"result":"created","_seq_no":7,"_primary_term":2})j"),
      "create");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, WriteStatus::kApplied);
  EXPECT_EQ(r->result, "created");
  EXPECT_EQ(r->version, (Version{7, 2}));
  EXPECT_EQ(r->doc_version, 1);
}

TEST(Responses, VersionConflictIsTypedOutcome) {
  auto r = parse_write(
      answer(
          409,
          R"j({"error":{"root_cause":[{"type":"version_conflict_engine_exception","reason":"[a]: version conflict, document already exists (current version [1])"}],"type":"version_conflict_engine_exception","reason":"[a]: version conflict, document already exists (current version [1])"},"status":409})j"),
      "create");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, WriteStatus::kConflict);
  EXPECT_NE(r->conflict_reason.find("document already exists"), std::string::npos);
}

TEST(Responses, DeleteOfMissingDocumentIsNotFound) {
  auto r = parse_write(
      answer(404,
             R"j({"_index":"i","_id":"a","_version":1,"result":"not_found","_seq_no":3,"_primary_term":1})j"),
      "delete");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, WriteStatus::kNotFound);
}

TEST(Responses, WriteToMissingIndexIsAnError) {
  auto r = parse_write(
      answer(404,
             R"j({"error":{"type":"index_not_found_exception","reason":"no such index [i]"},"status":404})j"),
      "index");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("no such index"), std::string::npos);
}

TEST(Responses, ErrorMessageHasTypeReasonAndRootCause) {
  Error e = error_from_response(
      answer(
          400,
          R"j({"error":{"root_cause":[{"type":"strict_dynamic_mapping_exception","reason":"mapping set to strict"}],"type":"mapper_parsing_exception","reason":"failed to parse"},"status":400})j"),
      "index");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_NE(e.message.find("mapper_parsing_exception: failed to parse"), std::string::npos);
  EXPECT_NE(e.message.find("root cause: strict_dynamic_mapping_exception: mapping set to strict"),
            std::string::npos);
}

TEST(Responses, UnauthorizedHasClearMessage) {
  Error e = error_from_response(
      answer(
          401,
          R"j({"error":{"type":"security_exception","reason":"unable to authenticate user [elastic]"},"status":401})j"),
      "get");
  EXPECT_EQ(e.code, ErrorCode::kUnauthorized);
  EXPECT_NE(e.message.find("rejected the credentials"), std::string::npos);
  EXPECT_NE(e.message.find("unable to authenticate"), std::string::npos);
}

TEST(Responses, StatusCodesMapToErrorCodes) {
  EXPECT_EQ(error_from_response(answer(403, "{}"), "x").code, ErrorCode::kForbidden);
  EXPECT_EQ(error_from_response(answer(429, "{}"), "x").code, ErrorCode::kTooManyRequests);
  EXPECT_EQ(error_from_response(answer(503, "{}"), "x").code, ErrorCode::kUnavailable);
  EXPECT_EQ(error_from_response(answer(302, ""), "x").code, ErrorCode::kProtocol);
}

TEST(Responses, GetFoundAndMissing) {
  auto found = parse_get(answer(
      200,
      R"j({"_index":"i","_id":"a","_version":2,"_seq_no":4,"_primary_term":1,"found":true,"_source":{"x":1}})j"));
  ASSERT_TRUE(found.ok());
  EXPECT_TRUE(found->found);
  EXPECT_EQ(found->source["x"], 1);
  EXPECT_EQ(found->version, (Version{4, 1}));

  auto missing = parse_get(answer(404, R"j({"_index":"i","_id":"a","found":false})j"));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->found);
  auto no_index = parse_get(answer(
      404, R"j({"error":{"type":"index_not_found_exception","reason":"no such index"},"status":404})j"));
  ASSERT_TRUE(no_index.ok());
  EXPECT_FALSE(no_index->found);
  // A 404 that is not Elasticsearch's (a wrong proxy path) must not read as "no lock".
  EXPECT_FALSE(parse_get(answer(404, "<html>not found</html>")).ok());
}

TEST(Responses, MalformedAndTruncatedBodiesAreProtocolErrors) {
  const std::vector<std::string> bodies{
      "",
      "{",
      "[1,2]",
      "null",
      R"j({"_seq_no":"7","_primary_term":1})j",
      R"j({"_seq_no":7})j",
      R"j({"_index":"i","_id":"a","_version":1,"result":"created","_seq_no":7,"_prim)j",
      "\xff\xfe"};
  for (const std::string& body : bodies) {
    auto w = parse_write(answer(201, body), "create");
    ASSERT_FALSE(w.ok()) << body;
    EXPECT_EQ(w.error().code, ErrorCode::kProtocol) << body;
    auto g = parse_get(answer(200, body));
    ASSERT_FALSE(g.ok()) << body;
    EXPECT_EQ(g.error().code, ErrorCode::kProtocol) << body;
    EXPECT_FALSE(parse_bulk(answer(200, body), 1).ok()) << body;
    EXPECT_FALSE(parse_search(answer(200, body)).ok()) << body;
  }
  EXPECT_FALSE(
      parse_get(answer(200, R"j({"found":true,"_source":"x","_seq_no":1,"_primary_term":1})j")).ok());
  // A conflict body that is not a version conflict is not taken for one.
  EXPECT_FALSE(parse_write(answer(409, R"j({"error":{"type":"other"}})j"), "create").ok());
}

TEST(Responses, BulkItemsAreTypedPerItem) {
  auto r = parse_bulk(answer(200, R"j({"took":3,"errors":true,"items":[
      {"index":{"_id":"a","_version":2,"result":"updated","_seq_no":9,"_primary_term":1,"status":200}},
      {"index":{"_id":"b","status":409,"error":{"type":"version_conflict_engine_exception","reason":"required seqNo [1]"}}},
      {"index":{"_id":"c","status":429,"error":{"type":"es_rejected_execution_exception","reason":"queue full"}}}]})j"),
                      3);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->items.size(), 3u);
  EXPECT_EQ(r->items[0].status, WriteStatus::kApplied);
  EXPECT_EQ(r->items[0].version, (Version{9, 1}));
  EXPECT_EQ(r->items[1].status, WriteStatus::kConflict);
  ASSERT_TRUE(r->items[2].error.has_value());
  EXPECT_EQ(r->items[2].error->code, ErrorCode::kTooManyRequests);
  EXPECT_NE(r->items[2].error->message.find("queue full"), std::string::npos);
  // One item per operation, or the answer cannot be matched to what was sent.
  EXPECT_FALSE(parse_bulk(answer(200, R"j({"items":[]})j"), 3).ok());
}

TEST(Responses, SearchHitsCarryVersions) {
  auto r = parse_search(answer(
      200,
      R"j({"hits":{"total":{"value":1},"hits":[{"_id":"a","_seq_no":3,"_primary_term":1,"_source":{"k":"v"}}]}})j"));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].id, "a");
  EXPECT_EQ((*r)[0].version, (Version{3, 1}));
}

}  // namespace
}  // namespace eslease::es
