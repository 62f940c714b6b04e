// Listen and bind addresses: the forms servers and the controller's flags accept.
#include "common/address.h"

#include <gtest/gtest.h>

namespace eslease {
namespace {

TEST(ParseHostPort, HostNameIpv4AndBracketedIpv6) {
  auto name = parse_host_port("localhost:0");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->host, "localhost");
  EXPECT_EQ(name->port, 0);
  auto v4 = parse_host_port("127.0.0.1:8080");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->to_string(), "127.0.0.1:8080");
  auto v6 = parse_host_port("[::1]:9443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->to_string(), "[::1]:9443");
}

TEST(ParseHostPort, AnEmptyHostMeansEveryInterface) {
  auto parsed = parse_host_port(":8080");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->host, "0.0.0.0");
  EXPECT_EQ(parsed->port, 8080);
}

TEST(ParseHostPort, RejectsMalformedWithAReason) {
  for (const char* bad : {"", "8080", "0", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:80x", "::1:80", "[::1]80", "[::1", "[]:80", "bad host:80"}) {
    auto parsed = parse_host_port(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_FALSE(parsed.error().message.empty()) << bad;
  }
  EXPECT_NE(parse_host_port("::1:80").error().message.find("brackets"), std::string::npos);
}

TEST(ParseBindAddress, ZeroTurnsTheServerOff) {
  auto off = parse_bind_address("0");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->has_value());
  auto on = parse_bind_address(":8081");
  ASSERT_TRUE(on.ok());
  ASSERT_TRUE(on->has_value());
  EXPECT_EQ((*on)->to_string(), "0.0.0.0:8081");
  EXPECT_FALSE(parse_bind_address("00").ok());
  EXPECT_FALSE(parse_bind_address("off").ok());
}

}  // namespace
}  // namespace eslease
