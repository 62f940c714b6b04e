#include "kube/informer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "support/fake_clock.h"
#include "support/memory_api.h"
#include "support/wait.h"

namespace eslease::kube {
namespace {

using testing::make_object;
using testing::MemoryApi;

const Resource kPods = resources::pods();

// Records handler calls as "add:key", "update:key", "delete:key".
class Recorder {
 public:
  InformerHandlers handlers() {
    return {[this](const json& o) { note("add:" + object_key(o)); },
            [this](const json&, const json& o) { note("update:" + object_key(o)); },
            [this](const json& o) { note("delete:" + object_key(o)); },
            {}};
  }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  std::size_t size() const { return calls().size(); }

 private:
  void note(std::string call) {
    std::lock_guard lock(mutex_);
    calls_.push_back(std::move(call));
  }
  mutable std::mutex mutex_;
  std::vector<std::string> calls_;
};

MemoryApi::WatchScript send(std::vector<WatchEvent> events, Status end = {}) {
  return [events = std::move(events), end](const WatchOptions&, const WatchHandler& handler) {
    for (const auto& e : events) {
      if (!handler(e)) return Status{};
    }
    return end;
  };
}

WatchEvent ev(WatchEvent::Type type, json object) {
  return {type, std::move(object)};
}

InformerOptions small_pages() {
  InformerOptions options;
  options.page_size = 2;
  return options;
}

TEST(InformerTest, ListsAllPagesThenWatchesFromTheListVersion) {
  MemoryApi api;
  for (const char* name : {"a", "b", "c", "d", "e"}) api.put_object(kPods, make_object("ns", name));
  eslease::testing::FakeClock clock;
  Recorder recorder;
  JsonInformer informer(api, clock, kPods, small_pages(), recorder.handlers());
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return informer.has_synced(); }));
  EXPECT_EQ(informer.cache().size(), 5u);
  EXPECT_EQ(recorder.size(), 5u);
  ASSERT_TRUE(eslease::testing::wait_until([&] { return !api.watch_calls().empty(); }));
  informer.stop();
  auto watch = api.watch_calls()[0];
  EXPECT_EQ(watch.resource_version, api.current_rv());
  EXPECT_TRUE(watch.allow_bookmarks);
  EXPECT_GE(watch.timeout_seconds, 300);
  EXPECT_LT(watch.timeout_seconds, 600);
}

TEST(InformerTest, AppliesEventsSkipsDuplicatesAndFollowsBookmarks) {
  MemoryApi api;
  api.put_object(kPods, make_object("ns", "a", "1"));
  api.push_watch(send({ev(WatchEvent::Type::kAdded, make_object("ns", "b", "200")),
                       ev(WatchEvent::Type::kAdded, make_object("ns", "b", "200")),  // duplicate
                       ev(WatchEvent::Type::kModified, make_object("ns", "a", "201")),
                       ev(WatchEvent::Type::kDeleted, make_object("ns", "b", "202")),
                       ev(WatchEvent::Type::kDeleted, make_object("ns", "zz", "203")),  // unknown
                       ev(WatchEvent::Type::kBookmark, {{"metadata", {{"resourceVersion", "300"}}}})}));
  eslease::testing::FakeClock clock;
  Recorder recorder;
  JsonInformer informer(api, clock, kPods, small_pages(), recorder.handlers());
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return api.watch_calls().size() >= 2; }));
  informer.stop();
  EXPECT_EQ(recorder.calls(),
            (std::vector<std::string>{"add:ns/a", "add:ns/b", "update:ns/a", "delete:ns/b"}));
  EXPECT_EQ(api.watch_calls()[1].resource_version, "300");
  EXPECT_EQ(informer.cache().get("ns/a")->at("metadata").at("resourceVersion"), "201");
  EXPECT_EQ(informer.restarts(RestartReason::kClosed), 1);
}

