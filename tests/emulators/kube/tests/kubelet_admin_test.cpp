// The simulated kubelet's admin endpoints (/_emulator/kubelet/pods and /nodes) over real
// HTTP: readiness, node conditions, ending pods, and their errors.
#include <gtest/gtest.h>

#include "emulators/kube/tests/kubelet_fixture.h"

namespace eslease::kubeemu {
namespace {

using namespace kubelet_testing;

TEST_F(KubeletTest, AdminMakesAPodNotReadyAndReadyAgain) {
  start();
  create(pod("probe"));
  const json running = wait_running("probe");
  const std::string ready_since = condition(running, "Ready")->value("lastTransitionTime", "");
  json not_ready = send_json("POST", "/_emulator/kubelet/pods/default/probe", {{"ready", false}});
  EXPECT_EQ(not_ready["status"]["phase"], "Running");
  for (const char* type : {"Ready", "ContainersReady"}) {
    const json* c = condition(not_ready, type);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ((*c)["status"], "False");
    EXPECT_EQ((*c)["reason"], "ContainersNotReady");
    EXPECT_EQ((*c)["message"], "containers with unready status: [app]");
  }
  EXPECT_EQ(not_ready["status"]["containerStatuses"][0]["ready"], false);
  EXPECT_GT(rv_of(not_ready), rv_of(running));
  EXPECT_EQ(get(kPods + "/probe"), not_ready);
  json again = send_json("POST", "/_emulator/kubelet/pods/default/probe", {{"ready", true}});
  EXPECT_EQ(condition_status(again, "Ready"), "True");
  EXPECT_EQ(condition_status(again, "ContainersReady"), "True");
  EXPECT_FALSE(condition(again, "Ready")->contains("reason"));
  EXPECT_GE(condition(again, "Ready")->value("lastTransitionTime", ""), ready_since);
}

TEST_F(KubeletTest, AdminNodeReadinessMovesItsPods) {
  start();
  create(pod("on-node"));
  const std::string node = wait_running("on-node")["spec"]["nodeName"];
  json down = send_json("POST", "/_emulator/kubelet/nodes/" + node, {{"ready", "False"}});
  EXPECT_EQ(condition_status(down, "Ready"), "False");
  EXPECT_EQ(condition(down, "Ready")->value("reason", ""), "KubeletNotReady");
  ASSERT_TRUE(down["spec"].contains("taints"));
  EXPECT_EQ(down["spec"]["taints"][0]["key"], "node.kubernetes.io/not-ready");
  // The node lifecycle controller marks its pods not Ready; they keep running.
  json pod_now;
  ASSERT_TRUE(wait_until([&] {
    pod_now = get(kPods + "/on-node");
    return condition_status(pod_now, "Ready") == "False";
  }));
  EXPECT_EQ(pod_now["status"]["phase"], "Running");
  EXPECT_EQ(condition_status(pod_now, "ContainersReady"), "True");

  json unknown = send_json("POST", "/_emulator/kubelet/nodes/" + node, {{"ready", "Unknown"}});
  EXPECT_EQ(condition_status(unknown, "Ready"), "Unknown");
  EXPECT_EQ(condition(unknown, "Ready")->value("reason", ""), "NodeStatusUnknown");
  EXPECT_EQ(unknown["spec"]["taints"][0]["key"], "node.kubernetes.io/unreachable");

  json up = send_json("POST", "/_emulator/kubelet/nodes/" + node, {{"ready", "True"}});
  EXPECT_EQ(condition_status(up, "Ready"), "True");
  EXPECT_FALSE(up["spec"].contains("taints"));
  ASSERT_TRUE(wait_until([&] { return condition_status(get(kPods + "/on-node"), "Ready") == "True"; }));
}

TEST_F(KubeletTest, AdminEndsAPodAsFailedOrSucceeded) {
  start();
  create(pod("crashed"));
  create(pod("done"));
  wait_running("crashed");
  wait_running("done");
  json failed = send_json(
      "POST", "/_emulator/kubelet/pods/default/crashed",
      {{"phase", "Failed"}, {"reason", "Evicted"}, {"message", "low on memory"}, {"exitCode", 137}});
  EXPECT_EQ(failed["status"]["phase"], "Failed");
  EXPECT_EQ(failed["status"]["reason"], "Evicted");
  EXPECT_EQ(failed["status"]["message"], "low on memory");
  EXPECT_EQ(condition_status(failed, "Ready"), "False");
  EXPECT_EQ(condition(failed, "Ready")->value("reason", ""), "PodCompleted");
  EXPECT_EQ(condition_status(failed, "ContainersReady"), "False");
  const json& terminated = failed["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 137);
  EXPECT_EQ(terminated["reason"], "Error");

  json succeeded = send_json("POST", "/_emulator/kubelet/pods/default/done", {{"phase", "Succeeded"}});
  EXPECT_EQ(succeeded["status"]["phase"], "Succeeded");
  EXPECT_EQ(succeeded["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(succeeded["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
  // A terminal phase is final, and a finished pod is deleted at once.
  auto again = send("POST", "/_emulator/kubelet/pods/default/done", {{"phase", "Failed"}});
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_EQ(send("POST", "/_emulator/kubelet/pods/default/done", {{"ready", true}}).status, 409);
  EXPECT_EQ(send_json("DELETE", kPods + "/done")["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_EQ(status_of(kPods + "/done"), 404);
}

TEST_F(KubeletTest, AdminErrors) {
  start();
  auto missing_pod = send("POST", "/_emulator/kubelet/pods/default/ghost", {{"ready", false}});
  EXPECT_EQ(missing_pod.status, 404);
  EXPECT_EQ(json::parse(missing_pod.body)["message"], "pods \"ghost\" not found");
  auto missing_node = send("POST", "/_emulator/kubelet/nodes/node-9", {{"ready", "False"}});
  EXPECT_EQ(missing_node.status, 404);
  EXPECT_EQ(json::parse(missing_node.body)["message"], "nodes \"node-9\" not found");

  create(pod("target"));
  wait_running("target");
  const std::string pod_path = "/_emulator/kubelet/pods/default/target";
  for (const std::string& body :
       {std::string("not json"), std::string("[1]"), std::string("{}"), std::string(R"({"ready":"no"})"),
        std::string(R"({"ready":false,"phase":"Failed"})"), std::string(R"({"phase":"Running"})"),
        std::string(R"({"phase":"Failed","exitCode":"1"})"), std::string(R"({"redy":false})"),
        std::string(R"({"ready":false,"reason":"x"})")}) {
    auto reply = send("POST", pod_path, nullptr, body);
    EXPECT_EQ(reply.status, 400) << body << " -> " << reply.body;
    EXPECT_FALSE(json::parse(reply.body, nullptr, false).value("message", "").empty()) << body;
  }
  for (const std::string& body : {std::string(R"({"ready":"Maybe"})"), std::string("{}"), std::string("x")}) {
    EXPECT_EQ(send("POST", "/_emulator/kubelet/nodes/node-1", nullptr, body).status, 400) << body;
  }
  EXPECT_EQ(send("GET", pod_path).status, 405);
  EXPECT_EQ(send("POST", "/_emulator/kubelet/pods/default", {{"ready", true}}).status, 404);
  // Readiness of a pod that is not running is a conflict, not a silent change.
  json elsewhere = pod("elsewhere");
  elsewhere["spec"]["nodeName"] = "no-such-node";
  create(elsewhere);
  EXPECT_EQ(send("POST", "/_emulator/kubelet/pods/default/elsewhere", {{"ready", false}}).status, 409);
  // Nothing of it touched the running pod.
  EXPECT_EQ(condition_status(get(kPods + "/target"), "Ready"), "True");
}

}  // namespace
}  // namespace eslease::kubeemu
