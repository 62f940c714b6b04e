#include "common/command_line.h"

#include <optional>

#include "common/text.h"

namespace eslease {
namespace {

// The row `name` stands for: a long name after one dash or two, a short name after one.
std::optional<std::size_t> find_row(const std::vector<OptionSyntax>& table, std::string_view name,
                                    bool one_dash) {
  for (std::size_t row = 0; row < table.size(); ++row) {
    const OptionSyntax& syntax = table[row];
    const bool short_form = one_dash && name.size() == 1 && syntax.short_name == name[0];
    if (short_form || name == syntax.name) return row;
  }
  return std::nullopt;
}

}  // namespace

Result<CommandLineWord> read_command_line_word(const std::vector<std::string>& args, std::size_t& next,
                                               const std::vector<OptionSyntax>& table) {
  CommandLineWord word;
  word.at = next++;
  const std::string& arg = args[word.at];
  if (arg == "--") {
    word.kind = CommandLineWord::Kind::kEndOfOptions;
    word.spelled = arg;
    return word;
  }
  if (arg.size() < 2 || arg[0] != '-') {
    word.kind = CommandLineWord::Kind::kArgument;
    word.value = arg;
    return word;
  }
  const std::size_t dashes = arg[1] == '-' ? 2 : 1;
  const std::size_t equals = arg.find('=');
  word.spelled = arg.substr(0, equals);
  word.name = word.spelled.substr(dashes);
  const std::optional<std::size_t> row = find_row(table, word.name, dashes == 1);
  if (!row) {
    word.kind = CommandLineWord::Kind::kUnknownOption;
    return word;
  }
  word.kind = CommandLineWord::Kind::kOption;
  word.row = *row;
  const OptionSyntax& syntax = table[*row];
  if (equals != std::string::npos) {
    word.value = arg.substr(equals + 1);
  } else if (!syntax.takes_value) {
    word.value = "true";
  } else if (next < args.size() && !args[next].starts_with("--")) {
    word.value = args[next++];
  } else {
    const std::string flag = "--" + std::string(syntax.name);
    return make_error(
        ErrorCode::kInvalidArgument,
        flag + " needs a value" +
            (syntax.value_name.empty() ? "" : ": " + flag + " " + std::string(syntax.value_name)));
  }
  return word;
}

std::string option_help_line(const std::string& left, const std::string& help,
                             const std::string& default_text, std::size_t column, std::size_t width) {
  const std::string indent(column, ' ');
  std::string out =
      left.size() + 2 > column ? left + "\n" + indent : left + std::string(column - left.size(), ' ');
  std::string right = wrap_words(help, column, width - column);
  if (!default_text.empty()) {
    const std::string shown = "(default: " + default_text + ")";
    const std::size_t newline = right.rfind('\n');
    const std::size_t last_line =
        newline == std::string::npos ? right.size() : right.size() - newline - 1 - column;
    if (right.empty()) {
      right = wrap_words(shown, column, width - column);
    } else if (last_line + 1 + shown.size() <= width - column) {
      right += " " + shown;
    } else {
      right += "\n" + indent + wrap_words(shown, column, width - column);
    }
  }
  return out + right + "\n";
}

}  // namespace eslease
