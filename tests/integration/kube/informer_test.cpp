#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "integration/kube/kube_fixture.h"
#include "support/wait.h"

namespace eslease::kube::testing {
namespace {

using namespace std::chrono_literals;
using eslease::testing::wait_until;
using InformerIntegrationTest = KubeFixture;
const Resource kPods = resources::pods();

InformerOptions fast_options(const std::string& ns) {
  InformerOptions options;
  options.ns = ns;
  options.page_size = 7;
  options.backoff = {std::chrono::milliseconds(20), std::chrono::milliseconds(200), 2.0};
  options.idle_timeout = 5s;
  return options;
}

class Converged {
 public:
  Converged(Api& api, const std::string& ns, const JsonInformer& informer, const HandlerState& handlers)
      : api_(api), ns_(ns), informer_(informer), handlers_(handlers) {}
  // Handlers and cache both describe exactly what a fresh LIST shows.
  bool operator()() const {
    auto truth = server_state(api_, kPods, ns_);
    return handlers_.state() == truth && cache_state(informer_) == truth;
  }

 private:
  Api& api_;
  std::string ns_;
  const JsonInformer& informer_;
  const HandlerState& handlers_;
};

void churn(Api& api, const std::string& ns, const std::function<json(const std::string&)>& make, int from,
           int to) {
  for (int i = from; i < to; ++i) ASSERT_TRUE(api.create(kPods, ns, make("c" + std::to_string(i))).ok());
  for (int i = from; i < to; i += 2) {
    ASSERT_TRUE(api.patch(kPods, ns, "c" + std::to_string(i), PatchType::kMerge,
                          {{"metadata", {{"labels", {{"round", std::to_string(i)}}}}}})
                    .ok());
  }
  for (int i = from; i < to; i += 3) ASSERT_TRUE(api.remove(kPods, ns, "c" + std::to_string(i)).ok());
}

TEST_F(InformerIntegrationTest, EventsArriveInOrder) {
  HandlerState handlers;
  std::vector<std::string> order;
  std::mutex order_mutex;
  InformerHandlers recording = handlers.handlers();
  auto inner_update = recording.on_update;
  recording.on_update = [&](const json& a, const json& b) {
    inner_update(a, b);
    std::lock_guard lock(order_mutex);
    order.push_back(meta_string(b, "resourceVersion"));
  };
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(api_->create(kPods, ns_, pod("pre" + std::to_string(i))).ok());
  JsonInformer informer(*api_, SystemClock::instance(), kPods, fast_options(ns_), recording);
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(api_->patch(kPods, ns_, "pre0", PatchType::kMerge,
                            {{"metadata", {{"labels", {{"n", std::to_string(i)}}}}}})
                    .ok());
  }
  churn(
      *api_, ns_, [&](const std::string& n) { return pod(n); }, 0, 20);
  Converged converged(*api_, ns_, informer, handlers);
  ASSERT_TRUE(wait_until(converged, 10s));
  informer.stop();
  EXPECT_TRUE(handlers.errors().empty()) << handlers.errors()[0];
  EXPECT_EQ(handlers.count("update", ns_ + "/pre0"), 10);
  std::lock_guard lock(order_mutex);
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_LT(std::stoull(order[i - 1]), std::stoull(order[i])) << "updates out of order";
  }
}

TEST_F(InformerIntegrationTest, RecoversFromADroppedWatch) {
  if (!has_admin()) GTEST_SKIP() << "needs the emulator's admin endpoints";
  HandlerState handlers;
  JsonInformer informer(*api_, SystemClock::instance(), kPods, fast_options(ns_), handlers.handlers());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  churn(
      *api_, ns_, [&](const std::string& n) { return pod(n); }, 0, 10);
  // Synced means listed; the watch that follows may not be open yet, and a drop before it
  // opens drops nothing.
  ASSERT_TRUE(wait_until([&] { return open_watches() >= 1; }, 10s));
  admin("POST", "/_emulator/watches/drop");
  churn(
      *api_, ns_, [&](const std::string& n) { return pod(n); }, 10, 20);
  ASSERT_TRUE(wait_until(Converged(*api_, ns_, informer, handlers), 10s));
  informer.stop();
  EXPECT_TRUE(handlers.errors().empty()) << handlers.errors()[0];
  EXPECT_GE(informer.restarts(RestartReason::kClosed) + informer.restarts(RestartReason::kError), 1);
}

