// Node heartbeats on the emulator's clock: each simulated kubelet renews its node Lease, the
// node lifecycle controller marks a node it stopped hearing from Unknown after the grace
// period (Kubernetes' defaults unless told otherwise) and its pods not Ready, and a node
// partitioned or powered off through the admin API comes back as a kubelet would.
#include <gtest/gtest.h>

#include "common/text.h"
#include "emulators/kube/tests/api_test_support.h"
#include "emulators/kube/tests/kubelet_fixture.h"
#include "support/fake_clock.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using Fake = eslease::testing::FakeClock;
using kubelet_testing::condition;
using kubelet_testing::condition_status;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kPods = "/api/v1/namespaces/default/pods";
const std::string kNodeLeases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

class NodeHealth : public ::testing::Test {
 protected:
  void start(KubeletOptions kubelet = {}) {
    kubelet.schedule_delay = milliseconds(0);
    kubelet.start_delay = milliseconds(0);
    ApiServerOptions options;
    options.simulate_kubelet = true;
    options.kubelet = kubelet;
    began_ = clock_.now();
    started_ = clock_.monotonic();
    api_ = std::make_unique<ApiServer>(options, clock_);
    settle();
  }
  void TearDown() override {
    if (api_) api_->shutdown();
  }

  // The kubelet thread's next wake-up once it rests until a time still ahead (what the last
  // move of time made due has been done).
  MonoTime settle() {
    MonoTime next{};
    EXPECT_TRUE(eslease::testing::wait_until([&] {
      const MonoTime now = clock_.monotonic();
      for (MonoTime deadline : clock_.deadlines()) {
        if (deadline > now && deadline != MonoTime::max()) {
          next = deadline;
          return true;
        }
      }
      return false;
    }));
    return next;
  }
  // Moves time to `offset` after the start from one of the kubelet's timers to the next, so
  // each fires at its own time, as it would live.
  void run_until(milliseconds offset) {
    const MonoTime target = started_ + offset;
    MonoTime next = settle();
    while (clock_.monotonic() < target) {
      clock_.advance(std::chrono::duration_cast<milliseconds>(std::min(next, target) - clock_.monotonic()));
      next = settle();
    }
  }

  json get(const std::string& path) {
    auto reply = call(*api_, "GET", path);
    EXPECT_EQ(reply.status, 200) << path << ": " << reply.body.dump();
    return reply.body;
  }
  json node(const std::string& name) { return get("/api/v1/nodes/" + name); }
  testing::Reply admin_node(const std::string& name, const json& body) {
    return call(*api_, "POST", "/_emulator/kubelet/nodes/" + name, body);
  }
  // A pod bound to `node`, once Running and Ready.
  json running_pod(const std::string& name, const std::string& node_name, int grace = 30) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"nodeName", node_name},
                  {"terminationGracePeriodSeconds", grace},
                  {"containers", {{{"name", "app"}, {"image", "x"}}}}}}};
    EXPECT_EQ(call(*api_, "POST", kPods, pod).status, 201);
    json current;
    EXPECT_TRUE(eslease::testing::wait_until([&] {
      current = get(kPods + "/" + name);
      return condition_status(current, "Ready") == "True";
    }));
    return current;
  }
  // Waits (real time) until `predicate` holds for the object at `path`; returns the object.
  json wait_for(const std::string& path, const std::function<bool(const json&)>& predicate) {
    json current;
    EXPECT_TRUE(eslease::testing::wait_until([&] {
      current = call(*api_, "GET", path).body;
      return predicate(current);
    })) << current.dump();
    return current;
  }

  Fake clock_;
  WallTime began_;
  MonoTime started_;
  std::unique_ptr<ApiServer> api_;
};

TEST_F(NodeHealth, EachKubeletRenewsItsNodeLeaseAsTheRealOneWritesIt) {
  start();
  const WallTime began = began_;
  json leases = get(kNodeLeases);
  ASSERT_EQ(leases["items"].size(), 3u);
  for (const char* name : {"node-1", "node-2", "node-3"}) {
    const json lease = get(kNodeLeases + "/" + name);
    EXPECT_EQ(lease["apiVersion"], "coordination.k8s.io/v1");
    EXPECT_EQ(lease["kind"], "Lease");
    EXPECT_EQ(lease["spec"]["holderIdentity"], name);
    EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 40);
    // A MicroTime: six fractional digits.
    EXPECT_EQ(lease["spec"]["renewTime"], format_rfc3339_micros(began));
    const json owners = lease["metadata"]["ownerReferences"];
    ASSERT_EQ(owners.size(), 1u);
    EXPECT_EQ(owners[0], json({{"apiVersion", "v1"},
                               {"kind", "Node"},
                               {"name", name},
                               {"uid", node(name)["metadata"]["uid"]}}));
  }
  run_until(seconds(9));
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"]["renewTime"], format_rfc3339_micros(began));
  run_until(seconds(10));
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"]["renewTime"], format_rfc3339_micros(began + seconds(10)));
  // A renewal is an update of the same object: the uid stays.
  EXPECT_EQ(get(kNodeLeases + "/node-2")["metadata"]["uid"], leases["items"][1]["metadata"]["uid"]);
}

