#include "config/controller_options.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/duration.h"

namespace eslease::config {
namespace {

enum class Kind { kString, kStrings, kBool, kDuration, kInt, kDouble };

struct Flag {
  const char* name;
  Kind kind;
  std::function<Status(ControllerOptions&, const std::string&)> set;
};

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Result<bool> parse_bool(const std::string& value) {
  std::string v = value;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return invalid("\"" + value + "\" is not true or false");
}

template <typename T>
Result<T> parse_number(const std::string& value) {
  std::istringstream in(value);
  T out{};
  in >> out;
  if (in.fail() || !in.eof()) return invalid("\"" + value + "\" is not a number");
  return out;
}

std::vector<Flag> flags() {
  auto str = [](std::string ControllerOptions::*field) {
    return [field](ControllerOptions& o, const std::string& v) -> Status {
      o.*field = v;
      return {};
    };
  };
  auto strs = [](std::vector<std::string> ControllerOptions::*field) {
    return [field](ControllerOptions& o, const std::string& v) -> Status {
      if (v.empty()) return invalid("needs a value");
      (o.*field).push_back(v);
      return {};
    };
  };
  auto boolean = [](bool ControllerOptions::*field) {
    return [field](ControllerOptions& o, const std::string& v) -> Status {
      auto b = parse_bool(v);
      if (!b.ok()) return b.error();
      o.*field = *b;
      return {};
    };
  };
  auto duration = [](Millis ControllerOptions::*field) {
    return [field](ControllerOptions& o, const std::string& v) -> Status {
      auto d = cli::parse_duration(v);
      if (!d.ok()) return d.error();
      o.*field = *d;
      return {};
    };
  };
  return {
      {"kubeconfig", Kind::kString, str(&ControllerOptions::kubeconfig)},
      {"es", Kind::kStrings, strs(&ControllerOptions::es_hosts)},
      {"index", Kind::kString, str(&ControllerOptions::index)},
      {"es-ca-file", Kind::kString, str(&ControllerOptions::es_ca_file)},
      {"es-username", Kind::kString, str(&ControllerOptions::es_username)},
      {"es-password-file", Kind::kString, str(&ControllerOptions::es_password_file)},
      {"es-api-key-file", Kind::kString, str(&ControllerOptions::es_api_key_file)},
      {"es-bearer-token-file", Kind::kString, str(&ControllerOptions::es_bearer_token_file)},
      {"es-insecure-skip-tls-verify", Kind::kBool, boolean(&ControllerOptions::es_insecure_skip_tls_verify)},
      {"es-timeout", Kind::kDuration, duration(&ControllerOptions::es_timeout)},
      {"metrics-bind-address", Kind::kString, str(&ControllerOptions::metrics_bind_address)},
      {"health-probe-bind-address", Kind::kString, str(&ControllerOptions::health_probe_bind_address)},
      {"leader-elect", Kind::kBool, boolean(&ControllerOptions::leader_elect)},
      {"leader-election-id", Kind::kString, str(&ControllerOptions::leader_election_id)},
      {"leader-election-namespace", Kind::kString, str(&ControllerOptions::leader_election_namespace)},
      {"leader-election-lease-duration", Kind::kDuration,
       duration(&ControllerOptions::leader_election_lease_duration)},
      {"leader-election-renew-deadline", Kind::kDuration,
       duration(&ControllerOptions::leader_election_renew_deadline)},
      {"leader-election-retry-period", Kind::kDuration,
       duration(&ControllerOptions::leader_election_retry_period)},
      {"namespace", Kind::kStrings, strs(&ControllerOptions::namespaces)},
      {"workers", Kind::kInt,
       [](ControllerOptions& o, const std::string& v) -> Status {
         auto n = parse_number<int>(v);
         if (!n.ok()) return n.error();
         if (*n < 1) return invalid("must be at least 1");
         o.workers = *n;
         return {};
       }},
      {"kube-api-qps", Kind::kDouble,
       [](ControllerOptions& o, const std::string& v) -> Status {
         auto n = parse_number<double>(v);
         if (!n.ok()) return n.error();
         if (*n <= 0) return invalid("must be positive");
         o.kube_api_qps = *n;
         return {};
       }},
      {"kube-api-burst", Kind::kInt,
       [](ControllerOptions& o, const std::string& v) -> Status {
         auto n = parse_number<int>(v);
         if (!n.ok()) return n.error();
         if (*n < 1) return invalid("must be at least 1");
         o.kube_api_burst = *n;
         return {};
       }},
      {"liveness-takeover", Kind::kBool, boolean(&ControllerOptions::liveness_takeover)},
      {"identity", Kind::kString, str(&ControllerOptions::identity)},
      {"log-format", Kind::kString,
       [](ControllerOptions& o, const std::string& v) -> Status {
         if (v != "text" && v != "json") return invalid("must be text or json");
         o.log_format = v;
         return {};
       }},
      {"log-level", Kind::kString,
       [](ControllerOptions& o, const std::string& v) -> Status {
         if (v != "debug" && v != "info" && v != "warn" && v != "error")
           return invalid("must be debug, info, warn or error");
         o.log_level = v;
         return {};
       }},
      {"version", Kind::kBool, boolean(&ControllerOptions::version)},
      {"help", Kind::kBool, boolean(&ControllerOptions::help)},
  };
}

std::string env_name(const std::string& flag) {
  std::string out = "ESLEASE_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(value);
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// One value per source, applied in order file < environment < flags. A repeatable flag
// given in a higher source replaces the lower source's list.
using Values = std::map<std::string, std::vector<std::string>>;

Result<Values> read_file(const std::string& path, const std::vector<Flag>& known) {
  std::ifstream in(path);
  if (!in) return invalid("cannot read config file " + path);
  std::stringstream text;
  text << in.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception& e) {
    return invalid("config file " + path + " is not valid YAML: " + e.what());
  }
  Values values;
  if (root.IsNull()) return values;
  if (!root.IsMap()) return invalid("config file " + path + " must be a map of flag names to values");
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>("");
    auto flag = std::find_if(known.begin(), known.end(), [&](const Flag& f) { return key == f.name; });
    if (flag == known.end() || key == "help" || key == "version")
      return invalid("config file " + path + ": unknown key \"" + key + "\"");
    const YAML::Node& value = item.second;
    if (value.IsSequence()) {
      if (flag->kind != Kind::kStrings)
        return invalid("config file " + path + ": \"" + key + "\" takes one value");
      for (const auto& v : value) {
        if (!v.IsScalar())
          return invalid("config file " + path + ": \"" + key + "\" must be a list of strings");
        values[key].push_back(v.as<std::string>());
      }
    } else if (value.IsScalar()) {
      values[key].push_back(value.as<std::string>());
    } else {
      return invalid("config file " + path + ": \"" + key + "\" has the wrong type");
    }
  }
  return values;
}

}  // namespace

