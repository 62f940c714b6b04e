// run_cli: what every invocation meets before a command runs. Bad input is a usage error
// (exit 2) naming what is wrong, and nothing is contacted.
#include "cli/cli.h"

#include <gtest/gtest.h>

#include "cli/flags.h"
#include "unit/cli/direct_cli_fixture.h"

namespace eslease::cli {
namespace {

class CliTest : public DirectCliTest {};

TEST_F(CliTest, UsageErrorsExitTwoWithoutContactingElasticsearch) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"acquire", "x", "--ttl", "abc"},
                                               {"acquire", "bad\xff"},
                                               {"acquire", "line\nbreak"},
                                               {"acquire", std::string(300, 'x')},
                                               {"acquire", "x", "--namespace", "a/b"},
                                               {"acquire", "x", "--index", "UP"},
                                               // The Lease's rule for lock names, in both modes.
                                               {"acquire", "a/b"},
                                               {"acquire", ".."},
                                               {"acquire", "Upper"},
                                               {"acquire", "../../_cluster"},
                                               {"acquire", "slot#1"},
                                               {"acquire", "\xf0\x9f\x94\x92"},
                                               {"acquire", "a", "b/c"},
                                               {"acquire", "x", "--shared", "--exclusive"},
                                               {"status", "a/b"},
                                               {"acquire", "x", "--force"},
                                               {"nonsense"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.code, kExitUsage) << args[0];
    EXPECT_NE(r.err.find("eslease: "), std::string::npos);
  }
  EXPECT_EQ(stores_opened_, 0);
  EXPECT_EQ(api_.total_calls(), 0);
}

TEST_F(CliTest, ARefusedUnicodeNameIsShownAsItIs) {
  auto r = cli({"acquire",
                "l\xc3\xbc"
                "ck"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("invalid lock name 'l\xc3\xbc"
                       "ck'"),
            std::string::npos)
      << r.err;
  auto control = cli({"acquire", "a\x1b[2Jb"});
  EXPECT_NE(control.err.find("'a\\x1b[2Jb'"), std::string::npos) << control.err;
}

TEST_F(CliTest, HelpAndVersionNeedNothingElse) {
  auto help = cli({"--help"});
  EXPECT_EQ(help.code, kExitOk);
  EXPECT_EQ(help.out, usage());
  auto version = cli({"--version"});
  EXPECT_EQ(version.code, kExitOk);
  EXPECT_EQ(version.out.rfind("eslease ", 0), 0u) << version.out;
  EXPECT_EQ(stores_opened_, 0);
}

}  // namespace
}  // namespace eslease::cli
