#include "http/ca_bundle.h"

#include <cstdlib>
#include <fstream>

namespace eslease::http {

std::string find_ca_bundle(const std::optional<std::string>& ssl_cert_file,
                           const std::vector<std::string>& locations) {
  auto readable = [](const std::string& path) { return !path.empty() && std::ifstream(path).good(); };
  if (ssl_cert_file && readable(*ssl_cert_file)) return *ssl_cert_file;
  for (const std::string& path : locations)
    if (readable(path)) return path;
  return {};
}

std::string system_ca_bundle() {
  const char* variable = std::getenv("SSL_CERT_FILE");
  return find_ca_bundle(variable ? std::optional<std::string>(variable) : std::nullopt);
}

}  // namespace eslease::http