// A 410 makes the informer re-list; the new list is diffed against the cache, so each
// change made while the informer was not watching is reported exactly once.
void expect_relist_diff(bool as_error_event) {
  MemoryApi api;
  api.put_object(kPods, make_object("ns", "keep"));
  api.put_object(kPods, make_object("ns", "change"));
  api.put_object(kPods, make_object("ns", "vanish"));
  api.put_object(kPods, make_object("ns", "replace", "1", "old-uid"));
  api.push_watch([&](const WatchOptions&, const WatchHandler& handler) -> Status {
    api.put_object(kPods, make_object("ns", "change"));
    api.erase_object(kPods, "ns/vanish");
    api.put_object(kPods, make_object("ns", "new"));
    api.put_object(kPods, make_object("ns", "replace", "1", "new-uid"));
    if (as_error_event) {
      handler({WatchEvent::Type::kError,
               {{"kind", "Status"}, {"status", "Failure"}, {"reason", "Expired"}, {"code", 410}}});
      return {};
    }
    return make_error(ErrorCode::kGone, "too old", 410);
  });
  eslease::testing::FakeClock clock;
  Recorder recorder;
  JsonInformer informer(api, clock, kPods, small_pages(), recorder.handlers());
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return recorder.size() >= 9; }));
  informer.stop();
  auto calls = recorder.calls();
  std::vector<std::string> after_relist(calls.begin() + 4, calls.end());
  std::sort(after_relist.begin(), after_relist.end());
  EXPECT_EQ(after_relist, (std::vector<std::string>{"add:ns/new", "add:ns/replace", "delete:ns/replace",
                                                    "delete:ns/vanish", "update:ns/change"}));
  EXPECT_EQ(informer.restarts(RestartReason::kExpired), 1);
  EXPECT_EQ(informer.cache().size(), 4u);
  EXPECT_FALSE(informer.cache().get("ns/vanish").has_value());
}

// What a list adds is told together first (objects made while nobody watched, whose order
// a list does not keep), then one by one; what the watch adds, one by one only.
TEST(InformerTest, TheObjectsAListAddsAreToldTogetherBeforeEachOne) {
  MemoryApi api;
  for (const char* name : {"a", "b", "c"}) api.put_object(kPods, make_object("ns", name));
  api.push_watch(send({ev(WatchEvent::Type::kAdded, make_object("ns", "d", "200"))}));
  std::mutex mutex;
  std::vector<std::string> calls;
  InformerHandlers handlers;
  handlers.on_add = [&](const json& o) {
    std::lock_guard lock(mutex);
    calls.push_back("add:" + object_key(o));
  };
  handlers.on_listed = [&](const std::vector<const json*>& added) {
    std::lock_guard lock(mutex);
    std::string names = "listed:";
    for (const json* o : added) names += object_key(*o) + " ";
    calls.push_back(names);
  };
  eslease::testing::FakeClock clock;
  JsonInformer informer(api, clock, kPods, small_pages(), handlers);
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] {
    std::lock_guard lock(mutex);
    return calls.size() >= 5;
  }));
  informer.stop();
  std::lock_guard lock(mutex);
  ASSERT_EQ(calls.size(), 5U);
  std::vector<std::string> listed_adds(calls.begin() + 1, calls.begin() + 4);
  std::sort(listed_adds.begin(), listed_adds.end());
  EXPECT_EQ(listed_adds, (std::vector<std::string>{"add:ns/a", "add:ns/b", "add:ns/c"}));
  EXPECT_EQ(calls.back(), "add:ns/d") << "the watch's add alone";
  std::string listed = calls.front();
  EXPECT_EQ(listed.substr(0, 7), "listed:");
  for (const char* key : {"ns/a ", "ns/b ", "ns/c "}) EXPECT_NE(listed.find(key), std::string::npos) << key;
}

TEST(InformerTest, RelistsOn410ErrorEvent) {
  expect_relist_diff(true);
}
TEST(InformerTest, RelistsOn410HttpStatus) {
  expect_relist_diff(false);
}

TEST(InformerTest, BacksOffOnListFailuresAndHonoursRetryAfter) {
  MemoryApi api;
  api.put_object(kPods, make_object("ns", "a"));
  Error throttled = make_error(ErrorCode::kTooManyRequests, "slow down", 429);
  throttled.retry_after = std::chrono::seconds(7);
  api.push_list_error(make_error(ErrorCode::kUnavailable, "down", 503));
  api.push_list_error(throttled);
  eslease::testing::FakeClock clock;
  const MonoTime before = clock.monotonic();
  Recorder recorder;
  JsonInformer informer(api, clock, kPods, small_pages(), recorder.handlers());
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return informer.has_synced(); }));
  informer.stop();
  EXPECT_EQ(informer.restarts(RestartReason::kError), 2);
  EXPECT_GE(clock.monotonic() - before, std::chrono::seconds(7));
  EXPECT_EQ(recorder.calls(), std::vector<std::string>{"add:ns/a"});
}

