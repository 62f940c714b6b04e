#include "config/controller_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "api/lease_api.h"
#include "api/session.h"
#include "common/duration.h"
#include "common/text.h"
#include "config/flag_table.h"

namespace eslease::config {
namespace {

// ----------------------------------------------------------------------------------------
// Sources. Each yields, per flag, the values it sets and where they came from; a higher
// source replaces a lower one's values for that flag (lists too: --namespace given on the
// command line replaces the file's list rather than adding to it).

struct Setting {
  std::vector<std::string> values;
  std::string origin;  // "--workers", "ESLEASE_WORKERS", "config file f.yaml, key \"workers\""
};
using Settings = std::map<std::string, Setting>;

// `arg` at args[at] is not a flag: eslease-controller takes nothing else.
Error unexpected_argument(const std::vector<std::string>& args, std::size_t at) {
  const std::string& arg = args[at];
  std::string message = "unexpected argument " + shown(arg) + ": eslease-controller takes only flags";
  // `--leader-elect false` is the classic slip: Go's flags (and ours) read a bare boolean
  // flag as true and the word after it as an argument.
  if (at > 0 && (arg == "true" || arg == "false")) {
    const std::string& previous = args[at - 1];
    const FlagSpec* flag = find_flag(std::string_view(previous).substr(
        std::min(previous.size(), previous.rfind("--", 0) == 0 ? std::size_t{2} : std::size_t{1})));
    if (flag && flag->kind == Kind::kBool) message += "; write a boolean as " + previous + "=" + arg;
  }
  return invalid(message);
}

Result<Settings> read_command_line(const std::vector<std::string>& args) {
  Settings settings;
  for (std::size_t next = 0; next < args.size();) {
    auto word = read_command_line_word(args, next, flag_syntax());
    if (!word.ok()) return word.error();
    using WordKind = CommandLineWord::Kind;
    if (word->kind == WordKind::kArgument || word->kind == WordKind::kEndOfOptions)
      return unexpected_argument(args, word->at);
    if (word->kind == WordKind::kUnknownOption) {
      const std::string& name = word->name;
      if (auto instead = refused_secret(name))
        return invalid("--" + name +
                       " is not accepted: credentials are only read from files; put it in a file and " +
                       "pass " + *instead + " FILE");
      return invalid("unknown flag --" + name.substr(0, 64) + suggestion(name, "--") + "; see --help");
    }
    const FlagSpec& spec = flag_specs()[word->row];
    Setting& setting = settings[spec.name];
    setting.origin = "--" + std::string(spec.name);
    if (spec.kind == Kind::kList) {
      setting.values.push_back(word->value);
    } else {
      setting.values = {word->value};  // the last one wins, as with Go's flags
    }
  }
  return settings;
}

Settings read_environment(const EnvironmentVariables& env) {
  Settings settings;
  for (const FlagSpec& spec : flag_specs()) {
    if (command_line_only(spec)) continue;
    const std::string variable = environment_variable(spec.name);
    auto value = env.get(variable);
    // An empty variable counts as unset: manifests often template variables to "".
    if (!value || trim(*value).empty()) continue;
    Setting setting{{}, variable};
    if (spec.kind == Kind::kList) {
      std::istringstream in(*value);
      for (std::string item; std::getline(in, item, ',');)
        if (!trim(item).empty()) setting.values.push_back(trim(item));
    } else {
      setting.values = {*value};
    }
    settings[spec.name] = std::move(setting);
  }
  return settings;
}

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      return node.Tag() == "?" ? "the plain value " + shown(node.Scalar())
                               : "the string " + shown(node.Scalar());
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

// A YAML value as the flag's text form, after checking its type: numbers and booleans must
// be written as such (workers: 4, leader-elect: true), not as quoted strings; durations
// are strings ("15s"); repeatable flags take a list or one value.
Result<std::vector<std::string>> yaml_values(const FlagSpec& spec, const YAML::Node& node) {
  auto wrong = [&](const char* expected) {
    return invalid(std::string("must be ") + expected + ", not " + describe_node(node));
  };
  const bool plain = node.IsScalar() && node.Tag() == "?";
  switch (spec.kind) {
    case Kind::kList: {
      if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
      if (!node.IsSequence()) return wrong("a list of strings, e.g. [a, b]");
      std::vector<std::string> out;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar())
          return invalid("must be a list of strings, but an item is " + describe_node(item));
        out.push_back(item.Scalar());
      }
      return out;
    }
    case Kind::kBool:
      if (!plain) return wrong("true or false");
      return std::vector<std::string>{node.Scalar()};
    case Kind::kInteger:
    case Kind::kReal:
      if (!plain) return wrong("a number");
      return std::vector<std::string>{node.Scalar()};
    case Kind::kDuration:
      if (!node.IsScalar()) return wrong("a duration such as \"10s\"");
      return std::vector<std::string>{node.Scalar()};
    case Kind::kText:
      // Any scalar: `metrics-bind-address: 0` is a number to YAML but the flag's "off".
      if (!node.IsScalar()) return wrong("a string");
      return std::vector<std::string>{node.Scalar()};
  }
  return wrong("a value");
}

