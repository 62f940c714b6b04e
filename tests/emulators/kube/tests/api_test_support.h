// Drives ApiServer in memory: a recording ServerResponse and a request helper.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "emulators/kube/api_server.h"
#include "http/server.h"

namespace eslease::kubeemu::testing {

class RecordingResponse : public http::ServerResponse {
 public:
  void send(int status, http::Headers headers, std::string body) override {
    std::lock_guard lock(mutex_);
    status_ = status;
    headers_ = std::move(headers);
    body_ = std::move(body);
  }
  bool begin_chunked(int status, http::Headers headers) override {
    std::lock_guard lock(mutex_);
    status_ = status;
    headers_ = std::move(headers);
    return !closing_;
  }
  bool write_chunk(std::string_view data) override {
    std::lock_guard lock(mutex_);
    body_.append(data);
    return !closing_;
  }
  void end_chunked() override {
    std::lock_guard lock(mutex_);
    ended_ = true;
  }
  void drop_connection() override {
    std::lock_guard lock(mutex_);
    dropped_ = true;
  }
  bool closing() const override { return closing_; }

  void close_from_client() { closing_ = true; }
  int status() const {
    std::lock_guard lock(mutex_);
    return status_;
  }
  std::string body() const {
    std::lock_guard lock(mutex_);
    return body_;
  }
  bool ended() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }
  bool dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }
  std::optional<std::string> header(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return http::find_header(headers_, name);
  }
  nlohmann::json json() const { return nlohmann::json::parse(body(), nullptr, false); }
  // The watch events received so far, one JSON document per line.
  std::vector<nlohmann::json> events() const {
    std::vector<nlohmann::json> out;
    const std::string text = body();
    std::size_t start = 0;
    while (true) {
      auto end = text.find('\n', start);
      if (end == std::string::npos) break;
      out.push_back(nlohmann::json::parse(text.substr(start, end - start), nullptr, false));
      start = end + 1;
    }
    return out;
  }

 private:
  mutable std::mutex mutex_;
  int status_ = 0;
  http::Headers headers_;
  std::string body_;
  bool ended_ = false;
  bool dropped_ = false;
  std::atomic<bool> closing_{false};
};

inline http::ServerRequest make_request(const std::string& method, const std::string& target,
                                        std::string body = "", http::Headers headers = {}) {
  http::ServerRequest request;
  request.method = method;
  request.target = target;
  auto q = target.find('?');
  request.path = target.substr(0, q);
  request.query = q == std::string::npos ? "" : target.substr(q + 1);
  request.body = std::move(body);
  if (!request.body.empty() && !http::find_header(headers, "Content-Type")) {
    headers.emplace_back("Content-Type", "application/json");
  }
  request.headers = std::move(headers);
  request.remote = "127.0.0.1:1";
  return request;
}

struct Reply {
  int status;
  nlohmann::json body;
  std::shared_ptr<RecordingResponse> response;
};

inline Reply call(ApiServer& api, const std::string& method, const std::string& target,
                  const nlohmann::json& body = nullptr, http::Headers headers = {}) {
  auto response = std::make_shared<RecordingResponse>();
  const auto request = make_request(method, target, body.is_null() ? "" : body.dump(), std::move(headers));
  api.handle(request, *response);
  return {response->status(), response->json(), response};
}

inline Reply call_raw(ApiServer& api, const std::string& method, const std::string& target, std::string body,
                      http::Headers headers = {}) {
  auto response = std::make_shared<RecordingResponse>();
  const auto request = make_request(method, target, std::move(body), std::move(headers));
  api.handle(request, *response);
  return {response->status(), response->json(), response};
}

// A namespaced test CRD: widgets.example.io, status subresource, an enum with a default.
inline nlohmann::json widget_crd() {
  return nlohmann::json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.io"},
    "spec": {"group": "example.io", "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                "shortNames": ["wd"]},
      "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
        "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                     {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 0},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"}}},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]}})");
}

inline nlohmann::json widget(const std::string& name, int size = 1) {
  return {{"apiVersion", "example.io/v1"},
          {"kind", "Widget"},
          {"metadata", {{"name", name}}},
          {"spec", {{"size", size}}}};
}

inline nlohmann::json lease(const std::string& name) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}}},
          {"spec", {{"holderIdentity", "a"}}}};
}

// An ApiServer driven in memory; install_widgets() registers widget_crd().
class ApiServerTest : public ::testing::Test {
 protected:
  void install_widgets() {
    auto reply = call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd());
    ASSERT_EQ(reply.status, 201) << reply.body.dump();
  }
  ApiServer api{ApiServerOptions{}};
};

}  // namespace eslease::kubeemu::testing
