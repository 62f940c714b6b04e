#include "common/result.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace eslease {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return make_error(ErrorCode::kInvalidArgument, "must be positive");
  return v;
}

TEST(Result, CarriesAValueOrAnError) {
  auto good = parse_positive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  auto bad = parse_positive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().describe(), "InvalidArgument: must be positive");
}

TEST(Error, UnreachableOverloadedAndSilentPeersAreUnavailable) {
  EXPECT_TRUE(make_error(ErrorCode::kUnavailable, "").unavailable());
  EXPECT_TRUE(make_error(ErrorCode::kTooManyRequests, "").unavailable());
  EXPECT_TRUE(make_error(ErrorCode::kTimeout, "").unavailable());
  // The peer answered: retrying the same request would meet the same answer.
  EXPECT_FALSE(make_error(ErrorCode::kConflict, "").unavailable());
  EXPECT_FALSE(make_error(ErrorCode::kInvalidArgument, "").unavailable());
  EXPECT_FALSE(make_error(ErrorCode::kForbidden, "").unavailable());
  EXPECT_FALSE(make_error(ErrorCode::kProtocol, "").unavailable());
}

TEST(Error, DescribeIncludesStatusAndDetails) {
  Error e = make_error(ErrorCode::kInvalid, "Lease is invalid", 422);
  e.details = {"spec.lockName: Required value"};
  EXPECT_EQ(e.describe(), "Invalid (HTTP 422): Lease is invalid; spec.lockName: Required value");
}

TEST(ErrorCode, EveryCodeHasANameOfItsOwn) {
  std::set<std::string> names;
  const int last = static_cast<int>(ErrorCode::kInternal);
  for (int i = 0; i <= last; ++i) {
    const std::string name = to_string(static_cast<ErrorCode>(i));
    EXPECT_NE(name, "Unknown") << i;
    EXPECT_TRUE(names.insert(name).second) << name << " names two codes";
  }
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  Status failed = make_error(ErrorCode::kTimeout, "slow");
  EXPECT_FALSE(failed.ok());
}

}  // namespace
}  // namespace eslease
