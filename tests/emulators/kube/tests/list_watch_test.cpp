// LIST (selectors, pagination) and WATCH (history, 410, bookmarks, selector transitions,
// dropped streams) of the kube-emulator handler.
#include <gtest/gtest.h>

#include <thread>

#include "emulators/kube/tests/api_test_support.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using eslease::testing::wait_until;
using nlohmann::json;
using testing::call;

const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const std::string kPods = "/api/v1/namespaces/default/pods";

json pod(const std::string& name, const std::string& app, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", app}}}}},
          {"spec", {{"nodeName", node}}}};
}

// A watch served on its own thread, as the HTTP server would.
class WatchCall {
 public:
  WatchCall(ApiServer& api, const std::string& target, http::Headers headers = {})
      : request_(testing::make_request("GET", target, "", std::move(headers))), thread_([this, &api] {
          api.handle(request_, response_);
          finished_ = true;
        }) {}
  ~WatchCall() {
    response_.close_from_client();
    thread_.join();
  }
  std::vector<json> events() const { return response_.events(); }
  bool wait_for_events(std::size_t n) {
    return wait_until([&] { return events().size() >= n; });
  }
  bool finished() const { return finished_; }
  const testing::RecordingResponse& response() const { return response_; }

 private:
  http::ServerRequest request_;
  testing::RecordingResponse response_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

class KubeListWatchTest : public ::testing::Test {
 protected:
  ApiServerOptions options() {
    ApiServerOptions o;
    o.bookmark_interval = std::chrono::milliseconds(20);
    o.watch_history = 100;
    return o;
  }
  ApiServer api{options()};
};

TEST_F(KubeListWatchTest, LabelSelectors) {
  call(api, "POST", kPods, pod("a", "web", "n1"));
  call(api, "POST", kPods, pod("b", "db", "n1"));
  json unlabelled = pod("c", "x", "n2");
  unlabelled["metadata"].erase("labels");
  call(api, "POST", kPods, unlabelled);
  auto names = [&](const std::string& selector) {
    std::vector<std::string> out;
    auto reply = call(api, "GET", kPods + "?labelSelector=" + selector);
    for (const auto& item : reply.body["items"]) out.push_back(item["metadata"]["name"]);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names("app%3Dweb"), V({"a"}));
  EXPECT_EQ(names("app%3D%3Dweb"), V({"a"}));
  EXPECT_EQ(names("app!%3Dweb"), V({"b", "c"}));
  EXPECT_EQ(names("app%20in%20(web,db)"), V({"a", "b"}));
  EXPECT_EQ(names("app%20notin%20(web)"), V({"b", "c"}));
  EXPECT_EQ(names("app"), V({"a", "b"}));
  EXPECT_EQ(names("!app"), V({"c"}));
  EXPECT_EQ(call(api, "GET", kPods + "?labelSelector=app%20in%20web").status, 400);
}

TEST_F(KubeListWatchTest, FieldSelectors) {
  call(api, "POST", kPods, pod("a", "web", "n1"));
  call(api, "POST", kPods, pod("b", "web", "n2"));
  auto by_node = call(api, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn2");
  ASSERT_EQ(by_node.body["items"].size(), 1u);
  EXPECT_EQ(by_node.body["items"][0]["metadata"]["name"], "b");
  auto by_name = call(api, "GET", kPods + "?fieldSelector=metadata.name!%3Db,status.phase%3DPending");
  ASSERT_EQ(by_name.body["items"].size(), 1u);
  EXPECT_EQ(by_name.body["items"][0]["metadata"]["name"], "a");
  auto unsupported = call(api, "GET", kLeases + "?fieldSelector=spec.holderIdentity%3Dx");
  EXPECT_EQ(unsupported.status, 400);
  EXPECT_EQ(unsupported.body["reason"], "BadRequest");
  EXPECT_EQ(unsupported.body["message"], "field label not supported: spec.holderIdentity");
}

TEST_F(KubeListWatchTest, PaginatedListWithContinue) {
  for (int i = 0; i < 25; ++i) call(api, "POST", kLeases, testing::lease("l" + std::to_string(100 + i)));
  std::vector<std::string> seen;
  std::string token;
  std::string list_rv;
  int pages = 0;
  do {
    auto page = call(api, "GET", kLeases + "?limit=10" + (token.empty() ? "" : "&continue=" + token));
    ASSERT_EQ(page.status, 200) << page.body.dump();
    if (list_rv.empty()) list_rv = page.body["metadata"]["resourceVersion"];
    EXPECT_EQ(page.body["metadata"]["resourceVersion"], list_rv);
    for (const auto& item : page.body["items"]) seen.push_back(item["metadata"]["name"]);
    token = page.body["metadata"].value("continue", "");
    if (!token.empty()) {
      EXPECT_EQ(page.body["metadata"]["remainingItemCount"], 25 - 10 * (pages + 1));
      // A write between pages must not change the reported list version.
      if (pages == 0) call(api, "POST", kPods, pod("p", "x", "n"));
    }
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(call(api, "GET", kLeases + "?limit=10&continue=%21%21garbage").status, 400);
}

TEST_F(KubeListWatchTest, ContinueAfterCompactionIsExpired) {
  for (int i = 0; i < 3; ++i) call(api, "POST", kLeases, testing::lease("l" + std::to_string(i)));
  auto first = call(api, "GET", kLeases + "?limit=1");
  const std::string token = first.body["metadata"]["continue"];
  call(api, "POST", kLeases, testing::lease("later"));
  ASSERT_EQ(call(api, "POST", "/_emulator/compact").status, 200);
  auto expired = call(api, "GET", kLeases + "?limit=1&continue=" + token);
  EXPECT_EQ(expired.status, 410);
  EXPECT_EQ(expired.body["reason"], "Expired");
  EXPECT_TRUE(expired.body["metadata"].contains("continue"));
}

TEST_F(KubeListWatchTest, WatchFromResourceVersionReplaysHistoryThenLiveEvents) {
  auto first = call(api, "POST", kLeases, testing::lease("a"));
  const std::string rv = first.body["metadata"]["resourceVersion"];
  json changed = first.body;
  changed["spec"]["holderIdentity"] = "b";
  call(api, "PUT", kLeases + "/a", changed);
  call(api, "POST", kPods, pod("p", "x", "n"));  // another resource: not in this watch
  WatchCall watch(api, kLeases + "?watch=true&resourceVersion=" + rv);
  ASSERT_TRUE(watch.wait_for_events(1));
  call(api, "DELETE", kLeases + "/a");
  ASSERT_TRUE(watch.wait_for_events(2));
  auto events = watch.events();
  EXPECT_EQ(events[0]["type"], "MODIFIED");
  EXPECT_EQ(events[0]["object"]["spec"]["holderIdentity"], "b");
  EXPECT_EQ(events[1]["type"], "DELETED");
  EXPECT_GT(std::stoull(events[1]["object"]["metadata"]["resourceVersion"].get<std::string>()),
            std::stoull(events[0]["object"]["metadata"]["resourceVersion"].get<std::string>()));
  EXPECT_EQ(watch.response().status(), 200);
}

TEST_F(KubeListWatchTest, WatchWithoutVersionStartsWithSyntheticAdds) {
  call(api, "POST", kLeases, testing::lease("a"));
  call(api, "POST", kLeases, testing::lease("b"));
  WatchCall watch(api, kLeases + "?watch=1");
  ASSERT_TRUE(watch.wait_for_events(2));
  call(api, "POST", kLeases, testing::lease("c"));
  ASSERT_TRUE(watch.wait_for_events(3));
  auto events = watch.events();
  for (const auto& e : events) EXPECT_EQ(e["type"], "ADDED");
  EXPECT_EQ(events[2]["object"]["metadata"]["name"], "c");
}

TEST_F(KubeListWatchTest, WatchFromCompactedVersionGetsExpiredErrorEvent) {
  auto first = call(api, "POST", kLeases, testing::lease("a"));
  call(api, "POST", kLeases, testing::lease("b"));
  call(api, "POST", "/_emulator/compact");
  const std::string rv = first.body["metadata"]["resourceVersion"];
  WatchCall watch(api, kLeases + "?watch=true&resourceVersion=" + rv);
  ASSERT_TRUE(wait_until([&] { return watch.finished(); }));
  auto events = watch.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(watch.response().status(), 200);
  EXPECT_EQ(events[0]["type"], "ERROR");
  EXPECT_EQ(events[0]["object"]["code"], 410);
  EXPECT_EQ(events[0]["object"]["reason"], "Expired");
  EXPECT_EQ(
      events[0]["object"]["message"].get<std::string>().rfind("too old resource version: " + rv + " (", 0),
      0u);
}

TEST_F(KubeListWatchTest, WatchFromAFutureVersionIsRefusedAsTooLarge) {
  auto created = call(api, "POST", kLeases, testing::lease("a"));
  const auto current = std::stoull(created.body["metadata"]["resourceVersion"].get<std::string>());
  auto answer = call(api, "GET", kLeases + "?watch=true&resourceVersion=" + std::to_string(current + 100));
  EXPECT_EQ(answer.status, 504);
  EXPECT_EQ(answer.body["reason"], "Timeout");
  EXPECT_EQ(answer.body["message"], "Timeout: Too large resource version: " + std::to_string(current + 100) +
                                        ", current: " + std::to_string(current));
  EXPECT_EQ(answer.body["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
  EXPECT_EQ(answer.body["details"]["retryAfterSeconds"], 1);
}

TEST_F(KubeListWatchTest, HistoryBeyondItsLimitExpires) {
  auto first = call(api, "POST", kLeases, testing::lease("a"));
  for (int i = 0; i < 120; ++i) call(api, "POST", kPods, pod("p" + std::to_string(i), "x", "n"));
  WatchCall watch(api, kLeases + "?watch=true&resourceVersion=" +
                           first.body["metadata"]["resourceVersion"].get<std::string>());
  ASSERT_TRUE(watch.wait_for_events(1));
  EXPECT_EQ(watch.events()[0]["type"], "ERROR");
}

TEST_F(KubeListWatchTest, BookmarksCarryOnlyTheResourceVersion) {
  auto lease = call(api, "POST", kLeases, testing::lease("a"));
  call(api, "POST", kPods, pod("p", "x", "n"));
  WatchCall watch(api, kLeases + "?watch=true&allowWatchBookmarks=true&resourceVersion=" +
                           lease.body["metadata"]["resourceVersion"].get<std::string>());
  ASSERT_TRUE(watch.wait_for_events(1));
  auto bookmark = watch.events()[0];
  EXPECT_EQ(bookmark["type"], "BOOKMARK");
  EXPECT_EQ(bookmark["object"]["kind"], "Lease");
  EXPECT_EQ(bookmark["object"]["metadata"].size(), 1u);
  auto list = call(api, "GET", kPods);
  EXPECT_EQ(bookmark["object"]["metadata"]["resourceVersion"], list.body["metadata"]["resourceVersion"])
      << "bookmarks advance past other resources' writes";
}

TEST_F(KubeListWatchTest, SelectorTransitionsBecomeAddedAndDeleted) {
  call(api, "POST", kPods, pod("a", "web", "n1"));
  WatchCall watch(api, kPods + "?watch=true&labelSelector=app%3Dweb");
  ASSERT_TRUE(watch.wait_for_events(1));
  call(api, "PATCH", kPods + "/a", {{"metadata", {{"labels", {{"app", "db"}}}}}},
       {{"Content-Type", "application/merge-patch+json"}});
  ASSERT_TRUE(watch.wait_for_events(2));
  call(api, "PATCH", kPods + "/a", {{"metadata", {{"labels", {{"app", "web"}}}}}},
       {{"Content-Type", "application/strategic-merge-patch+json"}});
  ASSERT_TRUE(watch.wait_for_events(3));
  auto events = watch.events();
  EXPECT_EQ(events[1]["type"], "DELETED");
  EXPECT_EQ(events[1]["object"]["metadata"]["labels"]["app"], "web") << "the last state that matched";
  EXPECT_EQ(events[2]["type"], "ADDED");
}

TEST_F(KubeListWatchTest, FinalizerDeletionIsModifiedThenDeleted) {
  json object = testing::lease("a");
  object["metadata"]["finalizers"] = {"example.io/x"};
  call(api, "POST", kLeases, object);
  WatchCall watch(api, kLeases + "?watch=true");
  ASSERT_TRUE(watch.wait_for_events(1));
  call(api, "DELETE", kLeases + "/a");
  ASSERT_TRUE(watch.wait_for_events(2));
  call(api, "PATCH", kLeases + "/a", json::array({{{"op", "remove"}, {"path", "/metadata/finalizers"}}}),
       {{"Content-Type", "application/json-patch+json"}});
  ASSERT_TRUE(watch.wait_for_events(3));
  auto events = watch.events();
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_TRUE(events[1]["object"]["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(events[2]["type"], "DELETED");
}

TEST_F(KubeListWatchTest, DroppingWatchesEndsEveryStream) {
  WatchCall one(api, kLeases + "?watch=true");
  WatchCall two(api, kPods + "?watch=true");
  ASSERT_TRUE(wait_until([&] { return call(api, "GET", "/_emulator/stats").body["watches_open"] == 2; }));
  auto dropped = call(api, "POST", "/_emulator/watches/drop");
  EXPECT_EQ(dropped.body["dropped"], 2);
  EXPECT_TRUE(wait_until([&] { return one.finished() && two.finished(); }));
  EXPECT_EQ(call(api, "GET", "/_emulator/stats").body["watches_open"], 0);
}

TEST_F(KubeListWatchTest, TimeoutSecondsEndsTheStream) {
  WatchCall watch(api, kLeases + "?watch=true&timeoutSeconds=0");
  EXPECT_TRUE(wait_until([&] { return watch.finished(); }));
  EXPECT_TRUE(watch.response().ended());
}

TEST_F(KubeListWatchTest, ShutdownEndsWatches) {
  WatchCall watch(api, kLeases + "?watch=true");
  ASSERT_TRUE(wait_until([&] { return call(api, "GET", "/_emulator/stats").body["watches_open"] == 1; }));
  api.shutdown();
  EXPECT_TRUE(wait_until([&] { return watch.finished(); }));
}

}  // namespace
}  // namespace eslease::kubeemu
