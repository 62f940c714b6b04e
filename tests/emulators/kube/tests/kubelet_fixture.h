// The simulated kubelet's test fixture: a kube-emulator over real HTTP with a fast kubelet,
// request helpers, and a watch that records its events.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stop_token>
#include <thread>

#include "emulators/kube/kube_emulator.h"
#include "http/transport.h"
#include "support/wait.h"

namespace eslease::kubeemu::kubelet_testing {

using eslease::testing::wait_until;
using nlohmann::json;

inline const std::string kPods = "/api/v1/namespaces/default/pods";

inline json pod(const std::string& name, std::optional<int> grace = std::nullopt) {
  json object = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", name}, {"labels", {{"app", "web"}}}}},
                 {"spec", {{"containers", {{{"name", "app"}, {"image", "nginx:1.27"}}}}}}};
  if (grace) object["spec"]["terminationGracePeriodSeconds"] = *grace;
  return object;
}

inline const json* condition(const json& object, const std::string& type) {
  if (!object.contains("status") || !object["status"].contains("conditions")) return nullptr;
  for (const auto& c : object["status"]["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

inline std::string condition_status(const json& object, const std::string& type) {
  const json* c = condition(object, type);
  return c ? c->value("status", "") : "";
}

inline std::uint64_t rv_of(const json& object) {
  return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
}

// A watch on its own thread over real HTTP; events are kept in arrival order.
class Watch {
 public:
  Watch(const std::string& url) : thread_([this, url] { run(url); }) {}
  ~Watch() {
    stop_.request_stop();
    thread_.join();
  }
  std::vector<json> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // The first event of `type` whose object satisfies `match`, waiting for it.
  std::optional<json> wait_for(const std::string& type, const std::function<bool(const json&)>& match,
                               std::chrono::milliseconds deadline = std::chrono::seconds(10)) const {
    std::optional<json> found;
    wait_until(
        [&] {
          for (const auto& e : events()) {
            if (e.value("type", "") == type && match(e["object"])) {
              found = e;
              return true;
            }
          }
          return false;
        },
        deadline);
    return found;
  }

 private:
  void run(const std::string& url) {
    auto transport = http::make_transport();
    http::Request request;
    request.url = url;
    request.timeout = std::chrono::seconds(60);
    std::string buffer;
    (void)transport->stream(
        request,
        [&](std::string_view chunk) {
          buffer.append(chunk);
          std::size_t end;
          while ((end = buffer.find('\n')) != std::string::npos) {
            json event = json::parse(buffer.substr(0, end), nullptr, false);
            buffer.erase(0, end + 1);
            std::lock_guard lock(mutex_);
            events_.push_back(std::move(event));
          }
          return true;
        },
        stop_.get_token());
  }

  mutable std::mutex mutex_;
  std::vector<json> events_;
  std::stop_source stop_;
  std::thread thread_;
};

class KubeletTest : public ::testing::Test {
 protected:
  static KubeletOptions fast() {
    KubeletOptions kubelet;
    kubelet.schedule_delay = std::chrono::milliseconds(1);
    kubelet.start_delay = std::chrono::milliseconds(2);
    kubelet.grace_scale = 0.2;  // a 2 s grace period is 400 ms; the default 30 s is 6 s
    return kubelet;
  }

  void start(bool simulate = true, KubeletOptions kubelet = fast()) {
    KubeEmulatorOptions options;
    options.simulate_kubelet = simulate;
    options.kubelet = kubelet;
    emulator_ = std::make_unique<KubeEmulator>(options);
    ASSERT_TRUE(emulator_->start().ok());
  }
  void TearDown() override {
    if (emulator_) emulator_->stop();
  }

  http::Response send(const std::string& method, const std::string& path, const json& body = nullptr,
                      const std::string& raw = "") {
    http::Request request;
    request.method = method;
    request.url = emulator_->url() + path;
    if (!body.is_null() || !raw.empty()) {
      request.headers = {{"Content-Type", "application/json"}};
      request.body = raw.empty() ? body.dump() : raw;
    }
    auto reply = transport_->send(request);
    EXPECT_TRUE(reply.ok()) << (reply.ok() ? "" : reply.error().describe());
    return reply.ok() ? *reply : http::Response{};
  }
  json send_json(const std::string& method, const std::string& path, const json& body = nullptr,
                 int expected = 200) {
    auto reply = send(method, path, body);
    EXPECT_EQ(reply.status, expected) << method << " " << path << ": " << reply.body;
    return json::parse(reply.body, nullptr, false);
  }
  json get(const std::string& path) { return send_json("GET", path); }
  http::Response merge_patch(const std::string& path, const std::string& body) {
    http::Request request;
    request.method = "PATCH";
    request.url = emulator_->url() + path;
    request.headers = {{"Content-Type", "application/merge-patch+json"}};
    request.body = body;
    auto reply = transport_->send(request);
    EXPECT_TRUE(reply.ok());
    return reply.ok() ? *reply : http::Response{};
  }
  int status_of(const std::string& path) { return send("GET", path).status; }

  std::unique_ptr<Watch> watch_pods() {
    const std::string rv = get(kPods)["metadata"]["resourceVersion"];
    return std::make_unique<Watch>(emulator_->url() + kPods + "?watch=true&resourceVersion=" + rv);
  }
  json create(const json& object) { return send_json("POST", kPods, object, 201); }
  // Waits until the pod is Running and Ready; returns it.
  json wait_running(const std::string& name) {
    json current;
    EXPECT_TRUE(wait_until([&] {
      current = get(kPods + "/" + name);
      return current["status"].value("phase", "") == "Running" &&
             condition_status(current, "Ready") == "True";
    })) << current.dump();
    return current;
  }

  std::unique_ptr<KubeEmulator> emulator_;
  std::unique_ptr<http::Transport> transport_ = http::make_transport();
};

}  // namespace eslease::kubeemu::kubelet_testing
