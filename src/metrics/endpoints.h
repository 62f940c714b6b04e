// The controller's HTTP endpoints on the project's embedded server: /metrics on the
// metrics address, /healthz and /readyz on the health-probe address (one server when both
// addresses are equal). Addresses are "host:port", ":port" (every interface) or "0" (off);
// port 0 picks a free port, reported by bound().
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
  std::function<std::string()> metrics_text;
  // "" = ready; otherwise the reason /readyz answers 503 with.
  std::function<std::string()> not_ready_reason;
};

struct BoundEndpoint {
  std::string endpoint;  // "metrics" or "health"
  std::string address;   // host:port actually bound
};

// kInvalidArgument on a malformed address ("0" is valid and means off).
Status validate_bind_address(const std::string& address);

class Endpoints {
 public:
  // Binds every server; an error names the address that could not be bound.
  static Result<std::unique_ptr<Endpoints>> start(EndpointOptions options);
  ~Endpoints();
  const std::vector<BoundEndpoint>& bound() const { return bound_; }

 private:
  Endpoints() = default;
  std::vector<std::unique_ptr<http::Server>> servers_;
  std::vector<BoundEndpoint> bound_;
};

}  // namespace eslease::metrics
