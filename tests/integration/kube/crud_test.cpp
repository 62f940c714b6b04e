#include <gtest/gtest.h>

#include "integration/kube/kube_fixture.h"
#include "support/wait.h"

namespace eslease::kube::testing {
namespace {

using CrudTest = KubeFixture;
const Resource kPods = resources::pods();

TEST_F(CrudTest, CreateGetUpdatePatchDeleteWithTypedErrors) {
  auto created = api_->create(kPods, ns_, pod("web"));
  ASSERT_TRUE(created.ok()) << created.error().describe();
  EXPECT_FALSE(meta_string(*created, "uid").empty());
  EXPECT_EQ(api_->create(kPods, ns_, pod("web")).error().code, ErrorCode::kAlreadyExists);

  auto fetched = api_->get(kPods, ns_, "web");
  ASSERT_TRUE(fetched.ok());
  json changed = *fetched;
  changed["metadata"]["labels"]["tier"] = "front";
  auto updated = api_->update(kPods, changed);
  ASSERT_TRUE(updated.ok()) << updated.error().describe();
  // The same (now stale) resourceVersion again: optimistic concurrency refuses it.
  auto stale = api_->update(kPods, changed);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, ErrorCode::kConflict);
  EXPECT_EQ(stale.error().http_status, 409);

  auto merged =
      api_->patch(kPods, ns_, "web", PatchType::kMerge, {{"metadata", {{"labels", {{"patched", "yes"}}}}}});
  ASSERT_TRUE(merged.ok()) << merged.error().describe();
  EXPECT_EQ((*merged)["metadata"]["labels"]["patched"], "yes");
  EXPECT_EQ((*merged)["metadata"]["labels"]["tier"], "front");
  auto json_patched = api_->patch(kPods, ns_, "web", PatchType::kJson,
                                  json::array({{{"op", "remove"}, {"path", "/metadata/labels/tier"}}}));
  ASSERT_TRUE(json_patched.ok()) << json_patched.error().describe();
  EXPECT_FALSE((*json_patched)["metadata"]["labels"].contains("tier"));

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "not-the-uid";
  EXPECT_EQ(api_->remove(kPods, ns_, "web", wrong_uid).error().code, ErrorCode::kConflict);
  DeleteOptions right_uid;
  right_uid.precondition_uid = meta_string(*created, "uid");
  EXPECT_TRUE(api_->remove(kPods, ns_, "web", right_uid).ok());
  EXPECT_EQ(api_->get(kPods, ns_, "web").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(api_->remove(kPods, ns_, "web").error().code, ErrorCode::kNotFound);
}

TEST_F(CrudTest, InvalidObjectCarriesCauses) {
  auto bad = api_->create(kPods, ns_, pod("Not_A_Valid_Name"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalid);
  EXPECT_EQ(bad.error().http_status, 422);
  ASSERT_FALSE(bad.error().details.empty());
  EXPECT_NE(bad.error().details[0].find("metadata.name"), std::string::npos) << bad.error().describe();
}

TEST_F(CrudTest, PaginatedListAndListAll) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(api_->create(kPods, ns_, pod("p" + std::to_string(i))).ok());
  ListOptions first;
  first.limit = 2;
  auto page = api_->list(kPods, ns_, first);
  ASSERT_TRUE(page.ok()) << page.error().describe();
  EXPECT_EQ(page->items.size(), 2u);
  EXPECT_FALSE(page->continue_token.empty());
  auto all = list_all(*api_, kPods, ns_, first);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->items.size(), 5u);
  EXPECT_FALSE(all->resource_version.empty());
  ListOptions selected;
  selected.label_selector = "app=demo";
  selected.field_selector = "metadata.name=p3";
  auto one = api_->list(kPods, ns_, selected);
  ASSERT_TRUE(one.ok()) << one.error().describe();
  ASSERT_EQ(one->items.size(), 1u);
  EXPECT_EQ(meta_string(one->items[0], "name"), "p3");
}

TEST_F(CrudTest, InjectedThrottlingAndServerErrors) {
  if (!has_admin()) GTEST_SKIP() << "needs the emulator's admin endpoints";
  admin("POST", "/_emulator/faults",
        {{"verb", "get"}, {"resource", "pods"}, {"status", 429}, {"count", 1}, {"retry_after_seconds", 4}});
  auto throttled = api_->get(kPods, ns_, "x");
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.error().code, ErrorCode::kTooManyRequests);
  ASSERT_TRUE(throttled.error().retry_after.has_value());
  EXPECT_EQ(*throttled.error().retry_after, std::chrono::seconds(4));
  admin("POST", "/_emulator/faults", {{"verb", "get"}, {"resource", "pods"}, {"status", 500}, {"count", 1}});
  EXPECT_EQ(api_->get(kPods, ns_, "x").error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(api_->get(kPods, ns_, "x").error().code, ErrorCode::kNotFound);
}

TEST_F(CrudTest, WatchDeliversEventsAndExpiredAsErrorEvent) {
  auto listed = api_->list(kPods, ns_, {});
  ASSERT_TRUE(listed.ok());
  const std::string from = listed->resource_version;
  ASSERT_TRUE(api_->create(kPods, ns_, pod("w1")).ok());
  ASSERT_TRUE(api_->remove(kPods, ns_, "w1").ok());
  std::vector<std::string> seen;
  WatchOptions options;
  options.resource_version = from;
  options.idle_timeout = std::chrono::seconds(10);
  Status ended =
      api_->watch(kPods, ns_, options,
                  [&](const WatchEvent& e) {
                    if (e.type == WatchEvent::Type::kBookmark) return true;
                    seen.push_back(std::string(to_string(e.type)) + ":" + meta_string(e.object, "name"));
                    return seen.size() < 2;
                  },
                  {});
  EXPECT_TRUE(ended.ok()) << ended.error().describe();
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED:w1", "DELETED:w1"}));

  if (!has_admin()) return;
  admin("POST", "/_emulator/compact");
  std::optional<WatchEvent> error_event;
  Status expired = api_->watch(kPods, ns_, options,
                               [&](const WatchEvent& e) {
                                 if (e.type == WatchEvent::Type::kError) error_event = e;
                                 return e.type != WatchEvent::Type::kError;
                               },
                               {});
  ASSERT_TRUE(error_event.has_value()) << (expired.ok() ? "" : expired.error().describe());
  EXPECT_EQ(error_event->object["code"], 410);
  EXPECT_EQ(error_event->object["reason"], "Expired");
}

TEST_F(CrudTest, WatchStopsPromptlyWhenAsked) {
  std::stop_source stop;
  std::atomic<bool> watching{false};
  std::thread watcher([&] {
    WatchOptions options;
    options.idle_timeout = std::chrono::seconds(30);
    Status ended = api_->watch(
        kPods, ns_, options, [&](const WatchEvent&) { return true; }, stop.get_token());
    watching = true;
    EXPECT_FALSE(ended.ok());
  });
  ASSERT_TRUE(api_->create(kPods, ns_, pod("s1")).ok());
  stop.request_stop();
  watcher.join();  // returns: the stream honours the stop token
  EXPECT_TRUE(watching.load());
}

}  // namespace
}  // namespace eslease::kube::testing
