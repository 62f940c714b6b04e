// The connection flags both executables share: each value's own rules, the rules between
// flags, and the defaults help shows.
#include "lock/connection.h"

#include <gtest/gtest.h>

namespace eslease::lock {
namespace {

Status apply(ConnectionSettings& settings, const std::string& flag, const std::string& value) {
  const ConnectionFlag* row = find_connection_flag(flag);
  EXPECT_NE(row, nullptr) << flag;
  return row ? row->apply(settings, value) : Status();
}

TEST(ConnectionFlags, AreTheNineEsFlagsWithTheirDefaults) {
  std::vector<std::string> names;
  for (const ConnectionFlag& flag : connection_flags()) names.push_back(flag.name);
  EXPECT_EQ(names, (std::vector<std::string>{"es", "index", "es-ca-file", "es-username", "es-password-file",
                                             "es-api-key-file", "es-bearer-token-file",
                                             "es-insecure-skip-tls-verify", "es-timeout"}));
  EXPECT_EQ(find_connection_flag("index")->default_text, kDefaultIndex);
  EXPECT_EQ(find_connection_flag("es-timeout")->default_text, "5s");
  EXPECT_EQ(find_connection_flag("es-insecure-skip-tls-verify")->default_text, "false");
  EXPECT_EQ(find_connection_flag("workers"), nullptr);
}

TEST(ConnectionFlags, EachValueIsCheckedOnItsOwn) {
  ConnectionSettings s;
  EXPECT_TRUE(apply(s, "es", "http://a:9200").ok());
  EXPECT_TRUE(apply(s, "es", "https://b:9200/prefix").ok());
  EXPECT_EQ(s.hosts, (std::vector<std::string>{"http://a:9200", "https://b:9200/prefix"}));
  EXPECT_FALSE(apply(s, "es", "ftp://a").ok());
  EXPECT_FALSE(apply(s, "es", "http://user:secret@a:9200").ok());
  EXPECT_FALSE(apply(s, "es", "").ok());
  EXPECT_FALSE(apply(s, "index", "UPPER").ok());
  EXPECT_TRUE(apply(s, "index", "my-locks").ok());
  EXPECT_EQ(s.index, "my-locks");
  const Status short_timeout = apply(s, "es-timeout", "50ms");
  ASSERT_FALSE(short_timeout.ok());
  EXPECT_EQ(short_timeout.error().message, "must be at least 100ms, not \"50ms\"");
  EXPECT_FALSE(apply(s, "es-timeout", "soon").ok());
  EXPECT_TRUE(apply(s, "es-timeout", "3s").ok());
  EXPECT_EQ(s.request_timeout, Millis(3000));
  EXPECT_FALSE(apply(s, "es-insecure-skip-tls-verify", "yes").ok());
  EXPECT_TRUE(apply(s, "es-insecure-skip-tls-verify", "true").ok());
  EXPECT_TRUE(s.insecure_skip_tls_verify);
}

TEST(ConnectionFlags, CredentialsAreOneKindAndComplete) {
  auto with = [](auto set) {
    ConnectionSettings s;
    s.hosts = {"http://a:9200"};
    set(s);
    return validate(s);
  };
  EXPECT_TRUE(with([](ConnectionSettings&) {}).ok());
  EXPECT_TRUE(with([](ConnectionSettings& s) {
                s.username = "elastic";
                s.password_file = "/pw";
              }).ok());
  const Status no_password = with([](ConnectionSettings& s) { s.username = "elastic"; });
  ASSERT_FALSE(no_password.ok());
  EXPECT_NE(no_password.error().message.find("--es-password-file"), std::string::npos);
  EXPECT_FALSE(with([](ConnectionSettings& s) { s.password_file = "/pw"; }).ok());
  const Status two_kinds = with([](ConnectionSettings& s) {
    s.api_key_file = "/key";
    s.bearer_token_file = "/token";
  });
  ASSERT_FALSE(two_kinds.ok());
  EXPECT_NE(two_kinds.error().message.find("choose one kind"), std::string::npos);
  EXPECT_FALSE(validate(ConnectionSettings{}).ok()) << "no host";
}

}  // namespace
}  // namespace eslease::lock