Result<Settings> read_config_file(const std::string& path) {
  const std::string where = "config file " + path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return invalid("cannot read " + where + ": it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid("cannot read " + where + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return invalid("cannot read " + where + ": " + std::strerror(errno));

  Settings settings;
  // yaml-cpp reports problems by throwing; they end here, as the error policy asks.
  try {
    const YAML::Node root = YAML::Load(text.str());
    if (root.IsNull()) return settings;  // an empty file sets nothing
    if (!root.IsMap())
      return invalid(where + " must be a map of settings (e.g. `workers: 8`), not " + describe_node(root));
    for (const auto& item : root) {
      if (!item.first.IsScalar()) return invalid(where + ": every key must be a flag name");
      const std::string key = item.first.Scalar();
      const std::string origin = where + ", key \"" + key.substr(0, 64) + "\"";
      if (auto instead = refused_secret(key))
        return invalid(origin + " is not accepted: credentials are only read from files; use \"" +
                       instead->substr(2) + "\" with the file's path");
      const FlagSpec* spec = find_flag(key);
      if (!spec || command_line_only(*spec))
        return invalid(origin + " is not a setting" + (spec ? "" : suggestion(key, "")) +
                       "; keys are the flag names without the dashes");
      if (settings.count(key)) return invalid(origin + " appears twice");
      auto values = yaml_values(*spec, item.second);
      if (!values.ok()) return invalid(origin + ": " + values.error().message);
      settings[key] = Setting{std::move(*values), origin};
    }
  } catch (const YAML::Exception& e) {
    return invalid(where + " is not valid YAML: " + e.what());
  }
  return settings;
}

// Rules between flags, after every value is known.
Status validate(const ControllerConfig& o) {
  if (o.elasticsearch.hosts.empty())
    return invalid(
        "no Elasticsearch host: give --es URL (repeatable), ESLEASE_ES or `es:` in the config file");
  if (auto s = lock::validate(o.elasticsearch); !s.ok()) return s.error();

  // client-go's leader election rules: the leader must give up (renew deadline) before a
  // standby may take over (lease duration), with room for the jittered retry period.
  const Millis lease = o.leader_election_lease_duration;
  const Millis deadline = o.leader_election_renew_deadline;
  const Millis retry = o.leader_election_retry_period;
  if (lease <= deadline)
    return invalid("--leader-election-lease-duration (" + format_duration(lease) +
                   ") must be longer than --leader-election-renew-deadline (" + format_duration(deadline) +
                   ")");
  if (static_cast<double>(deadline.count()) <= kube::kJitterFactor * static_cast<double>(retry.count()))
    return invalid("--leader-election-renew-deadline (" + format_duration(deadline) +
                   ") must be longer than " + number_text(kube::kJitterFactor) +
                   " x --leader-election-retry-period (" + format_duration(retry) + ")");
  return {};
}

}  // namespace

Millis longest_renewal_pause(const ControllerConfig& options) {
  const Millis failover = options.leader_elect ? options.leader_election_lease_duration : Millis(0);
  const Millis retry = options.leader_elect ? options.leader_election_retry_period : Millis(0);
  return api::longest_renewal_pause(failover, retry, options.elasticsearch.request_timeout);
}

std::vector<std::string> timing_warnings(const ControllerConfig& options) {
  const Millis lease = api::lease_duration(api::kDefaultLeaseDurationSeconds);
  const Millis slack = api::default_holder_slack(lease);
  const Millis pause = longest_renewal_pause(options);
  if (pause <= slack) return {};
  return {"renewals may pause for up to " + format_duration(pause) +
          " (--leader-election-lease-duration + --leader-election-retry-period + 2s, or --es-timeout), "
          "longer than the " +
          format_duration(slack) + " an `eslease run` holder of a " + format_duration(lease) +
          " Lease rides out with its default --grace and --safety-margin: "
          "a failover would stop healthy holders' commands"};
}

// ------------------------------------------------------------------------------------------
// EnvironmentVariables.

EnvironmentVariables::EnvironmentVariables(
    std::initializer_list<std::pair<const std::string, std::string>> values)
    : EnvironmentVariables(std::map<std::string, std::string>(values)) {}

