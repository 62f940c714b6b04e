#include <gtest/gtest.h>

#include "http/server.h"

namespace eslease::http {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(ParseQuery, SplitsAndDecodesInOrder) {
  EXPECT_EQ(parse_query("a=1&b=x%2Fy&c=hello+world"),
            (Pairs{{"a", "1"}, {"b", "x/y"}, {"c", "hello world"}}));
}

TEST(ParseQuery, EmptyAndMissingValues) {
  EXPECT_TRUE(parse_query("").empty());
  EXPECT_EQ(parse_query("watch&x=&&y=2"), (Pairs{{"watch", ""}, {"x", ""}, {"y", "2"}}));
}

TEST(ParseQuery, KeepsRepeatedKeysAndDecodesKeys) {
  EXPECT_EQ(parse_query("k=1&k=2&a%20b=c"), (Pairs{{"k", "1"}, {"k", "2"}, {"a b", "c"}}));
}

TEST(ParseQuery, ValueMayContainEquals) {
  EXPECT_EQ(parse_query("labelSelector=app%3Dweb,tier=db"), (Pairs{{"labelSelector", "app=web,tier=db"}}));
}

TEST(ParseQuery, MalformedEscapesAreKeptRaw) {
  EXPECT_EQ(parse_query("a=%zz&b=100%"), (Pairs{{"a", "%zz"}, {"b", "100%"}}));
}

TEST(ParseListenAddress, HostAndPort) {
  auto parsed = parse_listen_address("127.0.0.1:8080");
  ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
  EXPECT_EQ(parsed->first, "127.0.0.1");
  EXPECT_EQ(parsed->second, 8080);
}

TEST(ParseListenAddress, PortZeroAndHostName) {
  auto parsed = parse_listen_address("localhost:0");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->first, "localhost");
  EXPECT_EQ(parsed->second, 0);
}

TEST(ParseListenAddress, BracketedIpv6) {
  auto parsed = parse_listen_address("[::1]:9443");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->first, "::1");
  EXPECT_EQ(parsed->second, 9443);
}

TEST(ParseListenAddress, EmptyHostMeansAllInterfaces) {
  auto parsed = parse_listen_address(":9090");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->first, "0.0.0.0");
  EXPECT_EQ(parsed->second, 9090);
}

TEST(ParseListenAddress, RejectsMalformed) {
  for (const char* bad :
       {"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:80x", "::1:80",
        "[::1]80", "[::1", "[]:80", "bad host:80", "127.0.0.1:123456"}) {
    auto parsed = parse_listen_address(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << bad;
  }
}

TEST(FindHeader, IsCaseInsensitive) {
  const Headers headers{{"Content-Type", "application/json"}, {"X-Opaque-Id", "abc"}};
  EXPECT_EQ(find_header(headers, "content-type"), "application/json");
  EXPECT_EQ(find_header(headers, "X-OPAQUE-ID"), "abc");
  EXPECT_FALSE(find_header(headers, "content-length").has_value());
}

}  // namespace
}  // namespace eslease::http
