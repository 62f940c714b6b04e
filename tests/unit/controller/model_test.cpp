#include "controller/model.h"

#include <gtest/gtest.h>

#include <limits>

namespace eslease::controller {
namespace {

TEST(FencingTokenText, IsReadOnlyAsAWholeDecimalNumber) {
  EXPECT_EQ(parse_fencing_token("281474976710657"), 281474976710657);
  EXPECT_EQ(parse_fencing_token("0"), 0);
  EXPECT_FALSE(parse_fencing_token(""));
  EXPECT_FALSE(parse_fencing_token("12x")) << "no trailing text";
  EXPECT_FALSE(parse_fencing_token(" 12"));
  EXPECT_FALSE(parse_fencing_token("99999999999999999999")) << "beyond 64 bits";
}

TEST(FencingTokenText, NamesATokenOnlyAsTheControllerWritesIt) {
  EXPECT_TRUE(names_fencing_token("281474976710657", 281474976710657));
  EXPECT_TRUE(names_fencing_token("0", 0));
  EXPECT_TRUE(names_fencing_token(std::to_string(std::numeric_limits<std::int64_t>::max()),
                                  std::numeric_limits<std::int64_t>::max()));
  EXPECT_FALSE(names_fencing_token("0281474976710657", 281474976710657))
      << "a leading zero names another text";
  EXPECT_FALSE(names_fencing_token("+7", 7));
  EXPECT_FALSE(names_fencing_token("7 ", 7));
  EXPECT_FALSE(names_fencing_token("", 0));
  EXPECT_FALSE(names_fencing_token("28147497671065", 281474976710657)) << "a prefix is not the token";
}

TEST(LeaseStatusShowsHeld, OnlyHeldUnderThatToken) {
  LeaseStatus status;
  status.phase = Phase::kHeld;
  status.fencing_token = "42";
  EXPECT_TRUE(status.shows_held(42));
  EXPECT_FALSE(status.shows_held(41));
  status.phase = Phase::kPending;
  EXPECT_FALSE(status.shows_held(42)) << "a Pending claim shows no grant, whatever its token field says";
}

}  // namespace
}  // namespace eslease::controller
