// The eslease tool's table of flags: each row parsed, checked against the mode and listed in
// --help from the same place.
#include "cli/flags.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace eslease::cli {
namespace {

// A value each valued flag accepts on its own.
const std::map<std::string, std::string> kValues{
    {"kubeconfig", "/kc"},
    {"context", "ctx"},
    {"pod", "p"},
    {"podinfo-dir", "/pi"},
    {"lease", "l"},
    {"priority", "Background"},
    {"liveness-grace", "3s"},
    {"safety-margin", "1s"},
    {"index", "locks"},
    {"es-ca-file", "/ca"},
    {"es-username", "u"},
    {"es-password-file", "/pw"},
    {"es-api-key-file", "/k"},
    {"es-bearer-token-file", "/t"},
    {"es-timeout", "2s"},
    {"holder", "h"},
    {"listen", "127.0.0.1:0"},
    {"file", "/holds.json"},
    {"on-grant", "true"},
    {"on-loss", "true"},
};

// `status` with the flag written as --name or --name=VALUE.
std::vector<std::string> status_with(const ToolFlag& flag, bool direct) {
  std::vector<std::string> args;
  if (direct) args = {"--es", "http://a:9200"};
  args.push_back("status");
  const std::string name(flag.syntax.name);
  args.push_back("--" + name + (flag.syntax.takes_value ? "=" + kValues.at(name) : ""));
  return args;
}

TEST(ToolFlags, NamesAreDistinctAndEveryRowSaysWhatItDoes) {
  std::set<std::string> names;
  std::set<char> short_names;
  for (const ToolFlag& flag : tool_flags()) {
    EXPECT_TRUE(names.insert(std::string(flag.syntax.name)).second) << flag.syntax.name;
    if (flag.syntax.short_name) {
      EXPECT_TRUE(short_names.insert(flag.syntax.short_name).second) << flag.syntax.short_name;
    }
    EXPECT_FALSE(flag.help.empty()) << flag.syntax.name;
    EXPECT_TRUE(flag.set) << flag.syntax.name;
    EXPECT_EQ(flag.syntax.takes_value, !flag.syntax.value_name.empty()) << flag.syntax.name;
  }
  EXPECT_EQ(short_names, (std::set<char>{'n', 'o', 'A', 'h'}));
  ASSERT_EQ(tool_flag_syntax().size(), tool_flags().size());
}

TEST(ToolFlags, HelpListsEveryFlag) {
  const std::string text = usage();
  for (const ToolFlag& flag : tool_flags()) {
    std::string left = "\n  ";
    if (flag.syntax.short_name) left += std::string("-") + flag.syntax.short_name + ", ";
    left += "--" + std::string(flag.syntax.name);
    EXPECT_NE(text.find(left), std::string::npos) << left;
  }
  EXPECT_NE(text.find("true, t, 1,\nfalse, f or 0"), std::string::npos);
}

// Every shape works in both modes, and --help says so: no flag is "direct mode for now".
TEST(ToolFlags, ShapeFlagsAreForBothModes) {
  const std::string text = usage();
  EXPECT_EQ(text.find("for now"), std::string::npos);
  for (const ToolFlag& flag : tool_flags()) {
    const std::string name(flag.syntax.name);
    if (name == "capacity" || name == "shared" || name == "exclusive") {
      EXPECT_EQ(flag.mode, FlagMode::kBoth) << name;
    }
  }
  EXPECT_NE(text.find("acquire LOCK [LOCK...] [--namespace NS]"), std::string::npos)
      << "direct mode takes sets";
}

TEST(ToolFlags, AKubernetesFlagIsRefusedInDirectModeNamingIt) {
  for (const ToolFlag& flag : tool_flags()) {
    if (flag.mode != FlagMode::kKubernetes) continue;
    const std::string name = "--" + std::string(flag.syntax.name);
    auto o = parse_options(status_with(flag, /*direct=*/true));
    ASSERT_FALSE(o.ok()) << name;
    EXPECT_EQ(o.error().message,
              name + " is for Kubernetes mode; it cannot be combined with --es (direct mode)");
  }
}

TEST(ToolFlags, ADirectFlagIsRefusedInKubernetesModeNamingIt) {
  for (const ToolFlag& flag : tool_flags()) {
    if (flag.mode != FlagMode::kDirect || flag.syntax.name == "es") continue;
    const std::string name = "--" + std::string(flag.syntax.name);
    auto o = parse_options(status_with(flag, /*direct=*/false));
    ASSERT_FALSE(o.ok()) << name;
    EXPECT_EQ(o.error().message.find(name + " is for direct mode and needs --es URL"), 0u)
        << o.error().message;
  }
}

TEST(ToolFlags, SwitchesReadTheOneBooleanGrammar) {
  auto on = parse_options(
      {"--es", "https://a", "--es-insecure-skip-tls-verify=True", "acquire", "x", "--exclusive=T"});
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_TRUE(on->connection.insecure_skip_tls_verify);
  EXPECT_EQ(on->access, api::Access::kExclusive);
  auto off = parse_options(
      {"--es", "https://a", "--es-insecure-skip-tls-verify=0", "acquire", "x", "--exclusive=false"});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_FALSE(off->connection.insecure_skip_tls_verify);
  EXPECT_EQ(off->access, api::Access::kShared);
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused{
      {{"--es", "https://a", "--es-insecure-skip-tls-verify=yes", "status"},
       R"(--es-insecure-skip-tls-verify: must be true or false, not "yes")"},
      {{"--es", "https://a", "acquire", "x", "--shared=on"}, R"(--shared: must be true or false, not "on")"},
      {{"status", "-A="}, R"(--all-namespaces: must be true or false, not "")"},
  };
  for (const auto& [args, message] : refused) {
    auto o = parse_options(args);
    ASSERT_FALSE(o.ok()) << message;
    EXPECT_EQ(o.error().message, message);
  }
}

}  // namespace
}  // namespace eslease::cli
