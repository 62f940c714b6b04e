// The controller's configuration: every flag of `eslease-controller`, set on the command
// line, in the environment (ESLEASE_ + the flag in upper snake case; repeatable flags as a
// comma-separated list) or in a YAML file (--config FILE, keys are the flag names without
// the dashes). A flag beats the environment, which beats the file.
//
// load_controller_config() is pure apart from reading the --config file: the environment
// is injected, so every rule is unit-tested. Defaults that depend on where the process
// runs (the pod's namespace, the host name, a random suffix) are resolved afterwards by
// resolve_runtime_defaults(), kept apart so the parser never reads the machine.
#pragma once

#include <concepts>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/controller_options.h"
#include "kube/instrumented_api.h"
#include "kube/leader_election.h"
#include "lock/connection.h"

namespace eslease::config {

// The defaults are the modules' own (the controller's options, the leader elector's and the
// rate limiter's, the connection settings), so each is written once.
struct ControllerConfig {
  // Kubernetes.
  std::string kubeconfig;               // empty: in-cluster, else $KUBECONFIG, else ~/.kube/config
  std::vector<std::string> namespaces;  // empty: every namespace
  double kube_api_qps = kube::InstrumentedApiOptions{}.qps;
  int kube_api_burst = kube::InstrumentedApiOptions{}.burst;
  // Elasticsearch: the --es* flags and --index, as the eslease tool reads them too.
  lock::ConnectionSettings elasticsearch;
  // Serving: "host:port", ":port" (every interface) or "0" (off).
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  // Leader election.
  bool leader_elect = controller::ControllerOptions{}.leader_elect;
  std::string leader_election_id = "eslease-controller";
  std::string leader_election_namespace;  // empty until resolve_runtime_defaults()
  Millis leader_election_lease_duration = kube::LeaderElectionConfig{}.lease_duration;
  Millis leader_election_renew_deadline = kube::LeaderElectionConfig{}.renew_deadline;
  Millis leader_election_retry_period = kube::LeaderElectionConfig{}.retry_period;
  // Behaviour.
  int workers = controller::ControllerOptions{}.workers;
  bool liveness_takeover = controller::ControllerOptions{}.liveness_takeover;
  // A holder whose node's kubelet heartbeat has not been seen this long is presumed dead; 0: off.
  Millis node_heartbeat_grace = controller::ControllerOptions{}.node_heartbeat_grace;
  // Writes eslease.io/holds on holder pods; off, the controller needs no right to patch pods.
  bool holds_annotation = controller::ControllerOptions{}.holds_annotation;
  std::string identity;  // empty until resolve_runtime_defaults()
  // What this process writes as `writer` into lock documents: the identity and a suffix of
  // its own, so even a container restarted under the same identity tells its writes from
  // its predecessor's. Set by resolve_runtime_defaults().
  std::string writer;
  // Logging: names log::parse_format / log::parse_level accept.
  std::string log_format = "text";
  std::string log_level = "info";
  // One-shot requests: print and exit 0 without validating the rest.
  bool version = false;
  bool help = false;
  // The YAML file the options were read from, if any (for the start-up log line).
  std::string config_file;
};

class EnvironmentVariables;

// A callable that looks a variable up: std::optional<std::string>(const std::string&).
template <typename F>
concept EnvironmentLookup = !std::same_as<std::decay_t<F>, EnvironmentVariables> &&
                            std::is_invocable_r_v<std::optional<std::string>, const F&, const std::string&>;

// The process environment as the loader sees it. Tests build one from pairs; main uses
// EnvironmentVariables::process(). Any EnvironmentLookup converts to one.
class EnvironmentVariables {
 public:
  using Lookup = std::function<std::optional<std::string>(const std::string& name)>;

  EnvironmentVariables() = default;  // nothing is set
  EnvironmentVariables(std::initializer_list<std::pair<const std::string, std::string>> values);
  explicit EnvironmentVariables(std::map<std::string, std::string> values);
  // Implicit, so a caller can pass a lambda where an EnvironmentVariables is expected.
  template <EnvironmentLookup F>
  EnvironmentVariables(F lookup) : lookup_(std::move(lookup)) {}  // NOLINT(google-explicit-constructor)

  // getenv() of the running process.
  static EnvironmentVariables process();

  std::optional<std::string> get(const std::string& name) const;

 private:
  Lookup lookup_;
};

// "ESLEASE_" + the flag name in upper snake case: "metrics-bind-address" ->
// "ESLEASE_METRICS_BIND_ADDRESS".
std::string environment_variable(const std::string& flag);

// Reads `args` (argv without the program name), `env` and the --config file (or
// $ESLEASE_CONFIG), and validates the result. Every mistake is kInvalidArgument with a
// message naming the flag, variable, file key or file at fault, for main to print before
// exiting 2. With --help or --version nothing else is validated.
Result<ControllerConfig> load_controller_config(const std::vector<std::string>& args,
                                                const EnvironmentVariables& env);

// The longest pause in session renewals these settings allow (api::longest_renewal_pause:
// an unclean leader failover, or one Elasticsearch request at --es-timeout).
Millis longest_renewal_pause(const ControllerConfig& options);
// Settings that work but would stop healthy holders for nothing: a renewal pause longer
// than what `eslease run` rides out with its defaults on a Lease of the default duration.
// Each entry is a sentence for the start-up log.
std::vector<std::string> timing_warnings(const ControllerConfig& options);

// What the runtime defaults are made of; read_runtime_facts() gathers them.
struct RuntimeFacts {
  std::string pod_name;       // $POD_NAME (the downward API), may be empty
  std::string host_name;      // gethostname()
  std::string pod_namespace;  // the service account's namespace file, may be empty
  std::string random_suffix;  // keeps two replicas on one host apart
};

inline constexpr const char* kServiceAccountNamespaceFile =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

// Reads $POD_NAME from `env`, the host name, `namespace_file` (absent is fine: not in a
// pod) and draws a random suffix.
RuntimeFacts read_runtime_facts(const EnvironmentVariables& env,
                                const std::string& namespace_file = kServiceAccountNamespaceFile);

// Fills what the user left empty: identity = $POD_NAME, else the host name + "-" + the
// suffix; writer = the identity + the suffix; leader-election namespace = the pod's
// namespace, else "default". Pure.
void resolve_runtime_defaults(ControllerConfig& options, const RuntimeFacts& facts);

// The --help text: every flag by group with its default and what it does, the
// environment and config-file forms, and the exit codes.
std::string usage();

}  // namespace eslease::config
