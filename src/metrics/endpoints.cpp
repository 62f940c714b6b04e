#include "metrics/endpoints.h"

#include <optional>

#include "common/address.h"

namespace eslease::metrics {
namespace {

Result<std::optional<HostPort>> parse(const std::string& address, const char* what) {
  auto parsed = parse_bind_address(address);
  if (!parsed.ok())
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(what) + " bind address \"" + address.substr(0, 64) + "\" is not valid (" +
                          parsed.error().message + "); use host:port, :port or 0 (off)");
  return parsed;
}

const http::Headers kText = {{"content-type", "text/plain; charset=utf-8"}};
// The Prometheus text exposition format the serializer writes.
const http::Headers kExposition = {{"content-type", "text/plain; version=0.0.4; charset=utf-8"}};

// An answer for a probe: 200 "ok", or 503 with the reason a person reading `kubectl
// describe pod` needs.
void probe(http::ServerResponse& response, const std::function<std::string()>& not_ok_reason) {
  const std::string reason = not_ok_reason ? not_ok_reason() : std::string();
  if (reason.empty()) {
    response.send(200, kText, "ok\n");
  } else {
    response.send(503, kText, reason + "\n");
  }
}

http::Handler make_handler(const EndpointOptions& options, bool metrics, bool health) {
  return [options, metrics, health](const http::ServerRequest& request, http::ServerResponse& response) {
    const bool known = (metrics && request.path == "/metrics") ||
                       (health && (request.path == "/healthz" || request.path == "/readyz"));
    if (!known) {
      response.send(404, kText, "not found\n");
    } else if (request.method != "GET" && request.method != "HEAD") {
      http::Headers headers = kText;
      headers.emplace_back("allow", "GET, HEAD");
      response.send(405, headers, "method not allowed\n");
    } else if (request.path == "/metrics") {
      response.send(200, kExposition, options.metrics_text ? options.metrics_text() : std::string());
    } else if (request.path == "/healthz") {
      probe(response, options.not_live_reason);
    } else {
      probe(response, options.not_ready_reason);
    }
  };
}

}  // namespace

Status validate_bind_address(const std::string& address) {
  auto parsed = parse(address, "the");
  if (!parsed.ok()) return parsed.error();
  return {};
}

Endpoints::~Endpoints() {
  stop();
}

void Endpoints::stop() {
  for (auto& server : servers_) server->stop();
}

Result<std::unique_ptr<Endpoints>> Endpoints::start(EndpointOptions options) {
  auto metrics_address = parse(options.metrics_address, "the metrics");
  if (!metrics_address.ok()) return metrics_address.error();
  auto health_address = parse(options.health_address, "the health-probe");
  if (!health_address.ok()) return health_address.error();

  std::unique_ptr<Endpoints> out(new Endpoints());
  auto serve = [&](const HostPort& address, bool metrics, bool health) -> Status {
    http::ServerOptions server_options;
    server_options.host = address.host;
    server_options.port = address.port;
    auto server = http::make_server(server_options, make_handler(options, metrics, health));
    if (auto s = server->start(); !s.ok()) {
      const char* what = metrics && health ? "/metrics, /healthz and /readyz"
                         : metrics         ? "/metrics"
                                           : "/healthz and /readyz";
      return make_error(ErrorCode::kUnavailable, "cannot listen on " + address.to_string() + " for " + what +
                                                     ": " + s.error().message);
    }
    BoundEndpoint bound;
    bound.endpoint = metrics && health ? "metrics+health" : metrics ? "metrics" : "health";
    bound.port = server->port();
    bound.address = HostPort{address.host, bound.port}.to_string();
    if (metrics) bound.paths.push_back("/metrics");
    if (health) bound.paths.insert(bound.paths.end(), {"/healthz", "/readyz"});
    out->bound_.push_back(std::move(bound));
    out->servers_.push_back(std::move(server));
    return {};
  };

  const std::optional<HostPort>& m = *metrics_address;
  const std::optional<HostPort>& h = *health_address;
  // Port 0 asks for a free port per server, so only a fixed port can be shared.
  const bool shared = m && h && m->port != 0 && m->host == h->host && m->port == h->port;
  if (shared) {
    if (auto s = serve(*m, true, true); !s.ok()) return s.error();
    return out;
  }
  if (m)
    if (auto s = serve(*m, true, false); !s.ok()) return s.error();
  if (h)
    if (auto s = serve(*h, false, true); !s.ok()) return s.error();  // `out` stops the first
  return out;
}

}  // namespace eslease::metrics