TEST_F(InformerIntegrationTest, RelistsAfterCompactionExpiresItsVersion) {
  if (!has_admin()) GTEST_SKIP() << "needs the emulator's admin endpoints";
  HandlerState handlers;
  churn(
      *api_, ns_, [&](const std::string& n) { return pod(n); }, 0, 10);
  JsonInformer informer(*api_, SystemClock::instance(), kPods, fast_options(ns_), handlers.handlers());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  // Hold the informer's next watch request at the server while the history moves on and is
  // compacted away; the watch then starts from a version that no longer exists.
  admin("POST", "/_emulator/faults",
        {{"verb", "watch"}, {"resource", "pods"}, {"latency_ms", 1500}, {"count", 1}});
  admin("POST", "/_emulator/watches/drop");
  churn(
      *api_, ns_, [&](const std::string& n) { return pod(n); }, 10, 20);
  admin("POST", "/_emulator/compact");
  ASSERT_TRUE(wait_until([&] { return informer.restarts(RestartReason::kExpired) >= 1; }, 10s));
  ASSERT_TRUE(wait_until(Converged(*api_, ns_, informer, handlers), 10s));
  informer.stop();
  EXPECT_TRUE(handlers.errors().empty()) << handlers.errors()[0];
  for (int i = 10; i < 20; ++i) {
    const std::string key = ns_ + "/c" + std::to_string(i);
    EXPECT_LE(handlers.count("add", key), 1) << key;
    EXPECT_LE(handlers.count("delete", key), 1) << key;
  }
}

TEST_F(InformerIntegrationTest, ConvergesAfterServerRestartWithDifferentObjects) {
  if (!has_admin()) GTEST_SKIP() << "needs the emulator's admin endpoints";
  HandlerState handlers;
  for (const char* name : {"same-name", "only-old-1", "only-old-2"})
    ASSERT_TRUE(api_->create(kPods, ns_, pod(name)).ok());
  JsonInformer informer(*api_, SystemClock::instance(), kPods, fast_options(ns_), handlers.handlers());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  const std::string old_uid = meta_string(*informer.cache().get(ns_ + "/same-name"), "uid");

  const std::string url = emulator_->url();
  const auto port = static_cast<std::uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  const int errors_before = informer.restarts(RestartReason::kError);
  emulator_->stop();
  // A real restart takes a while: the informer sees the server gone before it is back.
  ASSERT_TRUE(wait_until([&] { return informer.restarts(RestartReason::kError) > errors_before; }, 10s));
  restart_emulator(port);
  for (const char* name : {"same-name", "only-new"}) ASSERT_TRUE(create_after_restart(kPods, ns_, pod(name)));

  ASSERT_TRUE(wait_until(Converged(*api_, ns_, informer, handlers), 15s));
  informer.stop();
  EXPECT_TRUE(handlers.errors().empty()) << handlers.errors()[0];
  EXPECT_EQ(handlers.count("delete", ns_ + "/only-old-1"), 1);
  EXPECT_EQ(handlers.count("delete", ns_ + "/only-old-2"), 1);
  EXPECT_EQ(handlers.count("add", ns_ + "/only-new"), 1);
  EXPECT_NE(meta_string(*informer.cache().get(ns_ + "/same-name"), "uid"), old_uid);
}

TEST_F(InformerIntegrationTest, ReconnectsAWatchSilentPastTheIdleTimeout) {
  if (!has_admin()) GTEST_SKIP() << "needs an emulator whose bookmark interval we choose";
  kubeemu::KubeEmulatorOptions quiet;
  quiet.bookmark_interval = std::chrono::minutes(10);
  start_server(quiet);
  HandlerState handlers;
  InformerOptions options = fast_options(ns_);
  options.idle_timeout = 300ms;
  JsonInformer informer(*api_, SystemClock::instance(), kPods, options, handlers.handlers());
  informer.start();
  ASSERT_TRUE(informer.wait_for_sync(10s));
  ASSERT_TRUE(wait_until([&] { return informer.restarts(RestartReason::kIdle) >= 2; }, 10s));
  churn(
      *api_, ns_, [&](const std::string& n) { return pod(n); }, 0, 10);
  ASSERT_TRUE(wait_until(Converged(*api_, ns_, informer, handlers), 10s));
  informer.stop();
  EXPECT_TRUE(handlers.errors().empty()) << handlers.errors()[0];
}

TEST_F(InformerIntegrationTest, StopReturnsPromptlyMidWatch) {
  // Heap-held, so a stop that never returns can be left behind and reported as a failure
  // instead of hanging the suite.
  auto informer = std::make_unique<JsonInformer>(*api_, SystemClock::instance(), kPods, fast_options(ns_),
                                                 InformerHandlers{});
  informer->start();
  ASSERT_TRUE(informer->wait_for_sync(10s));
  // An object that arrives through the watch: the watch is open, and then quiet.
  ASSERT_TRUE(api_->create(kPods, ns_, pod("mid-watch")).ok());
  ASSERT_TRUE(wait_until([&] { return informer->cache().get(ns_ + "/mid-watch").has_value(); }, 10s));
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  std::thread stopping([running = informer.get(), stopped] {
    running->stop();
    *stopped = true;
  });
  const bool prompt = wait_until([&] { return stopped->load(); }, 10s);
  if (prompt) {
    stopping.join();
  } else {
    stopping.detach();
    (void)informer.release();
  }
  EXPECT_TRUE(prompt) << "stop() did not return within 10 s of a quiet open watch";
}

}  // namespace
}  // namespace eslease::kube::testing
