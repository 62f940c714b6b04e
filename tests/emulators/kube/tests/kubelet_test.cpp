// The simulated kubelet (--simulate-kubelet) over real HTTP: scheduling, Running and Ready,
// graceful and forced deletion, and the old behaviour when it is off.
#include <gtest/gtest.h>

#include "common/text.h"
#include "emulators/kube/tests/kubelet_fixture.h"

namespace eslease::kubeemu {
namespace {

using namespace kubelet_testing;

TEST_F(KubeletTest, CreatedPodIsScheduledThenRunningAndReadyAsWatchersSee) {
  start();
  auto watch = watch_pods();
  json seeded = pod("web-1");
  seeded["status"] = {{"phase", "Running"}, {"podIP", "1.2.3.4"}};
  json created = create(seeded);
  // As the pod strategy does: the status written is replaced by Pending.
  EXPECT_EQ(created["status"], json({{"phase", "Pending"}, {"qosClass", "BestEffort"}}));
  EXPECT_FALSE(created["spec"].contains("nodeName"));

  auto ready =
      watch->wait_for("MODIFIED", [](const json& o) { return condition_status(o, "Ready") == "True"; });
  ASSERT_TRUE(ready) << json(watch->events()).dump();
  std::vector<json> events = watch->events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[0]["object"]["status"]["phase"], "Pending");
  // Scheduled first: nodeName and PodScheduled, still Pending.
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[1]["object"]["status"]["phase"], "Pending");
  EXPECT_EQ(condition_status(events[1]["object"], "PodScheduled"), "True");
  const std::string node = events[1]["object"]["spec"].value("nodeName", "");
  EXPECT_TRUE(node == "node-1" || node == "node-2" || node == "node-3") << node;
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_GT(rv_of(events[i]["object"]), rv_of(events[i - 1]["object"])) << "event " << i;
  }

  const json running = (*ready)["object"];
  EXPECT_EQ(running["status"]["phase"], "Running");
  EXPECT_EQ(running["spec"]["nodeName"], node);
  for (const char* type : {"PodScheduled", "Initialized", "ContainersReady", "Ready"}) {
    const json* c = condition(running, type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ((*c)["status"], "True") << type;
    EXPECT_TRUE(parse_rfc3339((*c).value("lastTransitionTime", "")).has_value()) << type;
  }
  EXPECT_TRUE(parse_rfc3339(running["status"].value("startTime", "")).has_value());
  EXPECT_FALSE(running["status"].value("hostIP", "").empty());
  EXPECT_FALSE(running["status"].value("podIP", "").empty());
  EXPECT_EQ(running["status"]["containerStatuses"][0]["name"], "app");
  EXPECT_EQ(running["status"]["containerStatuses"][0]["ready"], true);
  EXPECT_TRUE(running["status"]["containerStatuses"][0]["state"].contains("running"));
  // Other fields are kept.
  EXPECT_EQ(running["metadata"]["labels"]["app"], "web");
  EXPECT_EQ(running["spec"]["containers"][0]["image"], "nginx:1.27");
  EXPECT_EQ(get(kPods + "/web-1"), running);
}

TEST_F(KubeletTest, NodesAreReadyAndPodsAreSpreadOverThem) {
  start();
  json nodes = get("/api/v1/nodes");
  ASSERT_EQ(nodes["items"].size(), 3u);
  for (const auto& node : nodes["items"]) {
    const json* ready = condition(node, "Ready");
    ASSERT_NE(ready, nullptr);
    EXPECT_EQ((*ready)["status"], "True");
    EXPECT_TRUE(parse_rfc3339(ready->value("lastHeartbeatTime", "")).has_value());
    EXPECT_TRUE(parse_rfc3339(ready->value("lastTransitionTime", "")).has_value());
  }
  std::set<std::string> used;
  for (int i = 0; i < 3; ++i) create(pod("spread-" + std::to_string(i)));
  for (int i = 0; i < 3; ++i) used.insert(wait_running("spread-" + std::to_string(i))["spec"]["nodeName"]);
  EXPECT_EQ(used, (std::set<std::string>{"node-1", "node-2", "node-3"}));
  // A pod bound to a node without a kubelet stays Pending, as on a cluster.
  json elsewhere = pod("elsewhere");
  elsewhere["spec"]["nodeName"] = "no-such-node";
  create(elsewhere);
  wait_running("spread-0");  // the kubelet has had time to act
  EXPECT_EQ(get(kPods + "/elsewhere")["status"]["phase"], "Pending");
}

