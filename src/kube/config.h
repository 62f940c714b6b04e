// How to reach and authenticate to the API server: from a kubeconfig file (as kubectl
// reads it) or from inside a pod (service-account files). Plain data; credentials are
// never logged, and describe() leaves them out.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "http/transport.h"

namespace eslease::kube {

struct RestConfig {
  std::string server;  // scheme://host[:port][/prefix], no trailing slash
  http::TlsOptions tls;
  std::string token;       // static bearer token
  std::string token_file;  // bearer token re-read as the file rotates (wins over token)
  std::string username;    // basic auth
  std::string password;
  std::string ns = "default";  // the context's (or the pod's) namespace
  std::string context;         // the kubeconfig context used; empty in-cluster

  // Server, context, namespace and which kinds of credentials are set, never their values.
  std::string describe() const;
};

// Parses kubeconfig text. Relative file paths in it are resolved against `base_dir` (the
// kubeconfig's folder). `context` overrides current-context when not empty.
Result<RestConfig> parse_kubeconfig(std::string_view yaml, const std::filesystem::path& base_dir,
                                    const std::string& context = "");
Result<RestConfig> load_kubeconfig(const std::filesystem::path& path, const std::string& context = "");

struct InClusterOptions {
  std::filesystem::path service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // Environment lookup (KUBERNETES_SERVICE_HOST/PORT); std::getenv when empty.
  std::function<std::optional<std::string>(const std::string&)> getenv;
};
Result<RestConfig> load_in_cluster(const InClusterOptions& options = {});

// kubectl's order: an explicit kubeconfig path, else in-cluster when running in a pod,
// else $KUBECONFIG (its first entry), else ~/.kube/config.
Result<RestConfig> load_default(const std::filesystem::path& explicit_path = {},
                                const std::string& context = "");

}  // namespace eslease::kube
