#include "http/target.h"

#include <gtest/gtest.h>

namespace eslease::http {
namespace {

TEST(ParseTarget, TakesAnHttpUrlApart) {
  auto target = parse_target("http://127.0.0.1:9200/locks/_doc/a%2Fb?if_seq_no=3&if_primary_term=1");
  ASSERT_TRUE(target.ok()) << target.error().describe();
  EXPECT_FALSE(target->https);
  EXPECT_EQ(target->host, "127.0.0.1");
  EXPECT_EQ(target->port, "9200");
  EXPECT_EQ(target->authority, "http://127.0.0.1:9200");
  EXPECT_EQ(target->host_header, "127.0.0.1:9200");
  EXPECT_EQ(target->resource, "/locks/_doc/a%2Fb?if_seq_no=3&if_primary_term=1");
  EXPECT_EQ(target->display, "http://127.0.0.1:9200/locks/_doc/a%2Fb");
}

TEST(ParseTarget, DefaultPortsAndPaths) {
  auto https = parse_target("https://kubernetes.default.svc");
  ASSERT_TRUE(https.ok()) << https.error().describe();
  EXPECT_TRUE(https->https);
  EXPECT_EQ(https->port, "443");
  EXPECT_EQ(https->host_header, "kubernetes.default.svc");
  EXPECT_EQ(https->resource, "/");
  auto query_only = parse_target("HTTP://es?pretty");
  ASSERT_TRUE(query_only.ok()) << query_only.error().describe();
  EXPECT_EQ(query_only->port, "80");
  EXPECT_EQ(query_only->resource, "/?pretty");
  EXPECT_EQ(query_only->display, "http://es:80/");
}

TEST(ParseTarget, Ipv6AddressesAreBracketedOnlyWhereTheWireNeedsIt) {
  auto target = parse_target("https://[::1]:6443/api");
  ASSERT_TRUE(target.ok()) << target.error().describe();
  EXPECT_EQ(target->host, "::1");
  EXPECT_EQ(target->authority, "https://[::1]:6443");
  EXPECT_EQ(target->host_header, "[::1]:6443");
}

TEST(ParseTarget, RefusesWhatCannotBeSentSafely) {
  for (const char* url : {"not a url", "127.0.0.1:9200", "ftp://host/x", "http:///nohost", "http://:80/",
                          "http://host:0/", "http://host:99999/", "http://host:80x/", "http://[::1/x",
                          "http://host/a b", "http://host/a\r\nX-Injected: 1", "http://user:secret@host/"}) {
    auto target = parse_target(url);
    ASSERT_FALSE(target.ok()) << url;
    EXPECT_EQ(target.error().code, ErrorCode::kInvalidArgument) << url;
    EXPECT_EQ(target.error().message.find("secret"), std::string::npos) << target.error().message;
  }
}

TEST(IsFramingHeader, IgnoresCase) {
  EXPECT_TRUE(is_framing_header("Content-Length"));
  EXPECT_TRUE(is_framing_header("HOST"));
  EXPECT_FALSE(is_framing_header("Content-Type"));
}

}  // namespace
}  // namespace eslease::http