TEST(InformerTest, WatchThatCannotStartLeadsToRelistIdleOnlyToReconnect) {
  MemoryApi api;
  api.put_object(kPods, make_object("ns", "a"));
  api.push_watch(send({ev(WatchEvent::Type::kBookmark, {{"metadata", {{"resourceVersion", "150"}}}})},
                      make_error(ErrorCode::kTimeout, "idle")));
  api.push_watch(send({}, make_error(ErrorCode::kUnavailable, "connection refused")));
  eslease::testing::FakeClock clock;
  Recorder recorder;
  JsonInformer informer(api, clock, kPods, small_pages(), recorder.handlers());
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return api.watch_calls().size() >= 3; }));
  informer.stop();
  EXPECT_EQ(informer.restarts(RestartReason::kIdle), 1);
  EXPECT_EQ(informer.restarts(RestartReason::kError), 1);
  EXPECT_EQ(api.list_calls(), 2);  // the initial list and the one after the refused watch
  EXPECT_EQ(api.watch_calls()[1].resource_version, "150");
  EXPECT_EQ(recorder.calls(), std::vector<std::string>{"add:ns/a"});  // nothing changed: no duplicate add
}

// A watch that ends in an error event at once made no progress: the informer backs off
// further each time instead of retrying at the initial delay forever.
TEST(InformerTest, WatchesEndingInAnErrorEventBackOffFurtherEachTime) {
  MemoryApi api;
  api.put_object(kPods, make_object("ns", "a"));
  constexpr int kFailures = 5;
  for (int i = 0; i < kFailures; ++i) {
    api.push_watch(
        send({ev(WatchEvent::Type::kError,
                 {{"kind", "Status"}, {"status", "Failure"}, {"message", "etcd busy"}, {"code", 500}})}));
  }
  eslease::testing::FakeClock clock;
  const MonoTime before = clock.monotonic();
  Recorder recorder;
  JsonInformer informer(api, clock, kPods, small_pages(), recorder.handlers());
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return api.watch_calls().size() > kFailures; }));
  const Millis waited = std::chrono::duration_cast<Millis>(clock.monotonic() - before);
  informer.stop();
  EXPECT_EQ(informer.restarts(RestartReason::kError), kFailures);
  // Each delay is at least half its cap, the cap doubling from 800 ms: 400 + 800 + ... + 6400.
  EXPECT_GE(waited, Millis(12400)) << "retrying at the initial delay each time";
}

TEST(InformerTest, TransformKeepsOnlyNeededPodFields) {
  MemoryApi api;
  json pod = make_object("ns", "p");
  pod["spec"] = {{"nodeName", "n1"}, {"containers", json::array({{{"name", "c"}, {"image", "big"}}})}};
  pod["status"] = {{"phase", "Running"},
                   {"conditions", json::array({{{"type", "Initialized"}, {"status", "True"}},
                                               {{"type", "Ready"}, {"status", "False"}}})}};
  pod["metadata"]["labels"] = {{"app", "x"}};
  pod["metadata"]["annotations"] = {{"big", std::string(1000, 'x')}};
  api.put_object(kPods, pod);
  eslease::testing::FakeClock clock;
  JsonInformer informer(api, clock, kPods, small_pages(), {}, keep_pod_liveness_fields);
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return informer.has_synced(); }));
  informer.stop();
  json cached = *informer.cache().get("ns/p");
  EXPECT_EQ(cached["spec"], (json{{"nodeName", "n1"}}));
  EXPECT_EQ(cached["status"]["phase"], "Running");
  ASSERT_EQ(cached["status"]["conditions"].size(), 1u);
  EXPECT_EQ(cached["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(cached["metadata"]["labels"]["app"], "x");
  EXPECT_FALSE(cached["metadata"].contains("annotations"));
  EXPECT_EQ(cached["metadata"]["uid"], "uid-p");
}

TEST(InformerTest, StopIsPromptDuringAQuietWatch) {
  MemoryApi api;
  eslease::testing::FakeClock clock;
  JsonInformer informer(api, clock, kPods, {}, {});
  informer.start();
  ASSERT_TRUE(eslease::testing::wait_until([&] { return !api.watch_calls().empty(); }));
  informer.stop();  // returns: the watch honours the stop token
  EXPECT_TRUE(informer.has_synced());
}

}  // namespace
}  // namespace eslease::kube