Result<ControllerOptions> load_controller_options(const std::vector<std::string>& args,
                                                  const Environment& env) {
  const std::vector<Flag> known = flags();
  auto find = [&](const std::string& name) {
    return std::find_if(known.begin(), known.end(), [&](const Flag& f) { return name == f.name; });
  };
  Values from_flags;
  std::string config_file;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) return invalid("unexpected argument \"" + arg + "\"");
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "config") {
      if (!value) {
        if (i + 1 >= args.size()) return invalid("--config needs a file");
        value = args[++i];
      }
      config_file = *value;
      continue;
    }
    auto flag = find(name);
    if (flag == known.end()) return invalid("unknown flag --" + name);
    if (!value) {
      if (flag->kind == Kind::kBool) {
        value = "true";
      } else {
        if (i + 1 >= args.size()) return invalid("--" + name + " needs a value");
        value = args[++i];
      }
    }
    from_flags[name].push_back(*value);
  }
  if (config_file.empty()) {
    if (auto from_env = env("ESLEASE_CONFIG")) config_file = *from_env;
  }
  Values merged;
  if (!config_file.empty()) {
    auto file = read_file(config_file, known);
    if (!file.ok()) return file.error();
    merged = std::move(*file);
  }
  for (const Flag& flag : known) {
    if (auto value = env(env_name(flag.name))) {
      merged[flag.name] =
          flag.kind == Kind::kStrings ? split_commas(*value) : std::vector<std::string>{*value};
    }
  }
  for (auto& [name, values] : from_flags) merged[name] = values;

  ControllerOptions options;
  for (const auto& [name, values] : merged) {
    auto flag = find(name);
    for (const std::string& value : values) {
      if (auto s = flag->set(options, value); !s.ok()) return invalid("--" + name + ": " + s.error().message);
    }
  }
  if (options.help || options.version) return options;
  if (options.es_hosts.empty()) return invalid("--es is required: the Elasticsearch URL (repeatable)");
  for (const auto& [what, value] :
       {std::pair{"--metrics-bind-address", options.metrics_bind_address},
        std::pair{"--health-probe-bind-address", options.health_probe_bind_address}}) {
    if (value == "0") continue;
    const auto colon = value.rfind(':');
    auto port =
        colon == std::string::npos ? Result<int>(invalid("")) : parse_number<int>(value.substr(colon + 1));
    if (!port.ok() || *port < 0 || *port > 65535)
      return invalid(std::string(what) + ": \"" + value + "\" must be host:port, :port or 0 (off)");
  }
  const auto& lease = options.leader_election_lease_duration;
  const auto& deadline = options.leader_election_renew_deadline;
  const auto& retry = options.leader_election_retry_period;
  if (!(lease > deadline))
    return invalid("--leader-election-lease-duration must be greater than the renew deadline");
  if (!(deadline.count() > retry.count() * 1.2))
    return invalid("--leader-election-renew-deadline must be greater than 1.2 x the retry period");
  if (retry <= Millis(0)) return invalid("--leader-election-retry-period must be positive");
  return options;
}

