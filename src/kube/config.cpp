#include "kube/config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/base64.h"

namespace eslease::kube {
namespace {

namespace fs = std::filesystem;

Error config_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Result<std::string> read_file(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return config_error("cannot read " + what + " " + path.string());
  std::stringstream content;
  content << in.rdbuf();
  if (in.bad()) return config_error("cannot read " + what + " " + path.string());
  return content.str();
}

std::string resolve(const fs::path& base_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || base_dir.empty()) return path;
  return (base_dir / path).lexically_normal().string();
}

// A scalar child as a string ("" when absent); an error when present but not a scalar.
Result<std::string> scalar(const YAML::Node& node, const char* key, const std::string& where) {
  const YAML::Node child = node[key];
  if (!child || child.IsNull()) return std::string();
  if (!child.IsScalar()) return config_error(where + ": \"" + key + "\" must be a string");
  return child.as<std::string>();
}

// The entry named `name` in a list like clusters: [{name: ..., cluster: {...}}].
Result<YAML::Node> find_named(const YAML::Node& root, const char* list, const char* body,
                              const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && !entries.IsNull() && !entries.IsSequence()) {
    return config_error(std::string("kubeconfig: \"") + list + "\" must be a list");
  }
  if (entries) {
    for (const auto& entry : entries) {
      if (!entry.IsMap()) continue;
      const YAML::Node entry_name = entry["name"];
      if (entry_name && entry_name.IsScalar() && entry_name.as<std::string>() == name) {
        const YAML::Node value = entry[body];
        if (!value || value.IsNull()) return YAML::Node(YAML::NodeType::Map);
        if (!value.IsMap())
          return config_error(std::string("kubeconfig: ") + body + " \"" + name + "\" must be a map");
        return value;
      }
    }
  }
  return config_error(std::string("kubeconfig: no ") + body + " named \"" + name + "\"");
}

Status apply_cluster(const YAML::Node& cluster, const std::string& name, const fs::path& base,
                     RestConfig& out) {
  const std::string where = "kubeconfig cluster \"" + name + "\"";
  auto server = scalar(cluster, "server", where);
  if (!server.ok()) return server.error();
  if (server->empty()) return config_error(where + " has no server");
  out.server = *server;
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  if (out.server.rfind("https://", 0) != 0 && out.server.rfind("http://", 0) != 0) {
    return config_error(where + ": server must start with https:// or http://");
  }
  auto ca_data = scalar(cluster, "certificate-authority-data", where);
  if (!ca_data.ok()) return ca_data.error();
  auto ca_file = scalar(cluster, "certificate-authority", where);
  if (!ca_file.ok()) return ca_file.error();
  if (!ca_data->empty()) {
    auto pem = base64_decode(*ca_data);
    if (!pem) return config_error(where + ": certificate-authority-data is not valid base64");
    out.tls.ca_pem = *pem;
  } else if (!ca_file->empty()) {
    out.tls.ca_file = resolve(base, *ca_file);
    std::ifstream probe(out.tls.ca_file);
    if (!probe) return config_error(where + ": cannot read certificate-authority " + out.tls.ca_file);
  }
  const YAML::Node insecure = cluster["insecure-skip-tls-verify"];
  if (insecure && insecure.IsScalar()) {
    bool skip = false;
    if (!YAML::convert<bool>::decode(insecure, skip)) {
      return config_error(where + ": insecure-skip-tls-verify must be true or false");
    }
    out.tls.verify = !skip;
  }
  return {};
}

Status apply_user(const YAML::Node& user, const std::string& name, const fs::path& base, RestConfig& out) {
  const std::string where = "kubeconfig user \"" + name + "\"";
  if (user["exec"] || user["auth-provider"]) {
    return config_error(where +
                        ": exec and auth-provider credentials are not supported; use a token, "
                        "tokenFile or client certificate");
  }
  struct PemSource {
    const char* data_key;
    const char* file_key;
    std::string* pem;
    std::string* file;
  };
  for (const PemSource& source :
       {PemSource{"client-certificate-data", "client-certificate", &out.tls.client_cert_pem,
                  &out.tls.client_cert_file},
        PemSource{"client-key-data", "client-key", &out.tls.client_key_pem, &out.tls.client_key_file}}) {
    auto data = scalar(user, source.data_key, where);
    if (!data.ok()) return data.error();
    auto file = scalar(user, source.file_key, where);
    if (!file.ok()) return file.error();
    if (!data->empty()) {
      auto pem = base64_decode(*data);
      if (!pem) return config_error(where + ": " + source.data_key + " is not valid base64");
      *source.pem = *pem;
    } else if (!file->empty()) {
      *source.file = resolve(base, *file);
      std::ifstream probe(*source.file);
      if (!probe) return config_error(where + ": cannot read " + source.file_key + " " + *source.file);
    }
  }
  bool has_cert = !out.tls.client_cert_pem.empty() || !out.tls.client_cert_file.empty();
  bool has_key = !out.tls.client_key_pem.empty() || !out.tls.client_key_file.empty();
  if (has_cert != has_key)
    return config_error(where + ": a client certificate needs both certificate and key");

  auto token = scalar(user, "token", where);
  if (!token.ok()) return token.error();
  out.token = *token;
  auto token_file = scalar(user, "tokenFile", where);
  if (!token_file.ok()) return token_file.error();
  if (!token_file->empty()) {
    out.token_file = resolve(base, *token_file);
    if (out.token.empty()) {
      auto content = read_file(out.token_file, where + " tokenFile");
      if (!content.ok()) return content.error();
    }
  }
  auto username = scalar(user, "username", where);
  if (!username.ok()) return username.error();
  auto password = scalar(user, "password", where);
  if (!password.ok()) return password.error();
  out.username = *username;
  out.password = *password;
  return {};
}

