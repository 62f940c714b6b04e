#include "cli/options.h"

#include <gtest/gtest.h>

namespace eslease::cli {
namespace {

TEST(Options, AcquireWithAllFlags) {
  auto o = parse_options({"--es",
                          "http://a:9200",
                          "--es=http://b:9200",
                          "acquire",
                          "report",
                          "--namespace",
                          "batch",
                          "--holder",
                          "me",
                          "--ttl",
                          "10s",
                          "--wait=1m",
                          "--index",
                          "locks",
                          "--es-ca-file",
                          "/ca.pem",
                          "--es-username",
                          "u",
                          "--es-password-file",
                          "/p"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->command, Command::kAcquire);
  EXPECT_EQ(o->lock, "report");
  EXPECT_EQ(o->ns, "batch");
  EXPECT_EQ(o->holder, "me");
  EXPECT_EQ(o->ttl, Millis(10000));
  EXPECT_EQ(o->wait, Millis(60000));
  EXPECT_EQ(o->connection.hosts, (std::vector<std::string>{"http://a:9200", "http://b:9200"}));
  EXPECT_EQ(o->connection.index, "locks");
  EXPECT_EQ(o->connection.ca_file, "/ca.pem");
  EXPECT_FALSE(o->connection.insecure_skip_tls_verify);
}

TEST(Options, RunTakesTheCommandAfterDoubleDash) {
  auto o =
      parse_options({"run", "job", "--es", "http://a:9200", "--ttl", "6s", "--", "sh", "-c", "echo --ttl"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->command, Command::kRun);
  EXPECT_EQ(o->child, (std::vector<std::string>{"sh", "-c", "echo --ttl"}));
  EXPECT_EQ(o->ttl, Millis(6000));
}

TEST(Options, MistakesAreUsageErrors) {
  const std::vector<std::vector<std::string>> bad{
      {"--es", "http://a", "acquire"},                                               // no lock
      {"--es", "http://a", "renew", "x"},                                            // no --holder
      {"--es", "http://a", "release", "x"},                                          // no --holder
      {"--es", "http://a", "acquire", "x", "--ttl", "30"},                           // bare number
      {"--es", "http://a", "acquire", "x", "--ttl", "10ms"},                         // below the minimum
      {"--es", "http://a", "acquire", "x", "--bogus"},                               // unknown flag
      {"--es", "http://a", "acquire", "x", "--wait"},                                // missing value
      {"--es", "http://a", "frobnicate", "x"},                                       // unknown command
      {"--es", "http://a", "run", "x"},                                              // no command
      {"--es", "http://a", "acquire", "x", "--", "ls"},                              // command outside run
      {"--es", "http://a", "run", "x", "--ttl", "3s", "--grace", "5s", "--", "ls"},  // grace >= ttl
      {"--es", "http://a", "status", "--output", "yaml"},
      {"--es", "http://a", "status", "x", "y"},
  };
  for (const auto& args : bad) {
    auto o = parse_options(args);
    EXPECT_FALSE(o.ok()) << args.back();
    if (!o.ok()) {
      EXPECT_EQ(o.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

// The --es* flags and --index follow the rules the controller applies to them (one table).
TEST(Options, ConnectionFlagsAreCheckedAsTheControllerChecksThem) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--es", "ftp://a", "status"}, "--es: Elasticsearch URL must start with http:// or https://"},
      {{"--es", "http://a", "--es-timeout", "50ms", "status"}, "--es-timeout: must be at least 100ms"},
      {{"--es", "http://a", "--index", "UP", "status"}, "--index: "},
      {{"--es", "http://a", "--es-username", "u", "status"}, "--es-username needs --es-password-file"},
      {{"--es", "http://a", "--es-api-key-file", "/k", "--es-bearer-token-file", "/t", "status"},
       "choose one kind of Elasticsearch credentials"},
  };
  for (const auto& [args, expected] : bad) {
    auto o = parse_options(args);
    ASSERT_FALSE(o.ok()) << expected;
    EXPECT_EQ(o.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(o.error().message.find(expected), std::string::npos) << o.error().message;
  }
  auto o = parse_options({"--es", "https://a", "--es-insecure-skip-tls-verify", "--es-timeout=2s", "status"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_TRUE(o->connection.insecure_skip_tls_verify);
  EXPECT_EQ(o->connection.request_timeout, Millis(2000));
  EXPECT_EQ(o->connection.index, lock::kDefaultIndex);
}

TEST(Options, EverySpellingOfAFlagReadsTheSame) {
  for (const std::vector<std::string>& flag : std::vector<std::vector<std::string>>{{"--namespace", "batch"},
                                                                                    {"--namespace=batch"},
                                                                                    {"-namespace", "batch"},
                                                                                    {"-n", "batch"},
                                                                                    {"-n=batch"}}) {
    std::vector<std::string> args{"--es", "http://a:9200", "status"};
    args.insert(args.end(), flag.begin(), flag.end());
    auto o = parse_options(args);
    ASSERT_TRUE(o.ok()) << flag[0] << ": " << o.error().message;
    EXPECT_EQ(o->ns, "batch") << flag[0];
    EXPECT_TRUE(o->ns_given) << flag[0];
  }
}

TEST(Options, UnknownFlagsAndMissingValuesSayWhich) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--es", "http://a", "acquire", "x", "--bogus"}, "unknown flag --bogus"},
      {{"--es", "http://a", "acquire", "x", "-x=1"}, "unknown flag -x"},
      {{"--es", "http://a", "acquire", "x", "--wait"}, "--wait needs a value: --wait D"},
      {{"--es", "http://a", "acquire", "x", "-n"}, "--namespace needs a value: --namespace NS"},
      // A forgotten value does not swallow the next flag.
      {{"--es", "http://a", "renew", "x", "--holder", "--ttl", "5s"},
       "--holder needs a value: --holder NAME"},
      {{"--es"}, "--es needs a value: --es URL"},
  };
  for (const auto& [args, message] : bad) {
    auto o = parse_options(args);
    ASSERT_FALSE(o.ok()) << message;
    EXPECT_EQ(o.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(o.error().message, message);
  }
}

TEST(Options, VersionNeedsNothingAfterIt) {
  auto o = parse_options({"--version", "--bogus"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->command, Command::kVersion);
}

TEST(Options, HelpNeedsNoConnection) {
  EXPECT_EQ(parse_options({})->command, Command::kHelp);
  EXPECT_EQ(parse_options({"--help"})->command, Command::kHelp);
  EXPECT_EQ(parse_options({"help"})->command, Command::kHelp);
}

}  // namespace
}  // namespace eslease::cli
