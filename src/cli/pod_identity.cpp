#include "cli/pod_identity.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/text.h"

namespace eslease::cli {
namespace {

std::optional<std::string> nonempty(std::optional<std::string> value) {
  if (!value) return std::nullopt;
  std::string trimmed = trim(*value);
  if (trimmed.empty()) return std::nullopt;
  return trimmed;
}

std::string podinfo_path(const PodIdentitySources& sources, const char* item) {
  return (sources.podinfo_dir.empty() ? std::string(kDefaultPodinfoDir) : sources.podinfo_dir) + "/" + item;
}

std::optional<std::string> from_env(const PodIdentitySources& sources, const char* variable) {
  return sources.getenv ? nonempty(sources.getenv(variable)) : std::nullopt;
}

std::optional<std::string> from_file(const PodIdentitySources& sources, const char* item) {
  return sources.read_file ? nonempty(sources.read_file(podinfo_path(sources, item))) : std::nullopt;
}

}  // namespace

std::string resolve_namespace(const PodIdentitySources& sources) {
  if (!sources.namespace_flag.empty()) return sources.namespace_flag;
  if (auto ns = from_env(sources, "POD_NAMESPACE")) return *ns;
  if (auto ns = from_file(sources, "namespace")) return *ns;
  return sources.config_namespace.empty() ? "default" : sources.config_namespace;
}

Result<PodIdentity> resolve_pod_identity(const PodIdentitySources& sources) {
  PodIdentity identity;
  identity.ns = resolve_namespace(sources);
  if (!sources.pod_flag.empty()) {
    identity.name = sources.pod_flag;
    identity.name_source = "--pod";
  } else if (auto name = from_env(sources, "POD_NAME")) {
    identity.name = *name;
    identity.name_source = "POD_NAME";
  } else if (auto file_name = from_file(sources, "name")) {
    identity.name = *file_name;
    identity.name_source = podinfo_path(sources, "name");
  } else {
    return make_error(
        ErrorCode::kInvalidArgument,
        "no pod to hold the lock: give --pod NAME, or run inside a pod with POD_NAME (and "
        "POD_NAMESPACE, POD_UID) set from the downward API (fieldRef metadata.name), or with "
        "the downward API mounted at " +
            (sources.podinfo_dir.empty() ? std::string(kDefaultPodinfoDir) : sources.podinfo_dir) +
            " (items name, namespace, uid)");
  }
  // A uid only counts for the pod it was published with: a --pod naming another pod is
  // looked up, never paired with this pod's uid.
  if (from_env(sources, "POD_NAME") == identity.name)
    identity.uid = from_env(sources, "POD_UID").value_or("");
  if (identity.uid.empty() && from_file(sources, "name") == identity.name) {
    identity.uid = from_file(sources, "uid").value_or("");
  }
  return identity;
}

Getenv system_getenv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

ReadSmallFile system_read_small_file() {
  return [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    // Downward-API items are short; a bound keeps a wrong path from reading a huge file.
    std::string text(4096, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    return text;
  };
}

}  // namespace eslease::cli
