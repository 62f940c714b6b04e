// The Elasticsearch a test talks to, chosen by ESLEASE_TEST_BACKEND:
// - emulator (the default): the es-emulator, in process;
// - opensearch: a real OpenSearch node (tests/engines/opensearch/run.sh): the one CTest's
//   real-engine fixture started (it writes its URL into a file of the build tree;
//   ESLEASE_TEST_ENGINE_URL_FILE names another), else one this process starts.
// ESLEASE_TEST_ES_URL names any other real server and wins over both. A real server is
// reached through the fault proxy (the es-emulator with an upstream, in process), so fault
// rules and request counters work the same on every backend; only what needs the emulator's
// own store (primary-term bumps, snapshots, its TLS and auth) skips on a real one. Each test
// uses its own index, so tests can share one server.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>

#include "common/clock.h"
#include "common/text.h"
#include "emulators/es/es_emulator.h"
#include "es/http_document_api.h"
#include "http/transport.h"
#include "support/engine_process.h"

namespace eslease::testing {

// The real server the environment names, or nullopt for the emulator. With
// ESLEASE_TEST_BACKEND=opensearch and no engine started by CTest's fixture, the process
// starts one of its own (the first time it is asked) and stops it at exit.
inline std::optional<std::string> real_server_url() {
  if (const char* real = std::getenv("ESLEASE_TEST_ES_URL"); real != nullptr && *real != '\0') return real;
  const char* backend = std::getenv("ESLEASE_TEST_BACKEND");
  if (backend == nullptr || *backend == '\0' || std::string(backend) == "emulator") return std::nullopt;
  if (std::string(backend) != "opensearch") {
    ADD_FAILURE() << "ESLEASE_TEST_BACKEND is " << backend << "; it takes emulator or opensearch";
    return std::nullopt;
  }
  const char* file = std::getenv("ESLEASE_TEST_ENGINE_URL_FILE");
#ifdef ESLEASE_ENGINE_URL_FILE
  if (file == nullptr) file = ESLEASE_ENGINE_URL_FILE;
#endif
  std::string url;
  if (file != nullptr) {
    std::ifstream in(file);
    std::getline(in, url);
  }
  url = trim(url);
  if (!url.empty()) return url;
  static auto own = EngineProcess::start(ESLEASE_OPENSEARCH_RUN_SH,
                                         "/tmp/eslease-test-opensearch-" + std::to_string(getpid()) + ".log");
  if (!own.ok()) {
    ADD_FAILURE() << own.error().describe();
    return std::nullopt;
  }
  return (*own)->url();
}

class EsTestServer {
 public:
  explicit EsTestServer(esemu::EsEmulatorOptions options = {}) {
    if (auto real = real_server_url()) {
      while (!real->empty() && real->back() == '/') real->pop_back();
      esemu::EsEmulatorOptions proxy;
      proxy.upstream = *real;
      server_ = std::make_unique<esemu::EsEmulator>(std::move(proxy));
    } else {
      server_ = std::make_unique<esemu::EsEmulator>(std::move(options));
      own_store_ = true;
    }
    auto started = server_->start();
    EXPECT_TRUE(started.ok()) << started.error().describe();
    url_ = server_->url();
    admin_ = http::make_transport();
  }
  ~EsTestServer() { server_->stop(); }

  const std::string& url() const { return url_; }
  // The emulator answers itself (else a real server does, through the fault proxy).
  bool is_emulator() const { return own_store_; }

  // A fresh index name per call.
  static std::string unique_index(const std::string& prefix = "eslease-test") {
    static std::atomic<int> counter{0};
    std::random_device device;
    return prefix + "-" + std::to_string(device() % 1000000) + "-" + std::to_string(counter++);
  }

  // Request counters and fault rules: the emulator's, or the fault proxy's in front of a real
  // server; both count and strike alike.
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
  // Emulator only (ESLEASE_REQUIRE_EMULATOR): a new primary term, and the test-only snapshot
  // and restore (see its README).
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

  std::unique_ptr<esemu::EsEmulator> server_;  // the emulator, or the fault proxy
  bool own_store_ = false;
  std::string url_;
  std::unique_ptr<http::Transport> admin_;
};

#define ESLEASE_REQUIRE_EMULATOR(server) \
  if (!(server).is_emulator())           \
  GTEST_SKIP() << "needs the es-emulator's own store (the test runs against a real server)"

// A DocumentApi on the real transport for `url`.
inline std::unique_ptr<es::DocumentApi> make_api(const std::string& url, es::ClientOptions options = {}) {
  options.hosts = {url};
  auto api = es::make_http_document_api(http::make_transport(), std::move(options), SystemClock::instance());
  EXPECT_TRUE(api.ok()) << api.error().describe();
  return api.ok() ? std::move(*api) : nullptr;
}

}  // namespace eslease::testing
