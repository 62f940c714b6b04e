// Which pod the eslease tool acts for in Kubernetes mode: --pod, else the pod it runs in as
// the downward API describes it (POD_NAME / POD_NAMESPACE / POD_UID in the environment, or
// the files name / namespace / uid under --podinfo-dir, default /etc/podinfo). Pure: the
// environment and the file system are injected.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/result.h"

namespace eslease::cli {

inline constexpr const char* kDefaultPodinfoDir = "/etc/podinfo";

using Getenv = std::function<std::optional<std::string>(const std::string&)>;
// The trimmed contents of a file, nullopt when it cannot be read.
using ReadSmallFile = std::function<std::optional<std::string>(const std::string& path)>;

struct PodIdentitySources {
  std::string pod_flag;          // --pod
  std::string namespace_flag;    // --namespace
  std::string podinfo_dir;       // --podinfo-dir (empty: the default)
  std::string config_namespace;  // the service account's or the kubeconfig context's
  Getenv getenv;
  ReadSmallFile read_file;
};

struct PodIdentity {
  std::string name;
  std::string ns;
  std::string uid;          // empty when the downward API does not give it: read from the pod
  std::string name_source;  // for messages: "--pod", "POD_NAME", "/etc/podinfo/name"
};

// The namespace commands work in: --namespace, else the pod's (POD_NAMESPACE or the
// downward-API file), else the connection's.
std::string resolve_namespace(const PodIdentitySources& sources);

// kInvalidArgument, naming every way to give it, when no pod name is known.
Result<PodIdentity> resolve_pod_identity(const PodIdentitySources& sources);

// std::getenv, and a reader of small files, for production.
Getenv system_getenv();
ReadSmallFile system_read_small_file();

}  // namespace eslease::cli