std::string controller_usage() {
  return R"(eslease-controller: turns Lease resources into Elasticsearch locks with fencing tokens,
and hands a lock to the next claim within milliseconds when its holder pod dies.

Usage: eslease-controller --es URL [flags]

Kubernetes:
  --kubeconfig FILE                        default: in-cluster, else $KUBECONFIG, else ~/.kube/config
  --namespace NS                           watch only this namespace (repeatable; default: all)
  --kube-api-qps Q                         client-side request rate to the API server (default 200)
  --kube-api-burst B                       requests allowed in a burst (default 400)

Elasticsearch:
  --es URL                                 an Elasticsearch host (repeatable; required)
  --index NAME                             lock index, created at start when missing (default eslease-locks)
  --es-ca-file FILE                        CA bundle to verify the servers' certificates
  --es-username NAME                       basic auth user; the password comes from --es-password-file
  --es-password-file FILE                  basic auth password (credentials only ever come from files)
  --es-api-key-file FILE                   API key (id:key or the encoded form)
  --es-bearer-token-file FILE              bearer token
  --es-insecure-skip-tls-verify            do not verify TLS certificates (never in production)
  --es-timeout D                           per-request timeout (default 10s)

Serving:
  --metrics-bind-address ADDR              Prometheus /metrics (default :8080; 0 turns it off)
  --health-probe-bind-address ADDR         /healthz and /readyz (default :8081; 0 turns it off)

Leader election (several replicas, one reconciles):
  --leader-elect                           elect a leader through a coordination.k8s.io Lease (default false)
  --leader-election-id NAME                name of that Lease (default eslease-controller)
  --leader-election-namespace NS           its namespace (default: the pod's, else default)
  --leader-election-lease-duration D       default 15s
  --leader-election-renew-deadline D       default 10s
  --leader-election-retry-period D         default 2s

Behaviour:
  --workers N                              locks reconciled at once (default 4)
  --liveness-takeover=false                hand locks over only when they expire (TTL), as TTL-based
                                           lock libraries do; default true: a dead holder's lock moves at once
  --identity ID                            this replica's name (default: $POD_NAME or the host name,
                                           plus a random suffix)

Logging:
  --log-format text|json                   default text
  --log-level debug|info|warn|error        default info

  --config FILE                            read flags from a YAML file (keys: flag names without dashes)
  --version  --help

Every flag can also be set in the environment as ESLEASE_ + the flag in upper snake case
(ESLEASE_METRICS_BIND_ADDRESS=:9090; repeatable flags comma-separated). A flag beats the
environment, which beats the config file.

Exit codes: 0 after a clean shutdown (SIGTERM or SIGINT), 1 when it cannot start (no
kubeconfig, unreadable credentials, Elasticsearch index unusable), 2 on a usage error.
)";
}

}  // namespace eslease::config