Result<RestConfig> parse_kubeconfig_node(const YAML::Node& root, const fs::path& base,
                                         const std::string& context) {
  if (!root.IsMap()) return config_error("kubeconfig: the document is not a map");
  std::string context_name = context;
  if (context_name.empty()) {
    auto current = scalar(root, "current-context", "kubeconfig");
    if (!current.ok()) return current.error();
    context_name = *current;
  }
  if (context_name.empty()) return config_error("kubeconfig: no current-context and no context given");
  auto ctx = find_named(root, "contexts", "context", context_name);
  if (!ctx.ok()) return ctx.error();
  const std::string where = "kubeconfig context \"" + context_name + "\"";
  auto cluster_name = scalar(*ctx, "cluster", where);
  if (!cluster_name.ok()) return cluster_name.error();
  if (cluster_name->empty()) return config_error(where + " names no cluster");
  auto user_name = scalar(*ctx, "user", where);
  if (!user_name.ok()) return user_name.error();
  auto ns = scalar(*ctx, "namespace", where);
  if (!ns.ok()) return ns.error();

  RestConfig config;
  config.context = context_name;
  if (!ns->empty()) config.ns = *ns;
  auto cluster = find_named(root, "clusters", "cluster", *cluster_name);
  if (!cluster.ok()) return cluster.error();
  if (auto applied = apply_cluster(*cluster, *cluster_name, base, config); !applied.ok())
    return applied.error();
  if (!user_name->empty()) {
    auto user = find_named(root, "users", "user", *user_name);
    if (!user.ok()) return user.error();
    if (auto applied = apply_user(*user, *user_name, base, config); !applied.ok()) return applied.error();
  }
  return config;
}

std::optional<std::string> system_getenv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace

std::string RestConfig::describe() const {
  std::string auth;
  if (!token_file.empty())
    auth = "token-file";
  else if (!token.empty())
    auth = "token";
  else if (!username.empty())
    auth = "basic";
  if (!tls.client_cert_pem.empty() || !tls.client_cert_file.empty())
    auth += auth.empty() ? "client-cert" : "+client-cert";
  if (auth.empty()) auth = "none";
  return "server=" + server + " context=" + (context.empty() ? "in-cluster" : context) + " namespace=" + ns +
         " auth=" + auth + (tls.verify ? "" : " tls-verify=off");
}

Result<RestConfig> parse_kubeconfig(std::string_view yaml, const fs::path& base_dir,
                                    const std::string& context) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return parse_kubeconfig_node(root, base_dir, context);
  } catch (const YAML::Exception& e) {
    // The message names the line and column, never the content.
    return config_error("kubeconfig is not valid YAML: " + std::string(e.what()));
  }
}

Result<RestConfig> load_kubeconfig(const fs::path& path, const std::string& context) {
  auto content = read_file(path, "kubeconfig");
  if (!content.ok()) return content.error();
  auto config = parse_kubeconfig(*content, fs::absolute(path).parent_path(), context);
  if (!config.ok()) {
    Error error = config.error();
    error.message = path.string() + ": " + error.message;
    return error;
  }
  return config;
}

Result<RestConfig> load_in_cluster(const InClusterOptions& options) {
  auto getenv = options.getenv ? options.getenv : system_getenv;
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  auto port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port || host->empty() || port->empty()) {
    return config_error(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  const fs::path dir = options.service_account_dir;
  RestConfig config;
  bool ipv6 = host->find(':') != std::string::npos;
  config.server = "https://" + (ipv6 ? "[" + *host + "]" : *host) + ":" + *port;
  config.token_file = (dir / "token").string();
  auto token = read_file(config.token_file, "service-account token");
  if (!token.ok()) return token.error();
  auto ca = dir / "ca.crt";
  if (std::ifstream(ca)) config.tls.ca_file = ca.string();
  if (auto ns = read_file(dir / "namespace", "service-account namespace"); ns.ok()) {
    std::string trimmed = *ns;
    while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
    if (!trimmed.empty()) config.ns = trimmed;
  }
  return config;
}

Result<RestConfig> load_default(const fs::path& explicit_path, const std::string& context) {
  if (!explicit_path.empty()) return load_kubeconfig(explicit_path, context);
  if (system_getenv("KUBERNETES_SERVICE_HOST")) return load_in_cluster();
  if (auto list = system_getenv("KUBECONFIG"); list && !list->empty()) {
    return load_kubeconfig(list->substr(0, list->find(':')), context);
  }
  if (auto home = system_getenv("HOME"))
    return load_kubeconfig(fs::path(*home) / ".kube" / "config", context);
  return config_error("no kubeconfig found and not running in a cluster");
}

}  // namespace eslease::kube
