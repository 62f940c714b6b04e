// The eslease tool's flags: one row per flag drives the parsing (parse_options reads each
// argument against the rows' syntax and calls the row's setter), the check that a flag
// belongs to the mode in use, and --help, so the three cannot disagree. The connection rows
// come from the table the controller reads too (lock/connection.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/options.h"
#include "common/command_line.h"
#include "common/result.h"

namespace eslease::cli {

// The mode a flag belongs to: a flag of the other mode is a usage error, never ignored.
enum class FlagMode { kBoth, kKubernetes, kDirect };

struct ToolFlag;

// What a command line reads to, for parse_options to check as a whole afterwards.
struct ArgsRead {
  Options options;
  std::vector<std::string> positional;  // COMMAND, then its LOCKs (or LEASE)
  bool help = false;                    // -h, --help
  std::vector<const ToolFlag*> given;   // the flags in the order they came
};

struct ToolFlag {
  OptionSyntax syntax;       // the name, the short name, whether it takes a value
  FlagMode mode;             // where it applies
  std::string help;          // its line of --help
  std::string default_text;  // "" for none
  // Records the value (a switch: "true" or "false"). The error, kInvalidArgument, is the
  // whole message for the user, naming the flag.
  std::function<Status(ArgsRead&, const std::string& value)> set;
};

// Every flag, in the order --help lists them within a mode.
const std::vector<ToolFlag>& tool_flags();
// Their syntax, row for row, for read_command_line_word.
const std::vector<OptionSyntax>& tool_flag_syntax();

// The --help text: both modes' commands, every flag by mode, the exit codes.
std::string usage();

}  // namespace eslease::cli
