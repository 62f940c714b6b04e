#include "emulators/es/es_emulator.h"

#include <chrono>
#include <memory>
#include <stop_token>

#include "common/text.h"
#include "emulators/es/api.h"
#include "http/server.h"

namespace eslease::esemu {

namespace {

// Headers that belong to one hop of a connection, not to the request or answer passed on.
bool is_hop_header(const std::string& name) {
  const std::string lower = to_lower(name);
  return lower == "host" || lower == "content-length" || lower == "transfer-encoding" ||
         lower == "connection" || lower == "keep-alive" || lower == "expect" || lower == "upgrade";
}

// Passes requests to the engine at `base_url` and its answers back, as they are.
Upstream make_upstream(std::string base_url) {
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  std::shared_ptr<http::Transport> transport = http::make_transport();
  return [transport, base_url](const ApiRequest& request) -> std::optional<ApiResponse> {
    http::Request out;
    out.method = request.method;
    out.url = base_url + request.path + (request.query.empty() ? "" : "?" + request.query);
    for (const auto& [name, value] : request.headers) {
      if (!is_hop_header(name)) out.headers.emplace_back(name, value);
    }
    out.body = request.body;
    out.timeout = std::chrono::seconds(60);
    auto answer = transport->send(out);
    if (!answer.ok()) return std::nullopt;
    ApiResponse in;
    in.status = answer->status;
    for (auto& [name, value] : answer->headers) {
      if (!is_hop_header(name)) in.headers.emplace_back(std::move(name), std::move(value));
    }
    in.body = std::move(answer->body);
    return in;
  };
}

}  // namespace

struct EsEmulator::Impl {
  Impl(EsEmulatorOptions o, Clock& c)
      : options(std::move(o)),
        clock(c),
        api(ApiOptions{options.basic_auth, options.api_key,
                       options.upstream.empty() ? Upstream{} : make_upstream(options.upstream)},
            c) {}

  void serve(const http::ServerRequest& request, http::ServerResponse& response) {
    ApiRequest req;
    req.method = request.method;
    req.path = request.path;
    req.query = request.query;
    req.headers = request.headers;
    req.body = request.body;
    ApiResponse answer = api.handle(req, [&](std::chrono::milliseconds delay, EsApi::Hold hold) {
      if (hold == EsApi::Hold::kAnswer) return !response.wait_closing(delay);
      // Injected latency ends early when the emulator stops, so stop() never hangs on it.
      clock.sleep_for(delay, stopping.get_token());
      return !response.closing();
    });
    if (answer.drop) {
      response.drop_connection();
      return;
    }
    response.send(answer.status, std::move(answer.headers), std::move(answer.body));
  }

  EsEmulatorOptions options;
  Clock& clock;
  EsApi api;
  std::unique_ptr<http::Server> server;
  std::stop_source stopping;  // requested by stop(); a new one for each start()
  std::uint16_t port = 0;
};

EsEmulator::EsEmulator(EsEmulatorOptions options, Clock& clock)
    : impl_(std::make_unique<Impl>(std::move(options), clock)) {}

EsEmulator::~EsEmulator() {
  stop();
}

Status EsEmulator::start() {
  if (impl_->server) return make_error(ErrorCode::kInvalidArgument, "es-emulator is already running");
  http::ServerOptions server_options;
  server_options.host = impl_->options.host;
  server_options.port = impl_->options.port;
  server_options.tls_cert_file = impl_->options.tls_cert_file;
  server_options.tls_key_file = impl_->options.tls_key_file;
  impl_->stopping = std::stop_source();
  Impl* impl = impl_.get();
  impl_->server = http::make_server(
      server_options, [impl](const http::ServerRequest& request, http::ServerResponse& response) {
        impl->serve(request, response);
      });
  Status started = impl_->server->start();
  if (!started.ok()) {
    impl_->server.reset();
    return started;
  }
  impl_->port = impl_->server->port();
  return {};
}

void EsEmulator::stop() {
  if (!impl_ || !impl_->server) return;
  impl_->stopping.request_stop();
  impl_->server->stop();
  impl_->server.reset();
}

std::string EsEmulator::url() const {
  const bool tls = !impl_->options.tls_cert_file.empty() && !impl_->options.tls_key_file.empty();
  std::string host = impl_->options.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return std::string(tls ? "https" : "http") + "://" + host + ":" + std::to_string(impl_->port);
}

}  // namespace eslease::esemu
