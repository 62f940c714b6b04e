#include "lock/names.h"

#include <gtest/gtest.h>

namespace eslease::lock {
namespace {

TEST(LockNames, TheLeaseRuleIsAccepted) {
  for (const std::string& name : std::vector<std::string>{"nightly-report", "a", "0", "jobs_lock.v2", "a..b",
                                                          std::string(kMaxLockNameBytes, 'x')}) {
    auto key = make_lock_key("batch", name);
    ASSERT_TRUE(key.ok()) << name << ": " << key.error().message;
    EXPECT_EQ(key->id(), "batch/" + name);
  }
}

// Direct mode once took these, though no Lease can name them, so such a lock could never be
// contended from Kubernetes: one rule for both modes now (the CRD's pattern for lockName).
TEST(LockNames, NamesNoLeaseCouldClaimAreRefused) {
  for (const std::string& name :
       std::vector<std::string>{"a/b", "..", ".", "Upper", "../../_cluster", "slot#1", "with space", "-a",
                                "a-", "_a", "a.", "\xf0\x9f\x94\x92",
                                "l\xc3\xbc"
                                "ck",
                                "a?b", "a%2Fb"}) {
    auto key = make_lock_key("batch", name);
    ASSERT_FALSE(key.ok()) << name;
    EXPECT_EQ(key.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(key.error().message.find("lower-case letters, digits, '-', '_' and '.'"), std::string::npos)
        << key.error().message;
  }
}

TEST(LockNames, ARefusedNameIsQuotedFaithfully) {
  EXPECT_NE(make_lock_key("batch",
                          "l\xc3\xbc"
                          "ck")
                .error()
                .message.find("'l\xc3\xbc"
                              "ck'"),
            std::string::npos);
  EXPECT_NE(make_lock_key("batch", "line\nbreak").error().message.find("'line\\nbreak'"), std::string::npos);
  EXPECT_NE(make_lock_key("batch", "bad\xff").error().message.find("'bad\\xff'"), std::string::npos);
}

TEST(LockNames, BadNamesAreRefusedWithClearMessage) {
  struct Case {
    std::string ns, name, fragment;
  };
  const std::vector<Case> cases{
      {"batch", "", "lock name must not be empty"},
      {"batch", std::string(kMaxLockNameBytes + 1, 'x'), "at most 253"},
      {"batch", std::string(10 * 1024, 'x'), "at most 253"},
      {"batch", "bad\xff\xfeutf8", "invalid lock name 'bad\\xff\\xfeutf8'"},
      {"batch", "line\nbreak", "invalid lock name 'line\\nbreak'"},
      {"batch", std::string("nul\0byte", 8), "invalid lock name 'nul\\x00byte'"},
      {"", "name", "namespace must not be empty"},
      {"a/b", "name", "invalid namespace 'a/b'"},
      {"Batch", "name", "invalid namespace 'Batch'"},
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
  auto key = parse_lock_id("batch/nightly.v2");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(key->ns(), "batch");
  EXPECT_EQ(key->name(), "nightly.v2");
  EXPECT_FALSE(parse_lock_id("batch/a/b").ok()) << "no lock name holds '/'";
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
