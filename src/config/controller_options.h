// The controller's configuration: every flag of `eslease-controller`, set on the command
// line, in the environment (ESLEASE_ + the flag in upper snake case; repeatable flags as a
// comma-separated list) or in a YAML file (--config FILE, keys are the flag names without
// dashes). A flag beats the environment, which beats the file. Pure apart from reading the
// config file: every rule is unit-tested.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace eslease::config {

struct ControllerOptions {
  std::string kubeconfig;
  std::vector<std::string> es_hosts;
  std::string index = "eslease-locks";
  std::string es_ca_file;
  std::string es_username;
  std::string es_password_file;
  std::string es_api_key_file;
  std::string es_bearer_token_file;
  bool es_insecure_skip_tls_verify = false;
  Millis es_timeout{10000};
  std::string metrics_bind_address = ":8080";
  std::string health_probe_bind_address = ":8081";
  bool leader_elect = false;
  std::string leader_election_id = "eslease-controller";
  std::string leader_election_namespace;  // empty: the pod's namespace, else "default"
  Millis leader_election_lease_duration{15000};
  Millis leader_election_renew_deadline{10000};
  Millis leader_election_retry_period{2000};
  std::vector<std::string> namespaces;
  int workers = 4;
  double kube_api_qps = 200;
  int kube_api_burst = 400;
  bool liveness_takeover = true;
  std::string identity;  // empty: $POD_NAME or the host name, plus a random suffix
  std::string log_format = "text";
  std::string log_level = "info";
  bool version = false;
  bool help = false;
};

using Environment = std::function<std::optional<std::string>(const std::string& name)>;

// kInvalidArgument with a message naming the flag, variable, key or file at fault.
Result<ControllerOptions> load_controller_options(const std::vector<std::string>& args,
                                                  const Environment& env);

std::string controller_usage();

}  // namespace eslease::config
