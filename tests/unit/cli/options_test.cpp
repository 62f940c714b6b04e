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

// Lock sets and shapes, checked before anything is contacted.
TEST(Options, ShapesAreCheckedBeforeAnythingIsContacted) {
  auto o = parse_options({"--es", "http://a:9200", "run", "a", "b", "c", "--capacity", "5", "--", "x"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->locks, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o->capacity, 5);
  EXPECT_EQ(o->access, api::Access::kShared) << "--capacity N alone is a semaphore";
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "--capacity", "0"}).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "--capacity", "1001"}).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "--capacity", "x"}).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "b", "a"}).ok());
  std::vector<std::string> many{"--es", "http://a:9200", "acquire"};
  for (int i = 0; i < 33; ++i) many.push_back("l" + std::to_string(i));
  EXPECT_FALSE(parse_options(many).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "status", "a", "b"}).ok());
}

// Access is Shared unless --exclusive says otherwise; --shared states the default, and the
// two may not disagree. Both are for the commands that claim.
TEST(Options, AccessIsSharedUnlessExclusive) {
  for (const bool direct : {true, false}) {
    const std::vector<std::string> mode =
        direct ? std::vector<std::string>{"--es", "http://a"} : std::vector<std::string>{};
    const auto parse = [&](std::vector<std::string> args) {
      args.insert(args.begin(), mode.begin(), mode.end());
      return parse_options(args);
    };
    EXPECT_EQ(parse({"acquire", "a", "--capacity", "3"})->access, api::Access::kShared);
    EXPECT_EQ(parse({"acquire", "a", "--capacity", "3", "--shared"})->access, api::Access::kShared);
    EXPECT_EQ(parse({"acquire", "a", "--capacity", "3", "--exclusive"})->access, api::Access::kExclusive);
    EXPECT_EQ(parse({"run", "a", "--exclusive", "--exclusive", "--", "x"})->access, api::Access::kExclusive);
    auto both = parse({"acquire", "a", "--shared", "--exclusive"});
    ASSERT_FALSE(both.ok());
    EXPECT_EQ(both.error().message, "give either --shared or --exclusive, not both");
    auto status = parse({"status", "a", "--exclusive"});
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().message, "--shared and --exclusive are for acquire and run");
  }
}

TEST(Options, KubernetesModeTakesSetsCapacityAndAccess) {
  auto set = parse_options({"acquire", "a", "b", "--capacity", "3", "--exclusive"});
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->mode, Mode::kKubernetes);
  EXPECT_EQ(set->locks, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(set->capacity, 3);
  EXPECT_EQ(set->access, api::Access::kExclusive);
  ASSERT_TRUE(parse_options({"run", "a", "b", "--", "x"}).ok());
}

// A set is checked by one rule in both modes, with the same words.
TEST(Options, BadSetsAreRefusedAlikeInBothModes) {
  std::vector<std::string> many{"acquire"};
  for (int i = 0; i < 33; ++i) many.push_back("l" + std::to_string(i));
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"acquire", "a", "b", "a"}, "lock a is named twice; a lock set names each lock once"},
           {many, "a lock set has at most 32 locks"}}) {
    auto kubernetes = parse_options(args);
    std::vector<std::string> direct_args{"--es", "http://a:9200"};
    direct_args.insert(direct_args.end(), args.begin(), args.end());
    auto direct = parse_options(direct_args);
    ASSERT_FALSE(kubernetes.ok()) << message;
    ASSERT_FALSE(direct.ok()) << message;
    EXPECT_EQ(kubernetes.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(kubernetes.error().message, message);
    EXPECT_EQ(direct.error().message, message);
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