TEST_F(KubeletTest, GracefulDeleteKeepsThePodUntilTheGracePeriodHasRunOut) {
  start();
  create(pod("graceful", 2));
  wait_running("graceful");
  auto watch = watch_pods();
  // When it ends, to the millisecond, is the fake clock's test (clock_test.cpp).
  json answered = send_json("DELETE", kPods + "/graceful");
  EXPECT_EQ(answered["kind"], "Pod");
  EXPECT_EQ(answered["metadata"]["deletionGracePeriodSeconds"], 2);
  ASSERT_TRUE(parse_rfc3339(answered["metadata"].value("deletionTimestamp", "")).has_value());
  // Still there, terminating, and a second DELETE changes nothing.
  json terminating = get(kPods + "/graceful");
  EXPECT_EQ(terminating["metadata"]["deletionTimestamp"], answered["metadata"]["deletionTimestamp"]);
  EXPECT_EQ(send_json("DELETE", kPods + "/graceful"), terminating);

  auto deleted =
      watch->wait_for("DELETED", [](const json& o) { return o["metadata"]["name"] == "graceful"; });
  ASSERT_TRUE(deleted);
  EXPECT_EQ(status_of(kPods + "/graceful"), 404);
  auto events = watch->events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0]["type"], "MODIFIED");
  EXPECT_TRUE(events[0]["object"]["metadata"].contains("deletionTimestamp"));
  EXPECT_GT(rv_of((*deleted)["object"]), rv_of(events[0]["object"]));
}

TEST_F(KubeletTest, GracePeriodComesFromOptionsThenSpecThenThirtySeconds) {
  start();
  for (const char* name : {"by-body", "by-query", "by-spec", "by-default"}) {
    create(pod(name, std::string(name) == "by-spec" ? std::optional<int>(7) : std::nullopt));
    wait_running(name);
  }
  auto grace_of = [](const json& o) { return o["metadata"]["deletionGracePeriodSeconds"]; };
  EXPECT_EQ(grace_of(send_json("DELETE", kPods + "/by-body",
                               {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}, {"gracePeriodSeconds", 5}})),
            5);
  EXPECT_EQ(grace_of(send_json("DELETE", kPods + "/by-query?gracePeriodSeconds=4")), 4);
  EXPECT_EQ(grace_of(send_json("DELETE", kPods + "/by-spec")), 7);
  EXPECT_EQ(grace_of(send_json("DELETE", kPods + "/by-default")), 30);
  // Shortening a pending grace period is allowed; lengthening is ignored.
  EXPECT_EQ(grace_of(send_json("DELETE", kPods + "/by-default?gracePeriodSeconds=60")), 30);
  EXPECT_EQ(grace_of(send_json("DELETE", kPods + "/by-default?gracePeriodSeconds=10")), 10);
  auto bad = send("DELETE", kPods + "/by-spec?gracePeriodSeconds=soon");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("invalid syntax"), std::string::npos) << bad.body;
  EXPECT_EQ(send("DELETE", kPods + "/by-spec", {{"gracePeriodSeconds", "0"}}).status, 400);
}

