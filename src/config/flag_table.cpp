#include "config/flag_table.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <sstream>

#include "common/address.h"
#include "common/command_line.h"
#include "common/duration.h"
#include "common/log.h"
#include "common/text.h"
#include "lock/names.h"

namespace eslease::config {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// Values are echoed in messages so the user sees what was read; long ones are cut, so a
// pasted blob cannot flood the terminal. Credentials are never values here: only paths.
std::string shown(std::string_view value) {
  std::string out = value.size() > 64 ? std::string(value.substr(0, 64)) + "..." : std::string(value);
  return "\"" + out + "\"";
}

// 200 -> "200", 2.5 -> "2.5".
std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

namespace {

// ----------------------------------------------------------------------------------------
// Value parsers. Each returns the problem only; the caller prefixes where the value came
// from (--flag, ESLEASE_VAR or the file's key).

Result<long long> parse_integer(const std::string& value) {
  long long out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc{} || ptr != end)
    return invalid("must be a whole number, not " + shown(value));
  return out;
}

Result<double> parse_real(const std::string& value) {
  double out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (value.empty() || ec != std::errc{} || ptr != end || !std::isfinite(out))
    return invalid("must be a number, not " + shown(value));
  return out;
}

// ----------------------------------------------------------------------------------------
// Setters: one per kind of value, each checking the value it is given.

Apply text(std::string ControllerConfig::*field, bool allow_empty = true) {
  return [field, allow_empty](ControllerConfig& o, const std::string& v) -> Status {
    if (!allow_empty && v.empty()) return invalid("must not be empty");
    o.*field = v;
    return {};
  };
}

Apply list(std::vector<std::string> ControllerConfig::*field) {
  return [field](ControllerConfig& o, const std::string& v) -> Status {
    if (v.empty()) return invalid("needs a value");
    (o.*field).push_back(v);
    return {};
  };
}

Apply boolean(bool ControllerConfig::*field) {
  return [field](ControllerConfig& o, const std::string& v) -> Status {
    auto b = parse_bool(v);
    if (!b.ok()) return b.error();
    o.*field = *b;
    return {};
  };
}

Apply duration(Millis ControllerConfig::*field, Millis minimum) {
  return [field, minimum](ControllerConfig& o, const std::string& v) -> Status {
    auto d = parse_duration(v);
    if (!d.ok()) return d.error();
    if (*d < minimum) return invalid("must be at least " + format_duration(minimum) + ", not " + shown(v));
    o.*field = *d;
    return {};
  };
}

Apply integer(int ControllerConfig::*field, long long minimum) {
  return [field, minimum](ControllerConfig& o, const std::string& v) -> Status {
    auto n = parse_integer(v);
    if (!n.ok()) return n.error();
    if (*n < minimum) return invalid("must be at least " + std::to_string(minimum) + ", not " + v);
    if (*n > INT_MAX) return invalid("is too large: " + v);
    o.*field = static_cast<int>(*n);
    return {};
  };
}

Apply positive_real(double ControllerConfig::*field) {
  return [field](ControllerConfig& o, const std::string& v) -> Status {
    auto n = parse_real(v);
    if (!n.ok()) return n.error();
    if (*n <= 0) return invalid("must be greater than 0, not " + v);
    o.*field = *n;
    return {};
  };
}

Apply bind_address(std::string ControllerConfig::*field) {
  return [field](ControllerConfig& o, const std::string& v) -> Status {
    auto parsed = parse_bind_address(v);
    if (!parsed.ok())
      return invalid(shown(v) + " is not a bind address (" + parsed.error().message +
                     "); use host:port, :port for every interface, or 0 to turn the server off");
    o.*field = v;
    return {};
  };
}

// A row of the shared table of connection flags (lock/connection.h), applied to
// ControllerConfig::elasticsearch.
Apply connection(const lock::ConnectionFlag& flag) {
  return [&flag](ControllerConfig& o, const std::string& v) { return flag.apply(o.elasticsearch, v); };
}

Kind kind_of(lock::ConnectionFlag::Kind kind) {
  switch (kind) {
    case lock::ConnectionFlag::Kind::kText:
      return Kind::kText;
    case lock::ConnectionFlag::Kind::kList:
      return Kind::kList;
    case lock::ConnectionFlag::Kind::kBool:
      return Kind::kBool;
    case lock::ConnectionFlag::Kind::kDuration:
      return Kind::kDuration;
  }
  return Kind::kText;
}

Apply log_format() {
  return [](ControllerConfig& o, const std::string& v) -> Status {
    log::Format format;
    if (!log::parse_format(v, format)) return invalid("must be text or json, not " + shown(v));
    o.log_format = v;
    return {};
  };
}

Apply log_level() {
  return [](ControllerConfig& o, const std::string& v) -> Status {
    log::Level level;
    if (!log::parse_level(v, level)) return invalid("must be debug, info, warn or error, not " + shown(v));
    o.log_level = v;
    return {};
  };
}

Apply identity() {
  return [](ControllerConfig& o, const std::string& v) -> Status {
    if (auto s = lock::validate_identity("identity", v, /*allow_empty=*/true); !s.ok()) return s.error();
    o.identity = v;
    return {};
  };
}

std::string bool_text(bool value) {
  return value ? "true" : "false";
}

using O = ControllerConfig;

std::vector<FlagSpec> kubernetes_flags(const O& defaults) {
  return {
      {"kubeconfig", Kind::kText, Group::kKubernetes, "FILE",
       "in-cluster, else $KUBECONFIG, else ~/.kube/config", "how to reach the API server",
       text(&O::kubeconfig)},
      {"namespace", Kind::kList, Group::kKubernetes, "NS", "all namespaces",
       "watch only this namespace (repeatable)", list(&O::namespaces)},
      {"kube-api-qps", Kind::kReal, Group::kKubernetes, "Q", number_text(defaults.kube_api_qps),
       "average requests per second this controller sends to the API server",
       positive_real(&O::kube_api_qps)},
      {"kube-api-burst", Kind::kInteger, Group::kKubernetes, "B", std::to_string(defaults.kube_api_burst),
       "requests allowed at once above that rate", integer(&O::kube_api_burst, 1)},
  };
}

// The rows of the connection flags, shared with the eslease tool.
std::vector<FlagSpec> elasticsearch_flags() {
  std::vector<FlagSpec> specs;
  for (const lock::ConnectionFlag& flag : lock::connection_flags()) {
    specs.push_back({flag.name, kind_of(flag.kind), Group::kElasticsearch, flag.value_name, flag.default_text,
                     flag.help, connection(flag)});
  }
  return specs;
}

std::vector<FlagSpec> serving_flags(const O& defaults) {
  return {
      {"metrics-bind-address", Kind::kText, Group::kServing, "ADDR", defaults.metrics_bind_address,
       "where /metrics is served (host:port, :port, or 0 for off)", bind_address(&O::metrics_bind_address)},
      {"health-probe-bind-address", Kind::kText, Group::kServing, "ADDR", defaults.health_probe_bind_address,
       "where /healthz and /readyz are served (0 for off)", bind_address(&O::health_probe_bind_address)},
  };
}

std::vector<FlagSpec> leader_election_flags(const O& defaults) {
  return {
      {"leader-elect", Kind::kBool, Group::kLeaderElection, "", bool_text(defaults.leader_elect),
       "run several replicas: one leads through a coordination.k8s.io Lease", boolean(&O::leader_elect)},
      {"leader-election-id", Kind::kText, Group::kLeaderElection, "NAME", defaults.leader_election_id,
       "name of that Lease", text(&O::leader_election_id, /*allow_empty=*/false)},
      {"leader-election-namespace", Kind::kText, Group::kLeaderElection, "NS",
       "the pod's namespace, else default", "namespace of that Lease", text(&O::leader_election_namespace)},
      {"leader-election-lease-duration", Kind::kDuration, Group::kLeaderElection, "D",
       format_duration(defaults.leader_election_lease_duration),
       "how long standbys wait before taking over from a silent leader",
       duration(&O::leader_election_lease_duration, Millis(1))},
      {"leader-election-renew-deadline", Kind::kDuration, Group::kLeaderElection, "D",
       format_duration(defaults.leader_election_renew_deadline),
       "how long the leader keeps trying to renew before it steps down",
       duration(&O::leader_election_renew_deadline, Millis(1))},
      {"leader-election-retry-period", Kind::kDuration, Group::kLeaderElection, "D",
       format_duration(defaults.leader_election_retry_period), "how often candidates try to acquire or renew",
       duration(&O::leader_election_retry_period, Millis(1))},
  };
}

std::vector<FlagSpec> behaviour_flags(const O& defaults) {
  return {
      {"workers", Kind::kInteger, Group::kBehaviour, "N", std::to_string(defaults.workers),
       "locks reconciled at once", integer(&O::workers, 1)},
      {"liveness-takeover", Kind::kBool, Group::kBehaviour, "", bool_text(defaults.liveness_takeover),
       "=false hands a lock over only when it expires (TTL), as lock libraries do; by default a dead "
       "holder's lock moves at once",
       boolean(&O::liveness_takeover)},
      {"node-heartbeat-grace", Kind::kDuration, Group::kBehaviour, "D",
       format_duration(defaults.node_heartbeat_grace),
       "a holder whose node's heartbeat (its kubelet's Lease in kube-node-lease, renewed every 10s) "
       "is not seen renewed this long is presumed dead (NodeLost) and its lock handed over once the "
       "validity published to it ends; 0 turns this off (node readiness alone then counts)",
       duration(&O::node_heartbeat_grace, Millis(0))},
      {"holds-annotation", Kind::kBool, Group::kBehaviour, "", bool_text(defaults.holds_annotation),
       "=false stops writing the eslease.io/holds annotation on holder pods (and needs no right to "
       "patch pods); holders then learn of their grant from their Lease (the eslease tool)",
       boolean(&O::holds_annotation)},
      {"identity", Kind::kText, Group::kBehaviour, "ID", "$POD_NAME, else the host name + a random suffix",
       "this replica's name in the leader-election Lease and events; lock documents name it, with a suffix "
       "of the process's own, as their writer",
       identity()},
  };
}

// Logging, then the flags that only make sense on the command line.
std::vector<FlagSpec> logging_and_general_flags(const O& defaults) {
  return {
      {"log-format", Kind::kText, Group::kLogging, "text|json", defaults.log_format, "log line format",
       log_format()},
      {"log-level", Kind::kText, Group::kLogging, "debug|info|warn|error", defaults.log_level,
       "least severe level logged", log_level()},
      {"config", Kind::kText, Group::kGeneral, "FILE", "none",
       "read settings from this YAML file (also $ESLEASE_CONFIG)", text(&O::config_file)},
      {"version", Kind::kBool, Group::kGeneral, "", "", "print the version and exit", boolean(&O::version)},
      {"help", Kind::kBool, Group::kGeneral, "", "", "print this help and exit (also -h)", boolean(&O::help)},
  };
}

// The groups in the order --help lists them.
std::vector<FlagSpec> make_flag_specs() {
  const O defaults;
  std::vector<FlagSpec> specs;
  for (const std::vector<FlagSpec>& group :
       {kubernetes_flags(defaults), elasticsearch_flags(), serving_flags(defaults),
        leader_election_flags(defaults), behaviour_flags(defaults), logging_and_general_flags(defaults)}) {
    specs.insert(specs.end(), group.begin(), group.end());
  }
  return specs;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<FlagSpec>& flag_specs() {
  static const std::vector<FlagSpec> specs = make_flag_specs();
  return specs;
}

const FlagSpec* find_flag(std::string_view name) {
  for (const FlagSpec& spec : flag_specs())
    if (name == spec.name) return &spec;
  return nullptr;
}

const std::vector<OptionSyntax>& flag_syntax() {
  static const std::vector<OptionSyntax> syntax = [] {
    std::vector<OptionSyntax> out;
    for (const FlagSpec& spec : flag_specs()) {
      const bool help = std::string_view(spec.name) == "help";
      out.push_back({spec.name, help ? 'h' : '\0', spec.kind != Kind::kBool, spec.value_name});
    }
    return out;
  }();
  return syntax;
}

// Flags that only make sense on the command line: an environment that happens to hold
// ESLEASE_VERSION (a common image label) must not turn the controller into `--version`.
bool command_line_only(const FlagSpec& spec) {
  return spec.group == Group::kGeneral;
}

// People reach for a password flag first; tell them where credentials go instead.
std::optional<std::string> refused_secret(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> kRefused = {
      {"es-password", "--es-password-file"},         {"password", "--es-password-file"},
      {"es-api-key", "--es-api-key-file"},           {"api-key", "--es-api-key-file"},
      {"es-bearer-token", "--es-bearer-token-file"}, {"es-token", "--es-bearer-token-file"},
      {"token", "--es-bearer-token-file"},
  };
  auto it = kRefused.find(name);
  if (it == kRefused.end()) return std::nullopt;
  return it->second;
}

// " (did you mean --workers?)" for a near miss, else "".
std::string suggestion(std::string_view name, std::string_view prefix) {
  const FlagSpec* best = nullptr;
  std::size_t best_distance = 3;
  for (const FlagSpec& spec : flag_specs()) {
    const std::size_t d = edit_distance(name, spec.name);
    if (d < best_distance) {
      best = &spec;
      best_distance = d;
    }
  }
  return best ? " (did you mean " + std::string(prefix) + best->name + "?)" : "";
}

// ------------------------------------------------------------------------------------------
// Help.

namespace {

const char* group_title(Group group) {
  switch (group) {
    case Group::kKubernetes:
      return "Kubernetes";
    case Group::kElasticsearch:
      return "Elasticsearch";
    case Group::kServing:
      return "Serving";
    case Group::kLeaderElection:
      return "Leader election";
    case Group::kBehaviour:
      return "Behaviour";
    case Group::kLogging:
      return "Logging";
    case Group::kGeneral:
      return "General";
  }
  return "";
}

constexpr std::size_t kColumn = 40;
constexpr std::size_t kWidth = 96;

constexpr std::string_view kIntroduction =
    "eslease-controller turns Lease resources into Elasticsearch locks with fencing tokens, and hands a\n"
    "lock to the next claim within milliseconds when its holder pod dies.\n"
    "\n"
    "Usage: eslease-controller --es URL [flags]\n"
    "   e.g. eslease-controller --es https://es-0:9200 --es-api-key-file /secrets/key --leader-elect\n";

constexpr std::string_view kSourcesAndExitCodes =
    "\n"
    "Where settings come from:\n"
    "  A flag beats the environment, which beats the config file. Every flag except --config,\n"
    "  --version and --help can also be set\n"
    "  - in the environment, as ESLEASE_ + the flag in upper snake case, repeatable flags\n"
    "    comma-separated: ESLEASE_METRICS_BIND_ADDRESS=:9090 ESLEASE_ES=http://a:9200,http://b:9200\n"
    "  - in a YAML file given with --config FILE (or ESLEASE_CONFIG), keyed by the flag names\n"
    "    without the dashes:\n"
    "        es: [http://a:9200, http://b:9200]\n"
    "        metrics-bind-address: \":9090\"\n"
    "        leader-elect: true\n"
    "        leader-election-lease-duration: 15s\n"
    "        workers: 8\n"
    "  Booleans: --flag alone, or --flag=VALUE with true, t, 1, false, f or 0 in any letter case.\n"
    "  Durations: 500ms, 10s, 2m, 1h, 1m30s.\n"
    "  Credentials are only read from files (--es-password-file and friends), never from a\n"
    "  flag or a variable, and are never logged.\n"
    "\n"
    "Exit codes:\n"
    "  0  clean shutdown after SIGTERM or SIGINT (Elasticsearch locks stay with their holders)\n"
    "  1  cannot start: no Kubernetes configuration, unreadable credentials, unusable lock index\n"
    "  2  usage error: a bad flag, environment variable or config file\n";

// "  --leader-elect" and its help; a boolean that defaults to true is shown as the way to
// turn it off (--liveness-takeover=false).
std::string flag_line(const FlagSpec& spec) {
  std::string left = "  --" + std::string(spec.name);
  if (spec.kind == Kind::kBool && spec.default_text == "true") left += "=false";
  if (*spec.value_name) left += " " + std::string(spec.value_name);
  return option_help_line(left, spec.help, spec.default_text, kColumn, kWidth);
}

}  // namespace

std::string usage() {
  std::string out(kIntroduction);
  for (Group group : {Group::kKubernetes, Group::kElasticsearch, Group::kServing, Group::kLeaderElection,
                      Group::kBehaviour, Group::kLogging, Group::kGeneral}) {
    out += "\n" + std::string(group_title(group)) + ":\n";
    for (const FlagSpec& spec : flag_specs())
      if (spec.group == group) out += flag_line(spec);
  }
  return out + std::string(kSourcesAndExitCodes);
}

}  // namespace eslease::config
