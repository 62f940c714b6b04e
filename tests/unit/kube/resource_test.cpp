// resourceVersions as KEP-5504 lets clients order them: positive decimal integers without
// leading zeros, compared as numbers; anything else cannot be ordered.
#include "kube/resource.h"

#include <gtest/gtest.h>

namespace eslease::kube {
namespace {

TEST(ResourceVersions, AreOrderedAsNumbersNotAsText) {
  EXPECT_EQ(compare_resource_versions("998", "1002"), std::strong_ordering::less);
  EXPECT_EQ(compare_resource_versions("1002", "998"), std::strong_ordering::greater);
  EXPECT_EQ(compare_resource_versions("42", "42"), std::strong_ordering::equal);
  EXPECT_EQ(compare_resource_versions("18446744073709551616", "18446744073709551615"),
            std::strong_ordering::greater)
      << "no limit on length";
}

TEST(ResourceVersions, ThatAreNotPositiveIntegersCannotBeOrdered) {
  for (const char* odd : {"", "0", "007", "12a", "-3", " 5", "1.5"}) {
    EXPECT_FALSE(comparable_resource_version(odd)) << odd;
    EXPECT_FALSE(compare_resource_versions(odd, "5")) << odd;
    EXPECT_FALSE(compare_resource_versions("5", odd)) << odd;
  }
}

}  // namespace
}  // namespace eslease::kube
