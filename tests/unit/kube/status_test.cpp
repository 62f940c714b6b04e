#include "kube/status.h"

#include <gtest/gtest.h>

namespace eslease::kube {
namespace {

http::Response answer(int status, std::string body, http::Headers headers = {}) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

std::string status_body(int code, const std::string& reason, const std::string& message,
                        const std::string& details = "{}") {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" + message +
         R"(","reason":")" + reason + R"(","details":)" + details + R"(,"code":)" + std::to_string(code) +
         "}";
}

TEST(StatusTest, ParsesAllFields) {
  auto status = parse_status(status_body(
      422, "Invalid", "Lease.eslease.io a is invalid",
      R"({"name":"a","kind":"Lease","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.lockName"}]})"));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->status, "Failure");
  EXPECT_EQ(status->reason, "Invalid");
  EXPECT_EQ(status->code, 422);
  EXPECT_EQ(status->details_name, "a");
  EXPECT_EQ(status->details_kind, "Lease");
  ASSERT_EQ(status->causes.size(), 1u);
  EXPECT_EQ(status->causes[0].field, "spec.lockName");
}

TEST(StatusTest, NotAStatus) {
  EXPECT_FALSE(parse_status("").has_value());
  EXPECT_FALSE(parse_status("not json").has_value());
  EXPECT_FALSE(parse_status(R"({"kind":"Pod"})").has_value());
  EXPECT_FALSE(parse_status("[1,2]").has_value());
  EXPECT_FALSE(parse_status(R"({"kind":"Status","code":"x"})")->code);
}

struct Case {
  int http;
  std::string reason;
  ErrorCode expected;
};

TEST(StatusTest, MapsEveryErrorKind) {
  const Case cases[] = {
      {404, "NotFound", ErrorCode::kNotFound},
      {409, "AlreadyExists", ErrorCode::kAlreadyExists},
      {409, "Conflict", ErrorCode::kConflict},
      {410, "Expired", ErrorCode::kGone},
      {410, "Gone", ErrorCode::kGone},
      {422, "Invalid", ErrorCode::kInvalid},
      {429, "TooManyRequests", ErrorCode::kTooManyRequests},
      {401, "Unauthorized", ErrorCode::kUnauthorized},
      {403, "Forbidden", ErrorCode::kForbidden},
      {500, "InternalError", ErrorCode::kUnavailable},
      {503, "ServiceUnavailable", ErrorCode::kUnavailable},
      {504, "Timeout", ErrorCode::kTimeout},
      {400, "BadRequest", ErrorCode::kInvalidArgument},
  };
  for (const auto& c : cases) {
    Error e = error_from_response(answer(c.http, status_body(c.http, c.reason, "msg")));
    EXPECT_EQ(e.code, c.expected) << c.http << " " << c.reason;
    EXPECT_EQ(e.http_status, c.http);
    EXPECT_EQ(e.message, "msg");
  }
}

TEST(StatusTest, InvalidCarriesCauses) {
  Error e = error_from_response(answer(
      422,
      status_body(
          422, "Invalid", "invalid",
          R"({"causes":[{"reason":"FieldValueInvalid","message":"Unsupported value","field":"spec.priority"},{"message":"no field"}]})")));
  ASSERT_EQ(e.details.size(), 2u);
  EXPECT_EQ(e.details[0], "spec.priority: Unsupported value (FieldValueInvalid)");
  EXPECT_EQ(e.details[1], "no field");
}

TEST(StatusTest, RetryAfterFromHeaderThenDetails) {
  Error from_header = error_from_response(
      answer(429, status_body(429, "TooManyRequests", "slow down", R"({"retryAfterSeconds":7})"),
             {{"Retry-After", "3"}}));
  ASSERT_TRUE(from_header.retry_after.has_value());
  EXPECT_EQ(*from_header.retry_after, std::chrono::seconds(3));
  Error from_details = error_from_response(
      answer(429, status_body(429, "TooManyRequests", "slow down", R"({"retryAfterSeconds":7})")));
  EXPECT_EQ(*from_details.retry_after, std::chrono::seconds(7));
  Error bad_header = error_from_response(answer(429, "", {{"retry-after", "soon"}}));
  EXPECT_FALSE(bad_header.retry_after.has_value());
  EXPECT_EQ(bad_header.code, ErrorCode::kTooManyRequests);
}

TEST(StatusTest, NonStatusBodiesStillGetTypedErrors) {
  Error html = error_from_response(answer(502, "<html>Bad Gateway</html>"));
  EXPECT_EQ(html.code, ErrorCode::kUnavailable);
  EXPECT_NE(html.message.find("Bad Gateway"), std::string::npos);
  Error binary = error_from_response(answer(404, std::string("\x01\x02\xff", 3)));
  EXPECT_EQ(binary.code, ErrorCode::kNotFound);
  EXPECT_EQ(binary.message.find('\x01'), std::string::npos);
  Error huge = error_from_response(answer(500, std::string(100000, 'x')));
  EXPECT_LT(huge.message.size(), 300u);
}

TEST(StatusTest, WatchErrorEventStatus) {
  auto status =
      status_from_json(nlohmann::json::parse(status_body(410, "Expired", "too old resource version: 1 (5)")));
  ASSERT_TRUE(status);
  Error e = error_from_status(*status, 200);
  EXPECT_EQ(e.code, ErrorCode::kGone);
  EXPECT_EQ(e.http_status, 410);
}

}  // namespace
}  // namespace eslease::kube
