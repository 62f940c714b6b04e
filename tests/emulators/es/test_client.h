// Drives EsApi directly (no sockets) with JSON in, JSON out, for the emulator's tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "emulators/es/api.h"

namespace eslease::esemu::testing {

struct Reply {
  int status = 0;
  nlohmann::ordered_json body;
  ApiResponse raw;
  std::string error_type() const {
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return "";
    return body["error"].value("type", "");
  }
  std::string reason() const {
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return "";
    return body["error"].value("reason", "");
  }
};

class TestClient {
 public:
  explicit TestClient(ApiOptions options = {}, Clock& clock = SystemClock::instance())
      : api_(std::move(options), clock) {}

  Reply call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& content_type = "application/json", HeaderList extra = {}) {
    ApiRequest request;
    request.method = method;
    auto q = target.find('?');
    request.path = target.substr(0, q);
    request.query = q == std::string::npos ? "" : target.substr(q + 1);
    request.body = body;
    if (!body.empty() && !content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
    for (auto& h : extra) request.headers.push_back(std::move(h));
    Reply reply;
    reply.raw = api_.handle(request, [](std::chrono::milliseconds, EsApi::Hold) { return true; });
    reply.status = reply.raw.status;
    if (!reply.raw.body.empty()) {
      reply.body = nlohmann::ordered_json::parse(reply.raw.body, nullptr, false);
    }
    return reply;
  }
  Reply call(const std::string& method, const std::string& target, const char* body,
             const std::string& content_type = "application/json", HeaderList extra = {}) {
    return call(method, target, std::string(body), content_type, std::move(extra));
  }
  Reply call(const std::string& method, const std::string& target, const nlohmann::ordered_json& body) {
    return call(method, target, body.dump());
  }

  EsApi& api() { return api_; }

 private:
  EsApi api_;
};

}  // namespace eslease::esemu::testing