TEST_F(KubeletTest, ForceDeleteRemovesThePodAtOnce) {
  start();
  for (const char* name : {"force-body", "force-query", "shortened"}) {
    create(pod(name));
    wait_running(name);
  }
  auto watch = watch_pods();
  // What `kubectl delete pod --grace-period=0 --force` sends.
  json gone = send_json("DELETE", kPods + "/force-body",
                        {{"kind", "DeleteOptions"},
                         {"apiVersion", "v1"},
                         {"gracePeriodSeconds", 0},
                         {"propagationPolicy", "Background"}});
  EXPECT_EQ(gone["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(status_of(kPods + "/force-body"), 404);
  send_json("DELETE", kPods + "/force-query?gracePeriodSeconds=0");
  EXPECT_EQ(status_of(kPods + "/force-query"), 404);
  // A pending graceful deletion (30 s, 6 s scaled) cut short by a forced one.
  send_json("DELETE", kPods + "/shortened");
  EXPECT_EQ(status_of(kPods + "/shortened"), 200);
  send_json("DELETE", kPods + "/shortened", {{"gracePeriodSeconds", 0}});
  EXPECT_EQ(status_of(kPods + "/shortened"), 404);
  for (const char* name : {"force-body", "force-query", "shortened"}) {
    EXPECT_TRUE(watch->wait_for("DELETED", [&](const json& o) { return o["metadata"]["name"] == name; }))
        << name;
  }
}

TEST_F(KubeletTest, UnscheduledPodIsDeletedAtOnce) {
  KubeletOptions slow = fast();
  slow.schedule_delay = std::chrono::hours(1);  // nothing gets scheduled
  start(true, slow);
  create(pod("unscheduled"));
  json answered = send_json("DELETE", kPods + "/unscheduled");
  EXPECT_EQ(answered["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(status_of(kPods + "/unscheduled"), 404);
}

TEST_F(KubeletTest, FinalizersHoldAPodAfterItsGracePeriod) {
  start();
  json held = pod("held", 1);
  held["metadata"]["finalizers"] = {"example.io/keep"};
  create(held);
  wait_running("held");
  EXPECT_EQ(send_json("DELETE", kPods + "/held")["metadata"]["deletionGracePeriodSeconds"], 1);
  // The kubelet's final delete (grace 0) leaves the pod to its finalizer.
  json waiting;
  ASSERT_TRUE(wait_until([&] {
    waiting = get(kPods + "/held");
    return waiting["metadata"].value("deletionGracePeriodSeconds", -1) == 0;
  })) << waiting.dump();
  auto watch = watch_pods();
  auto patched = merge_patch(kPods + "/held", R"({"metadata":{"finalizers":null}})");
  EXPECT_EQ(patched.status, 200) << patched.body;
  EXPECT_TRUE(watch->wait_for("DELETED", [](const json& o) { return o["metadata"]["name"] == "held"; }));
  EXPECT_EQ(status_of(kPods + "/held"), 404);
}

TEST_F(KubeletTest, GracefulDeletionWaitsForAnUnreachableNode) {
  start();
  create(pod("cut-off", 1));
  create(pod("witness", 1));
  const std::string node = wait_running("cut-off")["spec"]["nodeName"];
  ASSERT_NE(wait_running("witness")["spec"]["nodeName"], node);
  json stray = pod("stray", 1);
  stray["spec"]["nodeName"] = "no-such-node";
  create(stray);
  send_json("POST", "/_emulator/kubelet/nodes/" + node, {{"ready", "Unknown"}});
  auto watch = watch_pods();
  send_json("DELETE", kPods + "/cut-off");
  send_json("DELETE", kPods + "/stray");
  send_json("DELETE", kPods + "/witness");
  // The witness had the same grace period on a reachable node: once it is gone, the others
  // would be too if their kubelets were there to stop them.
  ASSERT_TRUE(watch->wait_for("DELETED", [](const json& o) { return o["metadata"]["name"] == "witness"; }));
  EXPECT_TRUE(get(kPods + "/cut-off")["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(get(kPods + "/stray")["metadata"].contains("deletionTimestamp"));
  // The kubelet comes back and finishes the job; a pod without one needs --force.
  send_json("POST", "/_emulator/kubelet/nodes/" + node, {{"ready", "True"}});
  EXPECT_TRUE(watch->wait_for("DELETED", [](const json& o) { return o["metadata"]["name"] == "cut-off"; }));
  send_json("DELETE", kPods + "/stray?gracePeriodSeconds=0");
  EXPECT_EQ(status_of(kPods + "/stray"), 404);
}

TEST_F(KubeletTest, PodsWaitForAReadyNode) {
  start();
  for (const char* node : {"node-1", "node-2", "node-3"}) {
    send_json("POST", std::string("/_emulator/kubelet/nodes/") + node, {{"ready", false}});
  }
  create(pod("waiting"));
  json waiting;
  ASSERT_TRUE(wait_until([&] {
    waiting = get(kPods + "/waiting");
    return condition_status(waiting, "PodScheduled") == "False";
  }));
  EXPECT_EQ(condition(waiting, "PodScheduled")->value("reason", ""), "Unschedulable");
  EXPECT_EQ(waiting["status"]["phase"], "Pending");
  send_json("POST", "/_emulator/kubelet/nodes/node-2", {{"ready", "True"}});
  EXPECT_EQ(wait_running("waiting")["spec"]["nodeName"], "node-2");
}

TEST_F(KubeletTest, OddPodsDoNotStopTheKubelet) {
  start();
  for (
      const std::string& body :
      {std::string(R"({"metadata":{"name":"no-spec"}})"),
       std::string(R"({"metadata":{"name":"string-spec"},"spec":"weird"})"),
       std::string(
           R"({"metadata":{"name":"odd-containers"},"spec":{"containers":"x","terminationGracePeriodSeconds":"9"}})"),
       std::string(
           R"({"metadata":{"name":"odd-status"},"spec":{"containers":[1,{"name":2},{"name":"ok"}]},"status":7})")}) {
    EXPECT_EQ(send("POST", kPods, nullptr, body).status, 201) << body;
  }
  wait_running("odd-status");
  wait_running("no-spec");
  wait_running("odd-containers");
  EXPECT_EQ(get(kPods + "/string-spec")["status"]["phase"], "Pending");
  // Status writes of nonsense do not confuse it either.
  EXPECT_EQ(merge_patch(kPods + "/odd-status/status", R"({"status":{"conditions":"broken"}})").status, 200);
  EXPECT_EQ(send("POST", "/_emulator/kubelet/pods/default/odd-status", {{"ready", false}}).status, 200);
  EXPECT_EQ(send_json("DELETE", kPods + "/odd-containers?gracePeriodSeconds=0")["kind"], "Pod");
  // Absurd grace periods are kept as given without upsetting the clock arithmetic.
  json forever = send_json("DELETE", kPods + "/no-spec?gracePeriodSeconds=9223372036854775807");
  EXPECT_EQ(forever["metadata"]["deletionGracePeriodSeconds"], 9223372036854775807LL);
  EXPECT_TRUE(parse_rfc3339(forever["metadata"].value("deletionTimestamp", "")).has_value());
  send_json("DELETE", kPods + "/no-spec?gracePeriodSeconds=-5");
  EXPECT_EQ(get(kPods + "/no-spec")["metadata"]["deletionGracePeriodSeconds"], 1);
  // And the kubelet still works.
  create(pod("after"));
  wait_running("after");
}

TEST_F(KubeletTest, StopsPromptlyWithWorkPending) {
  start();
  for (int i = 0; i < 5; ++i) {
    create(pod("busy-" + std::to_string(i), 3600));
    wait_running("busy-" + std::to_string(i));
    send_json("DELETE", kPods + "/busy-" + std::to_string(i));
  }
  for (int i = 0; i < 20; ++i) create(pod("new-" + std::to_string(i)));
  // Promptness is real time: the clock the emulator runs on.
  const Clock& clock = SystemClock::instance();
  const MonoTime before = clock.monotonic();
  emulator_->stop();
  EXPECT_LT(clock.monotonic() - before, std::chrono::seconds(5));
}

TEST_F(KubeletTest, WithoutTheFlagPodsKeepTheirStatusAndGoAtOnce) {
  start(false);
  EXPECT_EQ(get("/api/v1/nodes")["items"].size(), 0u);
  json seeded = pod("seeded", 30);
  seeded["spec"]["nodeName"] = "n1";
  seeded["status"] = {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
  json created = create(seeded);
  EXPECT_EQ(created["status"], seeded["status"]);
  json answered = send_json("DELETE", kPods + "/seeded");
  EXPECT_FALSE(answered["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(status_of(kPods + "/seeded"), 404);
  auto admin = send("POST", "/_emulator/kubelet/nodes/node-1", {{"ready", "False"}});
  EXPECT_EQ(admin.status, 409);
  EXPECT_NE(admin.body.find("--simulate-kubelet"), std::string::npos) << admin.body;
}

}  // namespace
}  // namespace eslease::kubeemu
