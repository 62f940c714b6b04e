// How both programs read their command lines, so `eslease` and `eslease-controller` agree on
// how a flag is written. Each keeps a table of its flags; this reads one argument at a time
// against the table's syntax, and the caller applies what it read in order:
//   --name VALUE and --name=VALUE; -name as --name (Go's flag package, which kubebuilder
//   controllers use, takes one dash or two); a short name as -n VALUE or -n=VALUE;
//   a switch (a flag without a value) alone reads "true", or takes =BOOL (parse_bool);
//   "--" ends the options.
// A value is never taken from a following argument that starts with "--": a forgotten value
// is reported instead of swallowing the next flag.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace eslease {

// The syntax of one flag: what a row of either program's table tells the reader.
struct OptionSyntax {
  std::string_view name;        // without dashes: "namespace"
  char short_name = 0;          // 'n' for -n; 0: none
  bool takes_value = true;      // false: a switch
  std::string_view value_name;  // "NS", shown when the value is missing
};

struct CommandLineWord {
  enum class Kind {
    kOption,         // a flag of the table: `row` and `value`
    kUnknownOption,  // starts with '-' but is no flag of the table: `spelled` and `name`
    kArgument,       // a positional argument: `value`
    kEndOfOptions,   // "--": the arguments after it are not read
  };
  Kind kind = Kind::kArgument;
  std::size_t at = 0;   // its index in the arguments
  std::size_t row = 0;  // kOption: the index of its row in the table
  std::string spelled;  // as written, without "=VALUE": "-n", "--wait", "-workers"
  std::string name;     // without the dashes: "n", "wait", "workers"
  std::string value;    // kOption: the value ("true" for a switch alone); kArgument: itself
};

// Reads the word at args[next] and moves `next` past it and past the value it took. The only
// error (kInvalidArgument) is a flag without its value:
// "--wait needs a value: --wait D".
Result<CommandLineWord> read_command_line_word(const std::vector<std::string>& args, std::size_t& next,
                                               const std::vector<OptionSyntax>& table);

// One entry of a --help flag list, ending in a newline: `left` (the indented synopsis), then
// `help` wrapped into the column that starts at `column`, lines at most `width` wide, then
// "(default: X)" unless `default_text` is empty, kept in one piece so it reads (and greps)
// as a unit. A `left` too long for the column gets a line of its own.
std::string option_help_line(const std::string& left, const std::string& help,
                             const std::string& default_text, std::size_t column, std::size_t width);

}  // namespace eslease
