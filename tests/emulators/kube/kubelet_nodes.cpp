// The simulated kubelet's node side: each kubelet's heartbeat (its node Lease, and its node
// status at least every nodeStatusReportFrequency), and the node faults of the admin API:
// a partition from the API server, a power-off, and their end.
#include "common/log.h"
#include "emulators/kube/kubelet.h"
#include "emulators/kube/kubelet_detail.h"
#include "emulators/kube/object_meta.h"

namespace eslease::kubeemu {

using nlohmann::json;
using namespace kubelet_detail;

namespace {

// The kubelet's nodeStatusReportFrequency: an unchanged status is posted this often.
constexpr std::chrono::minutes kNodeStatusReportFrequency{5};

}  // namespace

void SimulatedKubelet::heartbeat(const std::string& node) {
  auto it = agents_.find(node);
  if (it == agents_.end() || !kubelet_up(node)) return;  // nothing of it reaches the API server
  renew_node_lease(store_, node, clock_.now());
  if (clock_.monotonic() - it->second.status_posted >= kNodeStatusReportFrequency) {
    post_node_status(node, it->second);
  }
}

void SimulatedKubelet::post_node_status(const std::string& node, NodeAgent& agent) {
  auto current = store_.get(kNodesId, "", node);
  agent.status_posted = clock_.monotonic();
  if (!current) return;  // deleted: the kubelet registers its node only when it starts
  json next = *current;
  set_node_ready(next, agent.reports, clock_.now());
  store_.put(kNodesId, "", node, std::move(next));
}

void SimulatedKubelet::come_back(const std::string& node, NodeAgent& agent) {
  // A kubelet that reaches the API server again renews its Lease at once (its lease
  // controller retries a failed renewal within seconds) and posts its status; one whose node
  // was powered off started afresh and found its containers gone.
  renew_node_lease(store_, node, clock_.now());
  const bool rebooted = agent.rebooted;
  if (rebooted) agent.reports = "True";
  agent.rebooted = false;
  post_node_status(node, agent);
  if (rebooted) restart_containers(node);
  poke(node);
}

void SimulatedKubelet::restart_containers(const std::string& node) {
  const bool ready = node_is_ready(node);
  std::vector<ObjectPtr> pods;
  store_.scan(kPodsId, "", "", [&](const ObjectPtr& pod) {
    if (node_of(*pod) == node && phase_of(*pod) == "Running" && !deleting(*pod)) pods.push_back(pod);
    return true;
  });
  for (const auto& pod : pods) {
    json next = *pod;
    restart_after_power_on(next, ready, clock_.now());
    store_.put(kPodsId, meta_string(*pod, "namespace"), meta_string(*pod, "name"), std::move(next));
  }
}

void SimulatedKubelet::poke(const std::string& node) {
  {
    std::lock_guard lock(queue_mutex_);
    poked_.insert(node);
  }
  wake_.notify_one();
}

std::variant<json, ApiError> SimulatedKubelet::change_node(const std::string& name,
                                                           const NodeChange& change) {
  auto current = store_.get(kNodesId, "", name);
  if (!current) return not_found("", "nodes", name);
  auto it = agents_.find(name);
  if (it == agents_.end()) {
    return conflict("", "nodes", name, "the node is not simulated: no kubelet of the emulator runs there");
  }
  NodeAgent& agent = it->second;
  const bool was_up = kubelet_up(name);
  if (change.field == "power") {
    agent.powered = change.value == "on";
    // Off: its containers stop, and nothing of that reaches the API server.
    if (!agent.powered) agent.rebooted = true;
    log::info("simulated node power", {{"node", name}, {"power", change.value}});
    if (kubelet_up(name) && !was_up) come_back(name, agent);
  } else if (change.field == "network") {
    agent.connected = change.value == "connected";
    log::info("simulated node network", {{"node", name}, {"network", change.value}});
    if (kubelet_up(name) && !was_up) come_back(name, agent);
  } else if (change.value == "Unknown") {
    // What the node lifecycle controller writes once a partitioned kubelet's grace has run
    // out, written at once.
    agent.connected = false;
    json next = *current;
    mark_node_status_unknown(next, clock_.now());
    if (next != *current) store_.put(kNodesId, "", name, std::move(next));
  } else {
    if (!agent.powered) {
      return conflict("", "nodes", name,
                      "the node is powered off: its kubelet posts nothing until it is powered on "
                      "({\"power\": \"on\"})");
    }
    agent.reports = change.value;
    agent.connected = true;
    if (was_up) {
      post_node_status(name, agent);
    } else {
      come_back(name, agent);
    }
  }
  return *store_.get(kNodesId, "", name);
}

}  // namespace eslease::kubeemu
