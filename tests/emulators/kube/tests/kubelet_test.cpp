// The simulated kubelet (--simulate-kubelet) over real HTTP: scheduling, Running and Ready,
// graceful and forced deletion, the /_emulator/kubelet/ admin endpoints, and the old
// behaviour when it is off.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stop_token>
#include <thread>

#include "common/text.h"
#include "emulators/kube/kube_emulator.h"
#include "http/transport.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using eslease::testing::wait_until;
using nlohmann::json;

const std::string kPods = "/api/v1/namespaces/default/pods";

json pod(const std::string& name, std::optional<int> grace = std::nullopt) {
  json object = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata", {{"name", name}, {"labels", {{"app", "web"}}}}},
                 {"spec", {{"containers", {{{"name", "app"}, {"image", "nginx:1.27"}}}}}}};
  if (grace) object["spec"]["terminationGracePeriodSeconds"] = *grace;
  return object;
}

const json* condition(const json& object, const std::string& type) {
  if (!object.contains("status") || !object["status"].contains("conditions")) return nullptr;
  for (const auto& c : object["status"]["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::string condition_status(const json& object, const std::string& type) {
  const json* c = condition(object, type);
  return c ? c->value("status", "") : "";
}

std::uint64_t rv_of(const json& object) {
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
    auto transport = http::make_cpprest_transport();
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
  std::unique_ptr<http::Transport> transport_ = http::make_cpprest_transport();
};

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
  const auto before = std::chrono::steady_clock::now();
  const WallTime wall_before = std::chrono::system_clock::now();
  json answered = send_json("DELETE", kPods + "/graceful");
  EXPECT_EQ(answered["kind"], "Pod");
  EXPECT_EQ(answered["metadata"]["deletionGracePeriodSeconds"], 2);
  auto at = parse_rfc3339(answered["metadata"].value("deletionTimestamp", ""));
  ASSERT_TRUE(at.has_value());
  EXPECT_GE(*at, std::chrono::time_point_cast<std::chrono::seconds>(wall_before) + std::chrono::seconds(1));
  EXPECT_LE(*at, std::chrono::system_clock::now() + std::chrono::seconds(3));
  // Still there, terminating, and a second DELETE changes nothing.
  json terminating = get(kPods + "/graceful");
  EXPECT_EQ(terminating["metadata"]["deletionTimestamp"], answered["metadata"]["deletionTimestamp"]);
  EXPECT_EQ(send_json("DELETE", kPods + "/graceful"), terminating);

  auto deleted =
      watch->wait_for("DELETED", [](const json& o) { return o["metadata"]["name"] == "graceful"; });
  ASSERT_TRUE(deleted);
  // 2 s scaled by 0.2: never before 400 ms.
  EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(400));
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
  const auto before = std::chrono::steady_clock::now();
  emulator_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5));
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
