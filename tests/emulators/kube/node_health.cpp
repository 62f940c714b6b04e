#include "emulators/kube/node_health.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/text.h"
#include "emulators/kube/kubelet.h"
#include "emulators/kube/kubelet_detail.h"
#include "emulators/kube/object_meta.h"

namespace eslease::kubeemu {

using nlohmann::json;
using namespace kubelet_detail;

namespace {

// kube-controller-manager's --node-startup-grace-period: the grace of a node that never
// posted a Ready condition.
constexpr std::chrono::seconds kNodeStartupGracePeriod{60};

}  // namespace

json make_node(const std::string& name, int index, WallTime now) {
  const std::string t = now_text(now);
  const std::string cidr = "10.244." + std::to_string(index) + ".0/24";
  auto condition = [&](const char* type, const char* status, const char* reason, const char* message) {
    return json{{"type", type},     {"status", status},  {"lastHeartbeatTime", t}, {"lastTransitionTime", t},
                {"reason", reason}, {"message", message}};
  };
  const json capacity = {{"cpu", "4"}, {"memory", "8Gi"}, {"pods", "110"}, {"ephemeral-storage", "100Gi"}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"uid", random_uid()},
        {"creationTimestamp", t},
        {"labels",
         {{"kubernetes.io/hostname", name},
          {"kubernetes.io/os", "linux"},
          {"kubernetes.io/arch", "amd64"},
          {"beta.kubernetes.io/os", "linux"},
          {"beta.kubernetes.io/arch", "amd64"}}},
        {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}}}},
      {"spec", {{"podCIDR", cidr}, {"podCIDRs", {cidr}}}},
      {"status",
       {{"conditions",
         {condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available"),
          condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
          condition("PIDPressure", "False", "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available"),
          condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")}},
        {"addresses",
         {{{"type", "InternalIP"}, {"address", node_ip(index)}}, {{"type", "Hostname"}, {"address", name}}}},
        {"capacity", capacity},
        {"allocatable", capacity},
        {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
        {"nodeInfo",
         {{"machineID", random_hex(32)},
          {"systemUUID", random_uid()},
          {"bootID", random_uid()},
          {"kernelVersion", "6.1.0"},
          {"osImage", "kube-emulator simulated node"},
          {"containerRuntimeVersion", "containerd://1.7.0"},
          {"kubeletVersion", "v1.32.0"},
          {"kubeProxyVersion", "v1.32.0"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}}}}};
}

std::string node_ready_status(const json& node) {
  const std::string status = condition_status(member(node, "status"), "Ready");
  return status.empty() ? "Unknown" : status;
}

namespace {

// The conditions a kubelet posts beside Ready, with what it says while all is well.
struct Pressure {
  const char* type;
  const char* reason;
  const char* message;
};
constexpr Pressure kPressures[] = {
    {"MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
    {"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
    {"PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"}};

// The node lifecycle controller's taints for a Ready status (TaintNodesByCondition and the
// NoExecute tainting pass): none when True, else not-ready (False) or unreachable (Unknown),
// NoSchedule and NoExecute. A taint already there keeps its timeAdded.
void set_lifecycle_taints(json& node, const std::string& ready, WallTime now) {
  json& spec = object_at(node, "spec");
  const json& current = member(spec, "taints");
  json taints = json::array();
  std::vector<std::string> kept;
  const std::string wanted = ready == "True" ? "" : ready == "Unknown" ? kUnreachableTaint : kNotReadyTaint;
  if (current.is_array()) {
    for (const auto& taint : current) {
      const std::string key = string_at(taint, "key");
      if (key == kNotReadyTaint || key == kUnreachableTaint) {
        if (key != wanted) continue;
        kept.push_back(string_at(taint, "effect"));
      }
      taints.push_back(taint);
    }
  }
  if (!wanted.empty()) {
    for (const char* effect : {"NoSchedule", "NoExecute"}) {
      if (std::find(kept.begin(), kept.end(), effect) == kept.end()) {
        taints.push_back({{"key", wanted}, {"effect", effect}, {"timeAdded", now_text(now)}});
      }
    }
  }
  if (taints.empty()) {
    spec.erase("taints");
  } else {
    spec["taints"] = std::move(taints);
  }
}

}  // namespace

void mark_node_status_unknown(json& node, WallTime now) {
  json& status = object_at(node, "status");
  for (const char* type : {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}) {
    const json* current = find_condition(status, type);
    if (current == nullptr) {
      // tryUpdateNodeHealth: a condition the kubelet never posted, dated from the node's creation.
      json& conditions = status["conditions"];
      if (!conditions.is_array()) conditions = json::array();
      conditions.push_back({{"type", type},
                            {"status", "Unknown"},
                            {"lastHeartbeatTime", string_at(member(node, "metadata"), "creationTimestamp")},
                            {"lastTransitionTime", now_text(now)},
                            {"reason", "NodeStatusNeverUpdated"},
                            {"message", "Kubelet never posted node status."}});
    } else if (string_at(*current, "status") != "Unknown") {
      // Heartbeats are left as they were: they say when the kubelet was last heard.
      set_condition(status, type, "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.", now,
                    false);
    }
  }
  set_lifecycle_taints(node, "Unknown", now);
}

void set_node_ready(json& node, const std::string& value, WallTime now) {
  if (value == "Unknown") return mark_node_status_unknown(node, now);
  json& status = object_at(node, "status");
  for (const auto& p : kPressures) set_condition(status, p.type, "False", p.reason, p.message, now, false);
  if (value == "True") {
    set_condition(status, "Ready", "True", "KubeletReady", "kubelet is posting ready status", now, false);
  } else {
    set_condition(status, "Ready", "False", "KubeletNotReady",
                  "container runtime network not ready: NetworkReady=false (simulated by kube-emulator)", now,
                  false);
  }
  // A status the kubelet posts carries a fresh heartbeat on every condition.
  for (auto& c : status["conditions"]) {
    if (c.is_object()) c["lastHeartbeatTime"] = now_text(now);
  }
  set_lifecycle_taints(node, value, now);
}

void renew_node_lease(ObjectStore& store, const std::string& node, WallTime now) {
  auto owner = store.get(kNodesId, "", node);
  if (!owner) return;
  auto current = store.get(kLeasesId, kNodeLeaseNamespace, node);
  json lease = current ? *current
                       : json{{"apiVersion", "coordination.k8s.io/v1"},
                              {"kind", "Lease"},
                              {"metadata",
                               {{"name", node},
                                {"namespace", kNodeLeaseNamespace},
                                {"uid", random_uid()},
                                {"creationTimestamp", now_text(now)}}}};
  json& spec = object_at(lease, "spec");
  spec["holderIdentity"] = node;
  spec["leaseDurationSeconds"] = kNodeLeaseDurationSeconds;
  spec["renewTime"] = format_rfc3339_micros(now);
  // The kubelet sets its Node as the owner when the Lease has none, so the Lease goes with it.
  json& meta = object_at(lease, "metadata");
  const json& references = member(meta, "ownerReferences");
  if (!references.is_array() || references.empty()) {
    meta["ownerReferences"] = json::array(
        {{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}, {"uid", meta_string(*owner, "uid")}}});
  }
  store.put(kLeasesId, kNodeLeaseNamespace, node, std::move(lease));
}

void NodeLifecycleController::monitor(ObjectStore& store, MonoTime now, WallTime wall) {
  std::set<std::string> present;
  for (const auto& node : store.list(kNodesId, "")) {
    const std::string name = meta_string(*node, "name");
    present.insert(name);
    const json* ready = find_condition(member(*node, "status"), "Ready");
    const std::string heartbeat = ready ? string_at(*ready, "lastHeartbeatTime") : "";
    std::optional<WallTime> renewed;
    if (auto lease = store.get(kLeasesId, kNodeLeaseNamespace, name)) {
      renewed = parse_rfc3339(string_at(member(*lease, "spec"), "renewTime"));
    }
    auto [it, fresh] = health_.try_emplace(name, Health{now, heartbeat, renewed});
    Health& health = it->second;
    if (!fresh && heartbeat != health.heartbeat) {
      health.probe = now;
      health.heartbeat = heartbeat;
    }
    // Any renewal counts, even of a node that never posted its status.
    if (!fresh && renewed && (!health.renewed || *health.renewed < *renewed)) {
      health.probe = now;
      health.renewed = renewed;
    }
    const auto grace = ready ? std::chrono::duration_cast<std::chrono::milliseconds>(grace_period_)
                             : std::chrono::duration_cast<std::chrono::milliseconds>(kNodeStartupGracePeriod);
    if (now <= health.probe + grace) continue;
    json next = *node;
    mark_node_status_unknown(next, wall);
    if (next != *node) store.put(kNodesId, "", name, std::move(next));
  }
  std::erase_if(health_, [&](const auto& entry) { return !present.contains(entry.first); });
}

}  // namespace eslease::kubeemu
