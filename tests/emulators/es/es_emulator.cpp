#include "emulators/es/es_emulator.h"

#include <condition_variable>
#include <mutex>

#include "emulators/es/api.h"
#include "http/server.h"

namespace eslease::esemu {

struct EsEmulator::Impl {
  explicit Impl(EsEmulatorOptions o)
      : options(std::move(o)), api(ApiOptions{options.basic_auth, options.api_key}) {}

  void serve(const http::ServerRequest& request, http::ServerResponse& response) {
    ApiRequest req;
    req.method = request.method;
    req.path = request.path;
    req.query = request.query;
    req.headers = request.headers;
    req.body = request.body;
    ApiResponse answer = api.handle(req, [&](std::chrono::milliseconds delay, EsApi::Hold hold) {
      if (hold == EsApi::Hold::kAnswer) return !response.wait_closing(delay);
      wait(delay);
      return !response.closing();
    });
    if (answer.drop) {
      response.drop_connection();
      return;
    }
    response.send(answer.status, std::move(answer.headers), std::move(answer.body));
  }

  // Injected latency ends early when the emulator stops, so stop() never hangs on it.
  void wait(std::chrono::milliseconds delay) {
    std::unique_lock lock(mutex);
    stopped_cv.wait_for(lock, delay, [this] { return stopping; });
  }

  EsEmulatorOptions options;
  EsApi api;
  std::unique_ptr<http::Server> server;
  std::mutex mutex;
  std::condition_variable stopped_cv;
  bool stopping = false;
  std::uint16_t port = 0;
};

EsEmulator::EsEmulator(EsEmulatorOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

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
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = false;
  }
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
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->stopped_cv.notify_all();
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