EnvironmentVariables::EnvironmentVariables(std::map<std::string, std::string> values)
    : lookup_([values = std::move(values)](const std::string& name) -> std::optional<std::string> {
        auto it = values.find(name);
        if (it == values.end()) return std::nullopt;
        return it->second;
      }) {}

EnvironmentVariables EnvironmentVariables::process() {
  return EnvironmentVariables([](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (!value) return std::nullopt;
    return std::string(value);
  });
}

std::optional<std::string> EnvironmentVariables::get(const std::string& name) const {
  return lookup_ ? lookup_(name) : std::nullopt;
}

std::string environment_variable(const std::string& flag) {
  std::string out = "ESLEASE_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// ------------------------------------------------------------------------------------------
// Loading.

Result<ControllerConfig> load_controller_config(const std::vector<std::string>& args,
                                                const EnvironmentVariables& env) {
  auto command_line = read_command_line(args);
  if (!command_line.ok()) return command_line.error();
  Settings& flags = *command_line;

  ControllerConfig options;
  if (flags.count("help") || flags.count("version")) {
    // --help and --version answer without reading the environment or the file, so a broken
    // configuration cannot stop someone from reading the help that explains it.
    for (const char* name : {"help", "version"}) {
      if (!flags.count(name)) continue;
      if (auto s = find_flag(name)->apply(options, flags[name].values.back()); !s.ok())
        return invalid(flags[name].origin + ": " + s.error().message);
    }
    if (options.help || options.version) return options;
  }

  std::string config_file;
  std::string config_origin;
  if (auto it = flags.find("config"); it != flags.end()) {
    config_file = it->second.values.back();
    config_origin = "--config";
  } else if (auto from_env = env.get("ESLEASE_CONFIG"); from_env && !trim(*from_env).empty()) {
    config_file = *from_env;
    config_origin = "ESLEASE_CONFIG";
  }
  if (!config_origin.empty() && config_file.empty()) return invalid(config_origin + " needs a file name");

  Settings merged;
  if (!config_file.empty()) {
    auto file = read_config_file(config_file);
    if (!file.ok()) return file.error();
    merged = std::move(*file);
  }
  for (auto& [name, setting] : read_environment(env)) merged[name] = std::move(setting);
  for (auto& [name, setting] : flags) merged[name] = std::move(setting);
  merged.erase("config");

  // Table order, so the first problem reported is stable whatever the sources.
  for (const FlagSpec& spec : flag_specs()) {
    auto it = merged.find(spec.name);
    if (it == merged.end()) continue;
    for (const std::string& value : it->second.values) {
      if (auto s = spec.apply(options, value); !s.ok())
        return invalid(it->second.origin + ": " + s.error().message);
    }
  }
  options.config_file = config_file;
  if (auto s = validate(options); !s.ok()) return s.error();
  return options;
}

// ------------------------------------------------------------------------------------------
// Runtime defaults.

RuntimeFacts read_runtime_facts(const EnvironmentVariables& env, const std::string& namespace_file) {
  RuntimeFacts facts;
  facts.pod_name = trim(env.get("POD_NAME").value_or(""));
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) facts.host_name = host;
  // Absent outside a pod; any read problem means "not in a pod" as well.
  std::ifstream in(namespace_file);
  std::string ns;
  if (in && std::getline(in, ns)) facts.pod_namespace = trim(ns);
  // The alphabet Kubernetes uses for generated names: no vowels, so no words.
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::random_device device;
  std::uniform_int_distribution<std::size_t> pick(0, kAlphabet.size() - 1);
  for (int i = 0; i < 5; ++i) facts.random_suffix += kAlphabet[pick(device)];
  return facts;
}

void resolve_runtime_defaults(ControllerConfig& options, const RuntimeFacts& facts) {
  if (options.identity.empty()) {
    // A pod's name is its identity as it stands: a container restarted in place keeps it and
    // re-takes its own leader-election Lease at once. Outside a pod two processes may share a
    // host name, so a random suffix tells them apart.
    if (!facts.pod_name.empty()) {
      options.identity = facts.pod_name;
    } else {
      const std::string base = facts.host_name.empty() ? "eslease-controller" : facts.host_name;
      options.identity = facts.random_suffix.empty() ? base : base + "-" + facts.random_suffix;
    }
  }
  const std::string suffix = facts.random_suffix.empty() ? "" : "-" + facts.random_suffix;
  options.writer = options.identity.ends_with(suffix) ? options.identity : options.identity + suffix;
  if (options.leader_election_namespace.empty())
    options.leader_election_namespace = facts.pod_namespace.empty() ? "default" : facts.pod_namespace;
}

}  // namespace eslease::config
