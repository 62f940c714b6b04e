// Integration fixture: an in-process Kubernetes API emulator on 127.0.0.1 (port 0), or a
// real cluster when ESLEASE_TEST_KUBECONFIG is set (admin-endpoint tests skip then).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "emulators/kube/kube_emulator.h"
#include "http/transport.h"
#include "kube/config.h"
#include "kube/http_api.h"
#include "kube/informer.h"
#include "support/wait.h"

namespace eslease::kube::testing {

inline const char* real_cluster_kubeconfig() {
  const char* path = std::getenv("ESLEASE_TEST_KUBECONFIG");
  return path && *path ? path : nullptr;
}

inline std::string unique_name(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

class KubeFixture : public ::testing::Test {
 protected:
  void SetUp() override { start_server({}); }
  void TearDown() override {
    api_.reset();
    if (emulator_) emulator_->stop();
  }

  // (Re)starts the emulator (or connects to the real cluster) and creates a fresh namespace.
  void start_server(kubeemu::KubeEmulatorOptions options) {
    api_.reset();
    if (const char* kubeconfig = real_cluster_kubeconfig()) {
      auto config = load_kubeconfig(kubeconfig);
      ASSERT_TRUE(config.ok()) << config.error().describe();
      api_ = HttpApi::connect(*config);
    } else {
      if (emulator_) emulator_->stop();
      emulator_ = std::make_unique<kubeemu::KubeEmulator>(options);
      ASSERT_TRUE(emulator_->start().ok());
      auto path = std::filesystem::temp_directory_path() / (unique_name("kubeconfig") + ".yaml");
      ASSERT_TRUE(emulator_->write_kubeconfig(path.string()).ok());
      auto config = load_kubeconfig(path);
      std::filesystem::remove(path);
      ASSERT_TRUE(config.ok()) << config.error().describe();
      api_ = HttpApi::connect(*config);
    }
    if (ns_.empty()) ns_ = unique_name("kt");
    auto created = api_->create(resources::namespaces(), "", {{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok() || created.error().code == ErrorCode::kAlreadyExists)
        << created.error().describe();
  }

  // Starts a fresh, empty emulator on `port` in place of a stopped one. api_ stays: it
  // keeps talking to the same address, as a client does across an API server restart.
  void restart_emulator(std::uint16_t port) {
    ASSERT_TRUE(emulator_);
    kubeemu::KubeEmulatorOptions options;
    options.port = port;
    emulator_->stop();
    emulator_ = std::make_unique<kubeemu::KubeEmulator>(options);
    ASSERT_TRUE(emulator_->start().ok());
    ASSERT_TRUE(create_after_restart(resources::namespaces(), "", {{"metadata", {{"name", ns_}}}}));
  }

  // Creates an object right after a restart. The client's pooled connections to the old
  // server are dead, and a write on one fails as kUnavailable (outcome unknown) rather than
  // being resent: retry as a caller would, until created or it already exists.
  bool create_after_restart(const Resource& resource, const std::string& ns, const nlohmann::json& object) {
    return eslease::testing::wait_until([&] {
      auto created = api_->create(resource, ns, object);
      return created.ok() || created.error().code == ErrorCode::kAlreadyExists;
    });
  }

  bool has_admin() const { return emulator_ != nullptr; }

  // GET/POST/DELETE to the emulator's /_emulator/ endpoints; the answer is kept in
  // admin_answer_.
  void admin(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr) {
    ASSERT_TRUE(emulator_);
    if (!admin_transport_) admin_transport_ = http::make_transport();
    http::Request request;
    request.method = method;
    request.url = emulator_->url() + path;
    if (!body.is_null()) {
      request.body = body.dump();
      request.headers.emplace_back("Content-Type", "application/json");
    }
    auto response = admin_transport_->send(request);
    ASSERT_TRUE(response.ok()) << response.error().describe();
    ASSERT_EQ(response->status, 200) << response->body;
    admin_answer_ = nlohmann::json::parse(response->body, nullptr, false);
  }

  // The watches the emulator serves now (its /_emulator/stats).
  int open_watches() {
    admin("GET", "/_emulator/stats");
    return admin_answer_.is_object() ? admin_answer_.value("watches_open", 0) : 0;
  }

  nlohmann::json pod(const std::string& name, const std::string& phase = "Running") {
    return {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", {{"app", "demo"}}}}},
            {"spec", {{"containers", nlohmann::json::array({{{"name", "c"}, {"image", "busybox"}}})}}},
            {"status", {{"phase", phase}}}};
  }

  std::unique_ptr<kubeemu::KubeEmulator> emulator_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<http::Transport> admin_transport_;
  nlohmann::json admin_answer_;
  std::string ns_;
};

// Replays handler calls into a map, to compare what handlers said with the server's truth,
// and counts calls per object.
class HandlerState {
 public:
  InformerHandlers handlers() {
    return {[this](const json& o) { on("add", o, false); },
            [this](const json&, const json& o) { on("update", o, false); },
            [this](const json& o) { on("delete", o, true); },
            {}};
  }
  // key -> resourceVersion as handlers describe the world.
  std::map<std::string, std::string> state() const {
    std::lock_guard lock(mutex_);
    return state_;
  }
  int count(const std::string& kind, const std::string& key) const {
    std::lock_guard lock(mutex_);
    auto it = counts_.find(kind + ":" + key);
    return it == counts_.end() ? 0 : it->second;
  }
  std::vector<std::string> errors() const {
    std::lock_guard lock(mutex_);
    return errors_;
  }

 private:
  void on(const std::string& kind, const json& object, bool removed) {
    std::lock_guard lock(mutex_);
    const std::string key = object_key(object);
    ++counts_[kind + ":" + key];
    const bool known = state_.count(key) > 0;
    // An add for a known object or an update/delete for an unknown one is a duplicate or
    // a lost event.
    if (kind == "add" && known) errors_.push_back("duplicate add " + key);
    if (kind != "add" && !known) errors_.push_back(kind + " of unknown " + key);
    if (removed) {
      state_.erase(key);
    } else {
      state_[key] = meta_string(object, "resourceVersion");
    }
  }
  mutable std::mutex mutex_;
  std::map<std::string, std::string> state_;
  std::map<std::string, int> counts_;
  std::vector<std::string> errors_;
};

// key -> resourceVersion from a fresh LIST.
inline std::map<std::string, std::string> server_state(Api& api, const Resource& r, const std::string& ns) {
  std::map<std::string, std::string> out;
  auto listed = list_all(api, r, ns, {});
  if (!listed.ok()) return out;
  for (const auto& item : listed->items) out[object_key(item)] = meta_string(item, "resourceVersion");
  return out;
}

inline std::map<std::string, std::string> cache_state(const JsonInformer& informer) {
  std::map<std::string, std::string> out;
  informer.cache().for_each(
      [&](const std::string& key, const json& object) { out[key] = meta_string(object, "resourceVersion"); });
  return out;
}

}  // namespace eslease::kube::testing
