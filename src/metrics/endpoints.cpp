#include "metrics/endpoints.h"

namespace eslease::metrics {
namespace {

struct Address {
  std::string host;
  std::uint16_t port = 0;
};

Result<Address> parse_address(const std::string& address) {
  std::string text = address;
  if (!text.empty() && text[0] == ':') text = "0.0.0.0" + text;
  auto parsed = http::parse_listen_address(text);
  if (!parsed.ok())
    return make_error(ErrorCode::kInvalidArgument,
                      "bind address \"" + address + "\" must be host:port, :port or 0 (off)");
  return Address{parsed->first, parsed->second};
}

}  // namespace

Status validate_bind_address(const std::string& address) {
  if (address == "0") return {};
  auto parsed = parse_address(address);
  if (!parsed.ok()) return parsed.error();
  return {};
}

Endpoints::~Endpoints() {
  for (auto& server : servers_) server->stop();
}

Result<std::unique_ptr<Endpoints>> Endpoints::start(EndpointOptions options) {
  std::unique_ptr<Endpoints> out(new Endpoints());
  const bool metrics_on = options.metrics_address != "0";
  const bool health_on = options.health_address != "0";
  const bool shared = metrics_on && health_on && options.metrics_address == options.health_address;
  auto handler = [options](bool metrics, bool health) {
    return [options, metrics, health](const http::ServerRequest& request, http::ServerResponse& response) {
      const http::Headers text = {{"content-type", "text/plain; charset=utf-8"}};
      if (request.method != "GET" && request.method != "HEAD") {
        response.send(405, text, "method not allowed\n");
      } else if (metrics && request.path == "/metrics") {
        response.send(200, {{"content-type", "text/plain; version=0.0.4; charset=utf-8"}},
                      options.metrics_text());
      } else if (health && request.path == "/healthz") {
        response.send(200, text, "ok\n");
      } else if (health && request.path == "/readyz") {
        const std::string reason = options.not_ready_reason ? options.not_ready_reason() : "";
        if (reason.empty()) {
          response.send(200, text, "ok\n");
        } else {
          response.send(503, text, reason + "\n");
        }
      } else {
        response.send(404, text, "not found\n");
      }
    };
  };
  auto serve = [&](const std::string& address, bool metrics, bool health) -> Status {
    auto parsed = parse_address(address);
    if (!parsed.ok()) return parsed.error();
    http::ServerOptions server_options;
    server_options.host = parsed->host;
    server_options.port = parsed->port;
    auto server = http::make_server(server_options, handler(metrics, health));
    if (auto s = server->start(); !s.ok())
      return make_error(ErrorCode::kUnavailable, "cannot listen on " + address + ": " + s.error().message);
    const std::string bound = parsed->host + ":" + std::to_string(server->port());
    if (metrics) out->bound_.push_back({"metrics", bound});
    if (health) out->bound_.push_back({"health", bound});
    out->servers_.push_back(std::move(server));
    return {};
  };
  if (shared) {
    if (auto s = serve(options.metrics_address, true, true); !s.ok()) return s.error();
  } else {
    if (metrics_on)
      if (auto s = serve(options.metrics_address, true, false); !s.ok()) return s.error();
    if (health_on)
      if (auto s = serve(options.health_address, false, true); !s.ok()) return s.error();
  }
  return out;
}

}  // namespace eslease::metrics
