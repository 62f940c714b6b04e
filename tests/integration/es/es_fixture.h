// The Elasticsearch a test talks to: the in-process emulator, or a real server when
// ESLEASE_TEST_ES_URL is set (then tests that need the emulator's admin endpoints skip).
// Each test uses its own index, so runs against a shared server do not collide.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "common/clock.h"
#include "emulators/es/es_emulator.h"
#include "es/http_document_api.h"
#include "http/transport.h"

namespace eslease::testing {

class EsTestServer {
 public:
  explicit EsTestServer(esemu::EsEmulatorOptions options = {}) {
    if (const char* real = std::getenv("ESLEASE_TEST_ES_URL"); real != nullptr && *real != '\0') {
      url_ = real;
      while (!url_.empty() && url_.back() == '/') url_.pop_back();
    } else {
      emulator_ = std::make_unique<esemu::EsEmulator>(std::move(options));
      auto started = emulator_->start();
      EXPECT_TRUE(started.ok()) << started.error().describe();
      url_ = emulator_->url();
    }
    admin_ = http::make_cpprest_transport();
  }
  ~EsTestServer() {
    if (emulator_) emulator_->stop();
  }

  const std::string& url() const { return url_; }
  bool is_emulator() const { return emulator_ != nullptr; }

  // A fresh index name per call.
  static std::string unique_index(const std::string& prefix = "eslease-test") {
    static std::atomic<int> counter{0};
    std::random_device device;
    return prefix + "-" + std::to_string(device() % 1000000) + "-" + std::to_string(counter++);
  }

  // Admin endpoints of the emulator (tests call these only after checking is_emulator()).
  nlohmann::json stats() {
    return nlohmann::json::parse(admin("GET", "/_emulator/stats", "").body, nullptr, false);
  }
  long long count(const std::string& op) {
    const auto s = stats();
    if (!s.is_object() || !s.contains("requests") || !s["requests"].contains(op)) return 0;
    return s["requests"][op].get<long long>();
  }
  long long total() {
    const auto s = stats();
    return s.is_object() && s.contains("total") ? s["total"].get<long long>() : -1;
  }
  void reset_stats() { admin("POST", "/_emulator/stats/reset", ""); }
  void fault(const nlohmann::json& rule) {
    auto r = admin("POST", "/_emulator/faults", rule.dump());
    EXPECT_EQ(r.status / 100, 2) << r.body;
  }
  void clear_faults() { admin("DELETE", "/_emulator/faults", ""); }
  void bump_primary_term(const std::string& index) {
    auto r = admin("POST", "/_emulator/bump_primary_term?index=" + index, "");
    EXPECT_EQ(r.status, 200) << r.body;
  }
  // DELETE /{index} (real servers too).
  void delete_index(const std::string& index) {
    auto r = admin("DELETE", "/" + index, "");
    EXPECT_EQ(r.status, 200) << r.body;
  }
  // The emulator's test-only snapshot and restore (see its README).
  void snapshot(const std::string& index, const std::string& name) {
    auto r = admin("POST", "/_emulator/snapshot?index=" + index + "&snapshot=" + name, "");
    EXPECT_EQ(r.status, 200) << r.body;
  }
  void restore(const std::string& name) {
    auto r = admin("POST", "/_emulator/restore?snapshot=" + name, "");
    EXPECT_EQ(r.status, 200) << r.body;
  }

 private:
  http::Response admin(const std::string& method, const std::string& path, const std::string& body) {
    http::Request request;
    request.method = method;
    request.url = url_ + path;
    request.body = body;
    if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    auto r = admin_->send(request);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().describe());
    return r.ok() ? *r : http::Response{};
  }

  std::unique_ptr<esemu::EsEmulator> emulator_;
  std::string url_;
  std::unique_ptr<http::Transport> admin_;
};

#define ESLEASE_REQUIRE_EMULATOR(server) \
  if (!(server).is_emulator())           \
  GTEST_SKIP() << "needs the es-emulator's admin endpoints (ESLEASE_TEST_ES_URL is set)"

// A DocumentApi on the real transport for `url`.
inline std::unique_ptr<es::DocumentApi> make_api(const std::string& url, es::ClientOptions options = {}) {
  options.hosts = {url};
  auto api =
      es::make_http_document_api(http::make_cpprest_transport(), std::move(options), SystemClock::instance());
  EXPECT_TRUE(api.ok()) << api.error().describe();
  return api.ok() ? std::move(*api) : nullptr;
}

}  // namespace eslease::testing