TEST_F(NodeHealth, ASilentNodeIsUnknownAfterTheGracePeriodAndItsPodsAreNotReady) {
  start();
  const json before = running_pod("far", "node-1");
  ASSERT_EQ(admin_node("node-1", {{"network", "partitioned"}}).status, 200);
  const std::string heartbeat = condition(node("node-1"), "Ready")->value("lastHeartbeatTime", "");
  const json lease = get(kNodeLeases + "/node-1");
  // The controller first saw the node at its first pass (5 s); it marks it once more than the
  // 50 s grace has passed since, at a pass: at 60 s.
  run_until(seconds(55));
  EXPECT_EQ(condition_status(node("node-1"), "Ready"), "True");
  EXPECT_EQ(condition_status(get(kPods + "/far"), "Ready"), "True");
  run_until(seconds(60));
  const json silent = wait_for("/api/v1/nodes/node-1",
                               [](const json& n) { return condition_status(n, "Ready") == "Unknown"; });
  for (const char* type : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
    const json* c = condition(silent, type);
    ASSERT_NE(c, nullptr) << type;
    EXPECT_EQ((*c)["status"], "Unknown") << type;
    EXPECT_EQ((*c)["reason"], "NodeStatusUnknown") << type;
    EXPECT_EQ((*c)["message"], "Kubelet stopped posting node status.") << type;
    EXPECT_EQ((*c)["lastHeartbeatTime"], heartbeat) << type;
    EXPECT_EQ((*c)["lastTransitionTime"], format_rfc3339_seconds(clock_.now())) << type;
  }
  ASSERT_EQ(silent["spec"]["taints"].size(), 2u);
  for (const auto& taint : silent["spec"]["taints"]) {
    EXPECT_EQ(taint["key"], "node.kubernetes.io/unreachable");
  }
  EXPECT_EQ(silent["spec"]["taints"][0]["effect"], "NoSchedule");
  EXPECT_EQ(silent["spec"]["taints"][1]["effect"], "NoExecute");
  // MarkPodsNotReady: only Ready flips; the pod still runs as far as anyone knows.
  const json pod =
      wait_for(kPods + "/far", [](const json& p) { return condition_status(p, "Ready") == "False"; });
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(condition_status(pod, "ContainersReady"), "True");
  EXPECT_FALSE(condition(pod, "Ready")->contains("reason"));
  // Nothing of the partitioned kubelet reached the API; the others kept renewing.
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"], lease["spec"]);
  EXPECT_EQ(condition_status(node("node-2"), "Ready"), "True");
  EXPECT_EQ(get(kNodeLeases + "/node-2")["spec"]["renewTime"], format_rfc3339_micros(began_ + seconds(60)));
  // A later pass writes nothing more: the node is already Unknown.
  const std::string rv = silent["metadata"]["resourceVersion"];
  run_until(seconds(70));
  EXPECT_EQ(node("node-1")["metadata"]["resourceVersion"], rv);
  EXPECT_EQ(before["spec"]["nodeName"], "node-1");
}

TEST_F(NodeHealth, WhenHeartbeatsResumeTheNodeAndItsPodsAreReadyAgain) {
  start();
  running_pod("back", "node-1");
  ASSERT_EQ(admin_node("node-1", {{"network", "partitioned"}}).status, 200);
  run_until(seconds(60));
  wait_for(kPods + "/back", [](const json& p) { return condition_status(p, "Ready") == "False"; });
  auto healed = admin_node("node-1", {{"network", "connected"}});
  ASSERT_EQ(healed.status, 200);
  EXPECT_EQ(condition_status(healed.body, "Ready"), "True");
  EXPECT_EQ(condition(healed.body, "Ready")->value("reason", ""), "KubeletReady");
  EXPECT_EQ(condition(healed.body, "Ready")->value("lastHeartbeatTime", ""),
            format_rfc3339_seconds(clock_.now()));
  EXPECT_EQ(condition_status(healed.body, "MemoryPressure"), "False");
  EXPECT_FALSE(healed.body["spec"].contains("taints"));
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"]["renewTime"], format_rfc3339_micros(clock_.now()));
  wait_for(kPods + "/back", [](const json& p) { return condition_status(p, "Ready") == "True"; });
  // Heard from again: the grace starts over.
  run_until(seconds(115));
  EXPECT_EQ(condition_status(node("node-1"), "Ready"), "True");
}

