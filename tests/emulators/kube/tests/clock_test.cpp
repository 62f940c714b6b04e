// Time in the kube-emulator runs on its injected clock: with a FakeClock a watch's timeout
// and bookmarks, and a pod's grace period, end exactly when the test moves time past them.
#include <gtest/gtest.h>

#include <thread>

#include "common/text.h"
#include "emulators/kube/tests/api_test_support.h"
#include "support/fake_clock.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using testing::RecordingResponse;
using Fake = eslease::testing::FakeClock;

const std::string kPods = "/api/v1/namespaces/default/pods";

// Whether `clock` has a waiter whose deadline is `deadline`: the thread is idle until then.
bool waits_for(const Fake& clock, MonoTime deadline) {
  return eslease::testing::wait_until([&] {
    const auto deadlines = clock.deadlines();
    return std::find(deadlines.begin(), deadlines.end(), deadline) != deadlines.end();
  });
}

std::size_t count_events(const RecordingResponse& response, const std::string& type) {
  std::size_t n = 0;
  for (const auto& event : response.events()) n += event.value("type", "") == type ? 1 : 0;
  return n;
}

TEST(KubeClock, AWatchSendsBookmarksAndEndsOnTheFakeClock) {
  Fake clock;
  ApiServerOptions options;
  options.bookmark_interval = std::chrono::seconds(1);
  ApiServer api(options, clock);
  RecordingResponse response;
  const auto request = testing::make_request(
      "GET", "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=5");
  const MonoTime start = clock.monotonic();
  std::thread watcher([&] { api.handle(request, response); });
  // The stream wakes every 100 ms of its clock to notice a closed peer.
  ASSERT_TRUE(waits_for(clock, start + std::chrono::milliseconds(100)));
  EXPECT_EQ(count_events(response, "BOOKMARK"), 0u);
  clock.advance(std::chrono::seconds(1));
  EXPECT_TRUE(eslease::testing::wait_until([&] { return count_events(response, "BOOKMARK") == 1; }));
  EXPECT_FALSE(response.ended());
  clock.advance(std::chrono::seconds(4));  // timeoutSeconds has run out
  watcher.join();
  EXPECT_TRUE(response.ended());
  EXPECT_EQ(response.status(), 200);
}

TEST(KubeClock, AGracefulDeleteEndsWhenTheScaledGracePeriodHasRunOut) {
  Fake clock;
  ApiServerOptions options;
  options.simulate_kubelet = true;
  options.kubelet.schedule_delay = std::chrono::milliseconds(0);
  options.kubelet.start_delay = std::chrono::milliseconds(0);
  options.kubelet.grace_scale = 0.5;  // 2 s of grace: the containers stop after 1 s
  ApiServer api(options, clock);
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "graceful"}}},
      {"spec", {{"terminationGracePeriodSeconds", 2}, {"containers", {{{"name", "app"}, {"image", "x"}}}}}}};
  ASSERT_EQ(call(api, "POST", kPods, pod).status, 201);
  ASSERT_TRUE(eslease::testing::wait_until(
      [&] { return call(api, "GET", kPods + "/graceful").body["status"].value("phase", "") == "Running"; }));

  const WallTime wall = clock.now();
  const MonoTime deleted_at = clock.monotonic();
  auto answered = call(api, "DELETE", kPods + "/graceful");
  ASSERT_EQ(answered.status, 200);
  EXPECT_EQ(answered.body["metadata"]["deletionTimestamp"],
            format_rfc3339_seconds(wall + std::chrono::seconds(2)));
  ASSERT_TRUE(waits_for(clock, deleted_at + std::chrono::seconds(1)));
  clock.advance(std::chrono::milliseconds(999));
  EXPECT_EQ(call(api, "GET", kPods + "/graceful").status, 200) << "still within its grace period";
  clock.advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(
      eslease::testing::wait_until([&] { return call(api, "GET", kPods + "/graceful").status == 404; }));
}

}  // namespace
}  // namespace eslease::kubeemu
