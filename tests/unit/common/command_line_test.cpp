// The one way both programs read a command line: every spelling of a flag, the end of the
// options, and the mistakes reported before anything is applied.
#include "common/command_line.h"

#include <gtest/gtest.h>

namespace eslease {
namespace {

using Kind = CommandLineWord::Kind;

const std::vector<OptionSyntax> kTable = {
    {"namespace", 'n', true, "NS"},     {"wait", 0, true, "D"}, {"shared", 0, false, ""},
    {"all-namespaces", 'A', false, ""}, {"plain", 0, true, ""},
};

// Every word of `args`, or the first error.
Result<std::vector<CommandLineWord>> read_all(const std::vector<std::string>& args) {
  std::vector<CommandLineWord> words;
  for (std::size_t next = 0; next < args.size();) {
    auto word = read_command_line_word(args, next, kTable);
    if (!word.ok()) return word.error();
    words.push_back(*word);
    if (word->kind == Kind::kEndOfOptions) break;
  }
  return words;
}

TEST(CommandLine, ReadsEverySpellingOfAValuedFlag) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"--namespace", "batch"},
                                                                                    {"--namespace=batch"},
                                                                                    {"-namespace", "batch"},
                                                                                    {"-namespace=batch"},
                                                                                    {"-n", "batch"},
                                                                                    {"-n=batch"}}) {
    auto words = read_all(args);
    ASSERT_TRUE(words.ok()) << args[0] << ": " << words.error().message;
    ASSERT_EQ(words->size(), 1u) << args[0];
    const CommandLineWord& word = words->front();
    EXPECT_EQ(word.kind, Kind::kOption) << args[0];
    EXPECT_EQ(word.row, 0u) << args[0];
    EXPECT_EQ(word.value, "batch") << args[0];
  }
}

TEST(CommandLine, ASwitchAloneIsTrueAndTakesAValueOnlyAfterAnEqualsSign) {
  auto words = read_all({"--shared", "false", "-A=false", "--shared="});
  ASSERT_TRUE(words.ok()) << words.error().message;
  ASSERT_EQ(words->size(), 4u);
  EXPECT_EQ((*words)[0].value, "true");
  EXPECT_EQ((*words)[1].kind, Kind::kArgument);  // a switch takes nothing from the next argument
  EXPECT_EQ((*words)[1].value, "false");
  EXPECT_EQ((*words)[2].row, 3u);
  EXPECT_EQ((*words)[2].spelled, "-A");
  EXPECT_EQ((*words)[2].value, "false");
  EXPECT_EQ((*words)[3].value, "");  // an empty value is the setter's to judge
}

TEST(CommandLine, DoubleDashEndsTheOptionsAndArgumentsKeepTheirPlace) {
  const std::vector<std::string> args{"acquire", "-", "--wait", "1s", "--", "--namespace", "x"};
  auto words = read_all(args);
  ASSERT_TRUE(words.ok()) << words.error().message;
  ASSERT_EQ(words->size(), 4u);
  EXPECT_EQ((*words)[0].kind, Kind::kArgument);
  EXPECT_EQ((*words)[0].value, "acquire");
  EXPECT_EQ((*words)[1].kind, Kind::kArgument);
  EXPECT_EQ((*words)[1].value, "-");
  EXPECT_EQ((*words)[2].at, 2u);
  EXPECT_EQ((*words)[3].kind, Kind::kEndOfOptions);
  EXPECT_EQ((*words)[3].at, 4u);
}

TEST(CommandLine, AnUnknownFlagIsReportedAsWrittenAndTakesNoValue) {
  auto words = read_all({"--colour=red", "-x", "--n", "-wait=1s"});
  ASSERT_TRUE(words.ok()) << words.error().message;
  ASSERT_EQ(words->size(), 4u);
  EXPECT_EQ((*words)[0].kind, Kind::kUnknownOption);
  EXPECT_EQ((*words)[0].spelled, "--colour");
  EXPECT_EQ((*words)[0].name, "colour");
  EXPECT_EQ((*words)[1].kind, Kind::kUnknownOption);
  EXPECT_EQ((*words)[1].spelled, "-x");
  // A short name takes one dash; a long name one or two.
  EXPECT_EQ((*words)[2].kind, Kind::kUnknownOption);
  EXPECT_EQ((*words)[3].kind, Kind::kOption);
  EXPECT_EQ((*words)[3].value, "1s");
}

TEST(CommandLine, AMissingValueNamesTheFlagAndHowToWriteIt) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> missing{
      {{"--wait"}, "--wait needs a value: --wait D"},
      {{"-n"}, "--namespace needs a value: --namespace NS"},
      {{"--plain"}, "--plain needs a value"},
      // A forgotten value does not swallow the next flag, nor the end of the options.
      {{"--namespace", "--wait", "1s"}, "--namespace needs a value: --namespace NS"},
      {{"--namespace", "--", "ls"}, "--namespace needs a value: --namespace NS"},
  };
  for (const auto& [args, message] : missing) {
    auto words = read_all(args);
    ASSERT_FALSE(words.ok()) << message;
    EXPECT_EQ(words.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(words.error().message, message);
  }
  // One dash is a value, as a negative number would be.
  auto dash = read_all({"--plain", "-1"});
  ASSERT_TRUE(dash.ok()) << dash.error().message;
  EXPECT_EQ(dash->front().value, "-1");
}

TEST(CommandLine, HelpLinesPutTheHelpInItsColumnAndTheDefaultInOnePiece) {
  EXPECT_EQ(option_help_line("  --wait D", "give up after D", "", 12, 40), "  --wait D  give up after D\n");
  EXPECT_EQ(option_help_line("  --wait D", "give up after D", "no limit", 12, 60),
            "  --wait D  give up after D (default: no limit)\n");
  EXPECT_EQ(option_help_line("  --wait D", "give up after D", "no limit", 12, 40),
            "  --wait D  give up after D\n"
            "            (default: no limit)\n");
  EXPECT_EQ(option_help_line("  --a-long-name", "help", "", 12, 40),
            "  --a-long-name\n"
            "            help\n");
}

}  // namespace
}  // namespace eslease
