// The eslease tool in Kubernetes mode: a pod declares Lease objects and the controller
// decides. acquire creates the pod's claim and waits by watching until it is Held; release
// deletes a Lease and waits until the controller has released its lock; status shows
// holders and queues; run holds a claim while a command runs.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/options.h"
#include "common/result.h"
#include "kube/api.h"

namespace eslease::cli {

struct KubeConnection {
  std::unique_ptr<kube::Api> api;
  std::string default_namespace;  // the service account's, or the kubeconfig context's
};

// Opens the API connection for the options: the --kubeconfig file, else the in-cluster
// service account. kInvalidArgument when neither is there (a usage error).
using KubeConnector = std::function<Result<KubeConnection>(const KubeOptions&)>;

KubeConnector kubernetes_connector();

struct Environment;  // cli.h

// Runs a parsed Kubernetes-mode invocation; returns the exit code.
int run_kubernetes_mode(const Options& options, Environment& env);

}  // namespace eslease::cli
