// The pod status rules of the simulated kubelet and of the pod registry: a created pod's
// status, graceful pod deletion, readiness, ending a pod and its containers' restart after a
// power-off (the node's own rules are in node_health.cpp).
#include <algorithm>
#include <random>

#include "common/log.h"
#include "common/text.h"
#include "emulators/kube/kubelet.h"
#include "emulators/kube/kubelet_detail.h"
#include "emulators/kube/object_meta.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace kubelet_detail {

// A grace period as a time offset, bounded (a century) so absurd requests cannot overflow
// the clock arithmetic.
std::chrono::seconds grace_offset(std::int64_t seconds) {
  return std::chrono::seconds(std::clamp<std::int64_t>(seconds, 0, 100LL * 365 * 24 * 3600));
}

// Accessors that never throw: pods can hold anything a client managed to store.
std::string string_at(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<std::int64_t> int_at(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// The object under `key`, made an object first if it is missing or malformed.
json& object_at(json& parent, const char* key) {
  json& child = parent[key];
  if (!child.is_object()) child = json::object();
  return child;
}

std::string phase_of(const json& pod) {
  return string_at(member(pod, "status"), "phase");
}

std::string node_of(const json& pod) {
  return string_at(member(pod, "spec"), "nodeName");
}

bool terminal(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed";
}

bool deleting(const json& object) {
  const json& meta = member(object, "metadata");
  return meta.is_object() && meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
}

std::string now_text(WallTime now) {
  return format_rfc3339_seconds(now);
}

const json* find_condition(const json& status, const std::string& type) {
  const json& conditions = member(status, "conditions");
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions) {
    if (string_at(c, "type") == type) return &c;
  }
  return nullptr;
}

std::string condition_status(const json& status, const std::string& type) {
  const json* c = find_condition(status, type);
  return c ? string_at(*c, "status") : "";
}

// Sets one condition the way UpdatePodCondition does: lastTransitionTime moves only when
// the status changes. A nullopt reason or message keeps the current one.
void set_condition(json& status, const std::string& type, const std::string& value,
                   const std::optional<std::string>& reason, const std::optional<std::string>& message,
                   WallTime now, bool probe_time) {
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  json* target = nullptr;
  for (auto& c : conditions) {
    if (string_at(c, "type") == type) target = &c;
  }
  if (target == nullptr) {
    json fresh = {{"type", type}};
    if (probe_time) fresh["lastProbeTime"] = nullptr;
    conditions.push_back(std::move(fresh));
    target = &conditions.back();
  }
  if (string_at(*target, "status") != value || !target->contains("lastTransitionTime")) {
    (*target)["lastTransitionTime"] = now_text(now);
  }
  (*target)["status"] = value;
  auto apply = [&](const char* key, const std::optional<std::string>& text) {
    if (!text) return;
    if (text->empty()) {
      target->erase(key);
    } else {
      (*target)[key] = *text;
    }
  };
  apply("reason", reason);
  apply("message", message);
}

// The order a kubelet writes pod conditions in; others (readiness gates) follow.
void order_pod_conditions(json& status) {
  json& conditions = status["conditions"];
  if (!conditions.is_array()) return;
  auto rank = [](const json& c) {
    static const char* kOrder[] = {"PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                   "PodScheduled"};
    const std::string type = string_at(c, "type");
    for (int i = 0; i < 5; ++i) {
      if (type == kOrder[i]) return i;
    }
    return 5;
  };
  std::vector<json> items(conditions.begin(), conditions.end());
  std::stable_sort(items.begin(), items.end(),
                   [&](const json& a, const json& b) { return rank(a) < rank(b); });
  conditions = json(items);
}

std::vector<std::string> container_names(const json& pod) {
  std::vector<std::string> out;
  const json& containers = member(member(pod, "spec"), "containers");
  if (!containers.is_array()) return out;
  for (const auto& c : containers) {
    const std::string name = string_at(c, "name");
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

std::string unready_message(const json& pod) {
  std::string names;
  for (const auto& n : container_names(pod)) names += (names.empty() ? "" : " ") + n;
  return "containers with unready status: [" + names + "]";
}

std::string random_hex(std::size_t n) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += kHex[rng() % 16];
  return out;
}

// The QoS class GetPodQOS derives from requests and limits (quantities compared as written).
std::string qos_class(const json& pod) {
  bool any = false;
  bool guaranteed = true;
  for (const char* list : {"containers", "initContainers"}) {
    const json& containers = member(member(pod, "spec"), list);
    if (!containers.is_array()) continue;
    for (const auto& c : containers) {
      const json& resources = member(c, "resources");
      const json& requests = member(resources, "requests");
      const json& limits = member(resources, "limits");
      for (const char* name : {"cpu", "memory"}) {
        const json& limit = member(limits, name);
        const json& request = member(requests, name).is_null() ? limit : member(requests, name);
        auto zero = [](const json& q) { return q.is_null() || q == "0" || q == 0; };
        if (!zero(limit) || !zero(request)) any = true;
        if (limit.is_null() || request.dump() != limit.dump()) guaranteed = false;
      }
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

std::string node_ip(int index) {
  return "172.18.0." + std::to_string(index + 1);
}

int node_index(const std::string& name) {
  // node-<n>: the index is in the name, so it survives without a lookup table.
  auto dash = name.rfind('-');
  if (dash == std::string::npos) return 0;
  try {
    return std::stoi(name.substr(dash + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace kubelet_detail

using namespace kubelet_detail;

std::chrono::milliseconds KubeletOptions::termination_wait(std::int64_t seconds) const {
  const double scaled = static_cast<double>(std::max<std::int64_t>(seconds, 0)) * 1000.0 * grace_scale;
  // Far beyond any test, but keeps the conversion defined for absurd grace periods.
  auto wait = std::chrono::milliseconds(static_cast<std::int64_t>(std::min(scaled, 1e12)));
  if (max_grace && wait > *max_grace) wait = *max_grace;
  return std::max(wait, std::chrono::milliseconds(0));
}

std::vector<std::string> simulated_node_names(const KubeletOptions& options) {
  std::vector<std::string> out;
  for (int i = 1; i <= options.nodes; ++i) out.push_back("node-" + std::to_string(i));
  return out;
}

void reset_created_pod_status(json& pod) {
  pod["status"] = {{"phase", "Pending"}, {"qosClass", qos_class(pod)}};
}

PodDeletion delete_pod(ObjectStore& store, const ObjectPtr& current, std::optional<std::int64_t> grace,
                       WallTime now) {
  json pod = *current;
  json& meta = object_at(pod, "metadata");
  const std::string ns = string_at(meta, "namespace");
  const std::string name = string_at(meta, "name");
  const bool finalizers = !finalizers_of(pod).empty();
  // Negative grace periods are treated as 1s on the delete path (rest.BeforeDelete).
  if (grace && *grace < 0) grace = 1;
  std::int64_t period;
  if (deleting(pod)) {
    const auto pending = int_at(meta, "deletionGracePeriodSeconds");
    if (!pending || *pending == 0) {
      // Not graceful (any more): removed now, or held by finalizers (markAsDeleting).
      if (!finalizers) return {store.erase(kPodsId, ns, name), true};
      meta["deletionGracePeriodSeconds"] = 0;
      auto at = parse_rfc3339(string_at(meta, "deletionTimestamp"));
      if (!at || *at > now) meta["deletionTimestamp"] = now_text(now);
      if (pod == *current) return {current, false};
      return {store.put(kPodsId, ns, name, std::move(pod)), false};
    }
    // A pending graceful deletion may only be shortened.
    if (!grace || *grace >= *pending) return {current, false};
    period = *grace;
    const WallTime was = parse_rfc3339(string_at(meta, "deletionTimestamp")).value_or(now);
    WallTime at = was - grace_offset(*pending) + grace_offset(period);
    if (at < now) {
      at = now;
      // The whole grace period already passed: shortest graceful period, so whoever
      // watches still makes the final grace-0 delete.
      if (period != 0) period = 1;
    }
    meta["deletionTimestamp"] = now_text(at);
    meta["deletionGracePeriodSeconds"] = period;
  } else {
    // The pod strategy's CheckGracefulDelete.
    period = grace.value_or(
        int_at(member(pod, "spec"), "terminationGracePeriodSeconds").value_or(kDefaultGraceSeconds));
    if (period < 0) period = 1;
    if (node_of(pod).empty() || terminal(phase_of(pod))) period = 0;
    meta["deletionTimestamp"] = now_text(now + grace_offset(period));
    meta["deletionGracePeriodSeconds"] = period;
    if (auto generation = int_at(meta, "generation"); generation && *generation > 0) {
      meta["generation"] = *generation + 1;
    }
  }
  auto stored = store.put(kPodsId, ns, name, std::move(pod));
  if (finalizers || period > 0) return {stored, false};
  return {store.erase(kPodsId, ns, name), true};
}

namespace {

// A change a kubelet would never make: the admin endpoint answers it with a 409.
ApiError refused(const json& pod, const std::string& why) {
  return conflict("", "pods", meta_string(pod, "name"), why);
}

}  // namespace

std::optional<ApiError> set_pod_ready(json& pod, bool ready, bool node_ready, WallTime now) {
  const std::string phase = phase_of(pod);
  if (phase != "Running") {
    return refused(pod, "pod is " + (phase.empty() ? std::string("without a phase") : phase) +
                            ", not Running: only a running pod's readiness can change");
  }
  json& status = object_at(pod, "status");
  if (ready) {
    set_condition(status, "ContainersReady", "True", "", "", now);
    set_condition(status, "Ready", node_ready ? "True" : "False",
                  node_ready ? std::optional<std::string>("") : std::nullopt,
                  node_ready ? std::optional<std::string>("") : std::nullopt, now);
  } else {
    // What a failing readiness probe leads to.
    const std::string message = unready_message(pod);
    set_condition(status, "ContainersReady", "False", "ContainersNotReady", message, now);
    set_condition(status, "Ready", "False", "ContainersNotReady", message, now);
  }
  if (status.contains("containerStatuses") && status["containerStatuses"].is_array()) {
    for (auto& c : status["containerStatuses"]) {
      if (c.is_object()) c["ready"] = ready;
    }
  }
  return std::nullopt;
}

std::optional<ApiError> end_pod(json& pod, const std::string& phase, const std::string& reason,
                                const std::string& message, std::optional<int> exit_code, WallTime now) {
  if (!terminal(phase)) {
    return refused(pod, "phase must be \"Succeeded\" or \"Failed\", not \"" + phase + "\"");
  }
  const std::string current = phase_of(pod);
  if (terminal(current)) {
    return refused(
        pod, "pod already ended as " + current + ": a kubelet never moves a pod out of a terminal phase");
  }
  if (phase == "Succeeded" && exit_code.value_or(0) != 0) {
    return refused(pod, "a Succeeded pod's containers exit with 0");
  }
  if (phase == "Failed" && exit_code && *exit_code == 0) {
    return refused(pod, "a Failed pod has a container that exited non-zero");
  }
  const int code = phase == "Succeeded" ? 0 : exit_code.value_or(1);
  json& status = object_at(pod, "status");
  status["phase"] = phase;
  if (!reason.empty()) status["reason"] = reason;
  if (!message.empty()) status["message"] = message;
  // generateAPIPodStatus: a terminal pod's containers are not ready, reason PodCompleted.
  set_condition(status, "PodReadyToStartContainers", "False", "", "", now);
  set_condition(status, "ContainersReady", "False", "PodCompleted", "", now);
  set_condition(status, "Ready", "False", "PodCompleted", "", now);
  order_pod_conditions(status);
  if (status.contains("containerStatuses") && status["containerStatuses"].is_array()) {
    for (auto& c : status["containerStatuses"]) {
      if (!c.is_object()) continue;
      std::string started = string_at(member(member(c, "state"), "running"), "startedAt");
      if (started.empty()) started = now_text(now);
      json terminated = {{"exitCode", code},
                         {"reason", code == 0 ? "Completed" : "Error"},
                         {"startedAt", started},
                         {"finishedAt", now_text(now)}};
      if (auto id = string_at(c, "containerID"); !id.empty()) terminated["containerID"] = id;
      c["state"] = {{"terminated", terminated}};
      c["ready"] = false;
      c["started"] = false;
    }
  }
  return std::nullopt;
}

void restart_after_power_on(json& pod, bool node_ready, WallTime now) {
  json& status = object_at(pod, "status");
  const json& policy = member(member(pod, "spec"), "restartPolicy");
  const bool restarts = !policy.is_string() || policy.get<std::string>() != "Never";
  if (status.contains("containerStatuses") && status["containerStatuses"].is_array()) {
    for (auto& c : status["containerStatuses"]) {
      if (!c.is_object()) continue;
      std::string started = string_at(member(member(c, "state"), "running"), "startedAt");
      if (started.empty()) started = now_text(now);
      // What the kubelet reports of a container whose state was lost with the node.
      json terminated = {{"exitCode", 137},
                         {"reason", "ContainerStatusUnknown"},
                         {"message", "The container could not be located when the pod was terminated"},
                         {"startedAt", started},
                         {"finishedAt", now_text(now)}};
      if (!restarts) {
        c["state"] = {{"terminated", terminated}};
        c["ready"] = false;
        c["started"] = false;
        continue;
      }
      c["lastState"] = {{"terminated", terminated}};
      c["state"] = {{"running", {{"startedAt", now_text(now)}}}};
      c["containerID"] = "containerd://" + random_hex(64);
      c["restartCount"] = int_at(c, "restartCount").value_or(0) + 1;
      c["ready"] = true;
      c["started"] = true;
    }
  }
  if (!restarts) {
    status["phase"] = "Failed";
    set_condition(status, "ContainersReady", "False", "PodCompleted", "", now);
    set_condition(status, "Ready", "False", "PodCompleted", "", now);
    return;
  }
  set_condition(status, "ContainersReady", "True", "", "", now);
  set_condition(status, "Ready", node_ready ? "True" : "False", "", "", now);
}

}  // namespace eslease::kubeemu
