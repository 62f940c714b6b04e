// Server-side printing of built-in resources: the columns and cells `kubectl get` shows for
// pods, events, nodes, deployments and coordination Leases.
#include "emulators/kube/printers.h"

#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;

const http::Headers kTable = {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}};

std::vector<std::string> column_names(const json& table, int priority) {
  std::vector<std::string> out;
  for (const auto& c : table["columnDefinitions"]) {
    if (c["priority"] == priority) out.push_back(c["name"]);
  }
  return out;
}

class KubePrintersTest : public ::testing::Test {
 protected:
  json table(const std::string& url) {
    auto reply = call(api, "GET", url, nullptr, kTable);
    EXPECT_EQ(reply.status, 200) << reply.body.dump();
    EXPECT_EQ(reply.body["kind"], "Table");
    return reply.body;
  }
  void create(const std::string& url, const json& object) {
    auto reply = call(api, "POST", url, object);
    ASSERT_EQ(reply.status, 201) << reply.body.dump();
  }
  ApiServer api{ApiServerOptions{}};
};

json pod(const std::string& name, json status) {
  json containers = json::array({{{"name", "a"}, {"image", "a"}}, {{"name", "b"}, {"image", "b"}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec", {{"nodeName", "node-1"}, {"containers", containers}}},
          {"status", std::move(status)}};
}

TEST_F(KubePrintersTest, PodsShowReadyStatusRestartsAndAge) {
  create("/api/v1/namespaces/default/pods",
         pod("web",
             {{"phase", "Running"},
              {"podIP", "10.0.0.7"},
              {"containerStatuses",
               {{{"name", "a"},
                 {"ready", true},
                 {"restartCount", 2},
                 {"state", {{"running", json::object()}}},
                 {"lastState", {{"terminated", {{"exitCode", 1}, {"finishedAt", "2020-01-01T00:00:00Z"}}}}}},
                {{"name", "b"},
                 {"ready", false},
                 {"restartCount", 0},
                 {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}}}}}}));
  create("/api/v1/namespaces/default/pods", pod("new", {{"phase", "Pending"}}));
  const json t = table("/api/v1/namespaces/default/pods");
  EXPECT_EQ(column_names(t, 0), (std::vector<std::string>{"Name", "Ready", "Status", "Restarts", "Age"}));
  EXPECT_EQ(column_names(t, 1),
            (std::vector<std::string>{"IP", "Node", "Nominated Node", "Readiness Gates"}));
  const json& web = t["rows"][1]["cells"];
  EXPECT_EQ(web[0], "web");
  EXPECT_EQ(web[1], "1/2");
  EXPECT_EQ(web[2], "CrashLoopBackOff");
  EXPECT_EQ(web[3].get<std::string>().rfind("2 (", 0), 0u) << web[3];
  EXPECT_EQ(web[3].get<std::string>().substr(web[3].get<std::string>().size() - 5), " ago)") << web[3];
  EXPECT_EQ(web[5], "10.0.0.7");
  EXPECT_EQ(web[6], "node-1");
  const json& fresh = t["rows"][0]["cells"];
  EXPECT_EQ(fresh, (json{"new", "0/2", "Pending", "0", fresh[4], "<none>", "node-1", "<none>", "<none>"}));
  EXPECT_EQ(t["rows"][0]["object"]["kind"], "PartialObjectMetadata")
      << "kubectl -A reads the namespace from it";
}

TEST(KubePodStatusColumn, FollowsContainersAndDeletion) {
  json p = {{"spec", {{"containers", json::array({{{"name", "a"}}})}}}, {"status", {{"phase", "Running"}}}};
  p["status"]["containerStatuses"] = {{{"ready", true}, {"state", {{"running", json::object()}}}}};
  EXPECT_EQ(pod_status_reason(p), "Running");
  p["status"]["containerStatuses"][0]["state"] = {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}};
  p["status"]["phase"] = "Succeeded";
  EXPECT_EQ(pod_status_reason(p), "Completed");
  p["status"]["containerStatuses"][0]["state"] = {{"terminated", {{"exitCode", 137}, {"signal", 9}}}};
  EXPECT_EQ(pod_status_reason(p), "Signal:9");
  p["spec"]["initContainers"] = {{{"name", "init"}}};
  p["status"]["initContainerStatuses"] = {{{"state", {{"running", json::object()}}}}};
  EXPECT_EQ(pod_status_reason(p), "Init:0/1");
  p["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_EQ(pod_status_reason(p), "Terminating");
  p["status"]["reason"] = "NodeLost";
  EXPECT_EQ(pod_status_reason(p), "Unknown");
}

TEST_F(KubePrintersTest, EventsShowLastSeenTypeReasonObjectAndMessage) {
  create("/api/v1/namespaces/default/events",
         {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", "web.1"}}},
          {"involvedObject", {{"kind", "Pod"}, {"name", "web"}, {"namespace", "default"}}},
          {"reason", "Acquired"},
          {"message", "lock granted"},
          {"type", "Normal"},
          {"count", 3},
          {"source", {{"component", "eslease-controller"}}},
          {"firstTimestamp", "2020-01-01T00:00:00Z"},
          {"lastTimestamp", "2020-01-01T00:00:00Z"}});
  const json t = table("/api/v1/namespaces/default/events");
  EXPECT_EQ(column_names(t, 0),
            (std::vector<std::string>{"Last Seen", "Type", "Reason", "Object", "Message"}));
  const json& cells = t["rows"][0]["cells"];
  EXPECT_EQ(cells[1], "Normal");
  EXPECT_EQ(cells[2], "Acquired");
  EXPECT_EQ(cells[3], "pod/web");
  EXPECT_EQ(cells[5], "eslease-controller");
  EXPECT_EQ(cells[6], "lock granted");
  EXPECT_EQ(cells[8], "3");
  EXPECT_EQ(cells[9], "web.1");
  EXPECT_NE(cells[0].get<std::string>().find('y'), std::string::npos) << "years ago: " << cells[0];
}

TEST_F(KubePrintersTest, NodesDeploymentsAndLeases) {
  create("/api/v1/nodes",
         {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", "n1"}, {"labels", {{"node-role.kubernetes.io/control-plane", ""}}}}},
          {"spec", {{"unschedulable", true}}},
          {"status",
           {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
            {"nodeInfo", {{"kubeletVersion", "v1.32.0"}}}}}});
  const json nodes = table("/api/v1/nodes");
  EXPECT_EQ(column_names(nodes, 0), (std::vector<std::string>{"Name", "Status", "Roles", "Age", "Version"}));
  EXPECT_EQ(nodes["rows"][0]["cells"][1], "Ready,SchedulingDisabled");
  EXPECT_EQ(nodes["rows"][0]["cells"][2], "control-plane");
  EXPECT_EQ(nodes["rows"][0]["cells"][4], "v1.32.0");

  create("/apis/apps/v1/namespaces/default/deployments",
         {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", "d"}}},
          {"spec",
           {{"replicas", 3},
            {"selector", {{"matchLabels", {{"app", "d"}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", "d"}}}}},
              {"spec", {{"containers", {{{"name", "app"}, {"image", "app:1"}}}}}}}}}}});
  const json deployments = table("/apis/apps/v1/namespaces/default/deployments");
  EXPECT_EQ(column_names(deployments, 0),
            (std::vector<std::string>{"Name", "Ready", "Up-to-date", "Available", "Age"}));
  const json& d = deployments["rows"][0]["cells"];
  EXPECT_EQ((json{d[0], d[1], d[2], d[3], d[5], d[6], d[7]}),
            (json{"d", "0/3", 0, 0, "app", "app:1", "app=d"}));

  create("/apis/coordination.k8s.io/v1/namespaces/default/leases", {{"apiVersion", "coordination.k8s.io/v1"},
                                                                    {"kind", "Lease"},
                                                                    {"metadata", {{"name", "leader"}}},
                                                                    {"spec", {{"holderIdentity", "pod-a"}}}});
  const json leases = table("/apis/coordination.k8s.io/v1/namespaces/default/leases");
  EXPECT_EQ(column_names(leases, 0), (std::vector<std::string>{"Name", "Holder", "Age"}));
  EXPECT_EQ(leases["rows"][0]["cells"][1], "pod-a");
}

}  // namespace
}  // namespace eslease::kubeemu
