// The controller's HTTP endpoints on the project's embedded server (http/server.h):
// /metrics on the metrics address, /healthz and /readyz on the health-probe address.
//
// Addresses follow the Kubernetes controllers' convention: "host:port", ":port" (every
// IPv4 interface) or "0" (that server is off). Two equal addresses with a fixed port share
// one server, which then serves all three paths; port 0 picks a free port for each server,
// and bound() reports what was bound so main can log it. Anything else answers 404;
// methods other than GET and HEAD answer 405.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "http/server.h"

namespace eslease::metrics {

struct EndpointOptions {
  std::string metrics_address = ":8080";
  std::string health_address = ":8081";
  // The body of /metrics, e.g. Metrics::text(); called on every scrape.
  std::function<std::string()> metrics_text;
  // "" = ready (200 "ok"); otherwise /readyz answers 503 with this reason. Unset: always ready.
  std::function<std::string()> not_ready_reason;
  // The same for /healthz (liveness): "" = alive. Unset: alive while the server answers.
  std::function<std::string()> not_live_reason;
};

// One running server.
struct BoundEndpoint {
  std::string endpoint;            // "metrics", "health", or "metrics+health" when shared
  std::string address;             // host:port actually bound (the real port when 0 was asked)
  std::uint16_t port = 0;          // the bound port
  std::vector<std::string> paths;  // what it serves: "/metrics", "/healthz", "/readyz"
};

// kInvalidArgument on a malformed address ("0", off, is valid).
Status validate_bind_address(const std::string& address);

class Endpoints {
 public:
  // Parses both addresses and binds every server that is on. Errors: kInvalidArgument for
  // a malformed address, kUnavailable naming the address that could not be bound.
  static Result<std::unique_ptr<Endpoints>> start(EndpointOptions options);
  ~Endpoints();  // stops every server
  Endpoints(const Endpoints&) = delete;
  Endpoints& operator=(const Endpoints&) = delete;

  // Stops accepting and closes every connection. Idempotent.
  void stop();
  // One entry per running server, metrics first; empty when both are off.
  const std::vector<BoundEndpoint>& bound() const { return bound_; }

 private:
  Endpoints() = default;
  std::vector<std::unique_ptr<http::Server>> servers_;
  std::vector<BoundEndpoint> bound_;
};

}  // namespace eslease::metrics