TEST_F(NodeHealth, TheGraceAndTheRenewalIntervalAreTheFlagsGiven) {
  KubeletOptions kubelet;
  kubelet.node_lease_renew_interval = seconds(1);
  kubelet.node_monitor_grace_period = seconds(4);
  kubelet.node_monitor_period = milliseconds(500);
  start(kubelet);
  run_until(seconds(3));
  EXPECT_EQ(get(kNodeLeases + "/node-3")["spec"]["renewTime"],
            format_rfc3339_micros(clock_.now()));  // renewed every second
  ASSERT_EQ(admin_node("node-3", {{"network", "partitioned"}}).status, 200);
  // The renewal at 3 s is seen by the pass at 3 s (timers due together fire in the order they
  // were set): Unknown at the first pass after 7 s.
  run_until(seconds(7));
  EXPECT_EQ(condition_status(node("node-3"), "Ready"), "True");
  run_until(milliseconds(7500));
  wait_for("/api/v1/nodes/node-3", [](const json& n) { return condition_status(n, "Ready") == "Unknown"; });
  EXPECT_EQ(condition_status(node("node-2"), "Ready"), "True");
}

TEST_F(NodeHealth, APoweredOffNodeIsSilentAndItsContainersStartAgainWhenItIsBack) {
  start();
  running_pod("restarted", "node-2");
  running_pod("deleted", "node-2", 2);
  ASSERT_EQ(admin_node("node-2", {{"power", "off"}}).status, 200);
  // Nothing of it reaches the API server: its kubelet cannot report a pod's end, nor finish
  // a graceful deletion.
  auto refused = call(*api_, "POST", "/_emulator/kubelet/pods/default/restarted", json{{"phase", "Failed"}});
  EXPECT_EQ(refused.status, 409) << refused.body.dump();
  EXPECT_EQ(admin_node("node-2", {{"ready", "True"}}).status, 409);
  ASSERT_EQ(call(*api_, "DELETE", kPods + "/deleted").status, 200);
  run_until(seconds(60));
  wait_for("/api/v1/nodes/node-2", [](const json& n) { return condition_status(n, "Ready") == "Unknown"; });
  wait_for(kPods + "/restarted", [](const json& p) { return condition_status(p, "Ready") == "False"; });
  EXPECT_EQ(call(*api_, "GET", kPods + "/deleted").status, 200) << "stays Terminating";

  auto on = admin_node("node-2", {{"power", "on"}});
  ASSERT_EQ(on.status, 200);
  EXPECT_EQ(condition_status(on.body, "Ready"), "True");
  const json pod =
      wait_for(kPods + "/restarted", [](const json& p) { return condition_status(p, "Ready") == "True"; });
  const json& container = pod["status"]["containerStatuses"][0];
  EXPECT_EQ(container["restartCount"], 1);
  EXPECT_EQ(container["lastState"]["terminated"]["reason"], "ContainerStatusUnknown");
  EXPECT_EQ(container["lastState"]["terminated"]["exitCode"], 137);
  EXPECT_TRUE(container["state"].contains("running"));
  EXPECT_EQ(pod["status"]["phase"], "Running");
  // Its kubelet finishes the deletion once the grace (2 s) has run out after it came back.
  run_until(seconds(61));
  EXPECT_EQ(call(*api_, "GET", kPods + "/deleted").status, 200);
  run_until(seconds(70));
  EXPECT_TRUE(
      eslease::testing::wait_until([&] { return call(*api_, "GET", kPods + "/deleted").status == 404; }));
}

TEST_F(NodeHealth, ReadyUnknownCutsTheKubeletOffUntilItPostsAgain) {
  start();
  auto unknown = admin_node("node-1", {{"ready", "Unknown"}});
  ASSERT_EQ(unknown.status, 200);
  EXPECT_EQ(condition_status(unknown.body, "Ready"), "Unknown");
  const json lease = get(kNodeLeases + "/node-1");
  run_until(seconds(30));
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"], lease["spec"]);
  EXPECT_EQ(condition_status(node("node-1"), "Ready"), "Unknown");
  ASSERT_EQ(admin_node("node-1", {{"ready", "True"}}).status, 200);
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"]["renewTime"], format_rfc3339_micros(clock_.now()));
}

TEST_F(NodeHealth, BadNodeChangesAreRefused) {
  start();
  for (const json& body :
       {json{{"network", "down"}}, json{{"power", true}}, json{{"ready", "Maybe"}},
        json{{"network", "partitioned"}, {"power", "off"}}, json::object(), json{{"partition", true}}}) {
    auto reply = admin_node("node-1", body);
    EXPECT_EQ(reply.status, 400) << body.dump();
    EXPECT_FALSE(reply.body.value("message", "").empty()) << body.dump();
  }
  EXPECT_EQ(admin_node("node-9", {{"power", "off"}}).status, 404);
  json other = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "elsewhere"}}}};
  ASSERT_EQ(call(*api_, "POST", "/api/v1/nodes", other).status, 201);
  EXPECT_EQ(admin_node("elsewhere", {{"network", "partitioned"}}).status, 409);
  // None of it changed anything.
  EXPECT_EQ(condition_status(node("node-1"), "Ready"), "True");
  run_until(seconds(10));
  EXPECT_EQ(get(kNodeLeases + "/node-1")["spec"]["renewTime"], format_rfc3339_micros(clock_.now()));
}

}  // namespace
}  // namespace eslease::kubeemu
