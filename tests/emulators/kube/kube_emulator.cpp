#include "emulators/kube/kube_emulator.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "emulators/kube/api_server.h"
#include "http/server.h"

namespace eslease::kubeemu {

KubeEmulator::KubeEmulator(KubeEmulatorOptions options, Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

KubeEmulator::~KubeEmulator() {
  stop();
}

Status KubeEmulator::start() {
  if (server_) return make_error(ErrorCode::kInvalidArgument, "kube-emulator already started");
  ApiServerOptions api_options;
  api_options.bearer_token = options_.bearer_token;
  api_options.watch_history = options_.watch_history;
  api_options.bookmark_interval = options_.bookmark_interval;
  api_options.simulate_kubelet = options_.simulate_kubelet;
  api_options.kubelet = options_.kubelet;
  api_ = std::make_unique<ApiServer>(api_options, clock_);
  http::ServerOptions server_options;
  server_options.host = options_.host;
  server_options.port = options_.port;
  server_options.tls_cert_file = options_.tls_cert_file;
  server_options.tls_key_file = options_.tls_key_file;
  // Larger than the API limit so the API answers 413 with a Status body itself.
  server_options.max_body_bytes = 4 * api_options.max_body_bytes;
  ApiServer* api = api_.get();
  server_ = http::make_server(server_options,
                              [api](const http::ServerRequest& request, http::ServerResponse& response) {
                                api->handle(request, response);
                              });
  if (auto started = server_->start(); !started) {
    server_.reset();
    api_.reset();
    return started.error();
  }
  port_ = server_->port();
  api_->set_server_address(options_.host + ":" + std::to_string(port_));
  return {};
}

void KubeEmulator::stop() {
  if (api_) api_->shutdown();
  if (server_) server_->stop();
  server_.reset();
  api_.reset();
}

std::string KubeEmulator::url() const {
  const bool tls = !options_.tls_cert_file.empty() && !options_.tls_key_file.empty();
  return std::string(tls ? "https://" : "http://") + options_.host + ":" + std::to_string(port_);
}

Status KubeEmulator::write_kubeconfig(const std::string& path) const {
  // JSON is valid YAML, and nlohmann quotes every string safely.
  nlohmann::json cluster = {{"server", url()}};
  if (!options_.tls_cert_file.empty()) {
    std::error_code ec;
    auto ca = std::filesystem::absolute(options_.tls_cert_file, ec);
    cluster["certificate-authority"] = ec ? options_.tls_cert_file : ca.string();
  }
  nlohmann::json user = nlohmann::json::object();
  if (options_.bearer_token) user["token"] = *options_.bearer_token;
  nlohmann::json config = {
      {"apiVersion", "v1"},
      {"kind", "Config"},
      {"clusters", {{{"name", "kube-emulator"}, {"cluster", cluster}}}},
      {"users", {{{"name", "kube-emulator"}, {"user", user}}}},
      {"contexts",
       {{{"name", "kube-emulator"},
         {"context", {{"cluster", "kube-emulator"}, {"user", "kube-emulator"}, {"namespace", "default"}}}}}},
      {"current-context", "kube-emulator"},
      {"preferences", nlohmann::json::object()}};
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    if (!out) return make_error(ErrorCode::kInvalidArgument, "cannot write kubeconfig " + path);
    out << config.dump(2) << "\n";
    if (!out.flush()) return make_error(ErrorCode::kInvalidArgument, "cannot write kubeconfig " + path);
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec)
    return make_error(ErrorCode::kInvalidArgument, "cannot write kubeconfig " + path + ": " + ec.message());
  return {};
}

}  // namespace eslease::kubeemu
