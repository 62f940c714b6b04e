// The controller's flag table: one row per flag drives the command line, the environment,
// the file and --help, so the four can never disagree. Part of the config library, shared by
// its loader (controller_config.cpp) and its help (flag_table.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/command_line.h"
#include "common/result.h"
#include "config/controller_config.h"

namespace eslease::config {

enum class Kind { kText, kList, kBool, kDuration, kInteger, kReal };
enum class Group { kKubernetes, kElasticsearch, kServing, kLeaderElection, kBehaviour, kLogging, kGeneral };

using Apply = std::function<Status(ControllerConfig&, const std::string&)>;

struct FlagSpec {
  const char* name;
  Kind kind;
  Group group;
  const char* value_name;    // "FILE", "URL", ... ("" for booleans)
  std::string default_text;  // "" for none; the defaults of ControllerConfig{} as a user writes them
  const char* help;
  Apply apply;  // called once per value (a list: once per element)
};

// Every flag, in the order --help lists them within a group.
const std::vector<FlagSpec>& flag_specs();
// nullptr when `name` (without the dashes) is no flag.
const FlagSpec* find_flag(std::string_view name);
// The syntax of each flag, row for row as flag_specs(), for read_command_line_word: a
// boolean is a switch, and --help is also -h.
const std::vector<OptionSyntax>& flag_syntax();
// Flags that only make sense on the command line (--config, --version, --help).
bool command_line_only(const FlagSpec& spec);
// The flag to use instead of a credential given as a value ("password" -> --es-password-file).
std::optional<std::string> refused_secret(std::string_view name);
// " (did you mean --workers?)" for a near miss of a flag's name, else "".
std::string suggestion(std::string_view name, std::string_view prefix);

// A usage problem (kInvalidArgument).
Error invalid(std::string message);
// A value echoed in a message, quoted and cut short.
std::string shown(std::string_view value);
// 200 -> "200", 2.5 -> "2.5".
std::string number_text(double value);

}  // namespace eslease::config
