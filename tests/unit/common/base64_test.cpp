#include "common/base64.h"

#include <gtest/gtest.h>

namespace eslease {
namespace {

TEST(Base64, EncodesWithPadding) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("elastic:changeme"), "ZWxhc3RpYzpjaGFuZ2VtZQ==");
}

TEST(Base64, DecodesAndIgnoresLineBreaks) {
  EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64_decode("aGVs\nbG8h"), "hello!");
  EXPECT_EQ(base64_decode(""), "");
  const std::string binary("\x00\xff\x10 x", 5);
  EXPECT_EQ(base64_decode(base64_encode(binary)), binary);
}

TEST(Base64, RejectsMalformedInput) {
  EXPECT_FALSE(base64_decode("aGVsbG8").has_value());   // not a multiple of four
  EXPECT_FALSE(base64_decode("aGV=sbG8").has_value());  // data after padding
  EXPECT_FALSE(base64_decode("a$==").has_value());      // outside the alphabet
  EXPECT_FALSE(base64_decode("a===").has_value());      // too much padding
}

}  // namespace
}  // namespace eslease
