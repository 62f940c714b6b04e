#include "lock/names.h"

#include <gtest/gtest.h>

namespace eslease::lock {
namespace {

TEST(LockNames, OrdinaryAndOddButSafeNamesAreAccepted) {
  for (const std::string& name :
       std::vector<std::string>{"nightly-report", "a", "../_cluster/settings", "a/b?x=y#z", "日本語のロック",
                                "with space", std::string(kMaxLockNameBytes, 'x')}) {
    auto key = make_lock_key("batch", name);
    ASSERT_TRUE(key.ok()) << name;
    EXPECT_EQ(key->id(), "batch/" + name);
  }
}

TEST(LockNames, BadNamesAreRefusedWithClearMessage) {
  struct Case {
    std::string ns, name, fragment;
  };
  const std::vector<Case> cases{
      {"batch", "", "lock name must not be empty"},
      {"batch", std::string(kMaxLockNameBytes + 1, 'x'), "at most 253"},
      {"batch", std::string(10 * 1024, 'x'), "at most 253"},
      {"batch", "bad\xff\xfeutf8", "not valid UTF-8"},
      {"batch", "\xc0\xaf", "not valid UTF-8"},
      {"batch", "line\nbreak", "control characters"},
      {"batch", std::string("nul\0byte", 8), "control characters"},
      {"batch", "tab\there", "control characters"},
      {"batch", "c1\xc2\x85", "control characters"},
      {"", "name", "namespace must not be empty"},
      {"a/b", "name", "must not contain '/'"},
      {std::string(kMaxNamespaceBytes + 1, 'n'), "name", "at most 63"},
  };
  for (const Case& c : cases) {
    auto key = make_lock_key(c.ns, c.name);
    ASSERT_FALSE(key.ok()) << c.name.substr(0, 40);
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(key.error().message.find(c.fragment), std::string::npos) << key.error().message;
  }
}

TEST(LockNames, IdParsesBackAtTheFirstSlash) {
  auto key = parse_lock_id("batch/a/b/c");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->ns(), "batch");
  EXPECT_EQ(key->name(), "a/b/c");
  EXPECT_FALSE(parse_lock_id("noslash").ok());
}

TEST(IndexNames, FollowElasticsearchRules) {
  EXPECT_TRUE(validate_index_name("eslease-locks").ok());
  for (const std::string bad :
       {"", "Upper", "_private", "-x", "+x", ".", "..", "a/b", "a?b", "a b", "a,b", "a#b", "a:b", "a*b"}) {
    EXPECT_FALSE(validate_index_name(bad).ok()) << bad;
  }
  EXPECT_FALSE(validate_index_name(std::string(256, 'a')).ok());
}

}  // namespace
}  // namespace eslease::lock
