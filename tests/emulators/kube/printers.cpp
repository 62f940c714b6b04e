#include "emulators/kube/printers.h"

#include <cctype>
#include <map>

#include "common/text.h"
#include "emulators/kube/table.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

const json& field(const json& object, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* node = &object;
  for (const char* key : path) {
    if (!node->is_object() || !node->contains(key)) return kNull;
    node = &(*node)[key];
  }
  return *node;
}

std::string text(const json& object, std::initializer_list<const char*> path) {
  const json& value = field(object, path);
  return value.is_string() ? value.get<std::string>() : "";
}

long long number(const json& object, std::initializer_list<const char*> path) {
  const json& value = field(object, path);
  return value.is_number_integer() ? value.get<long long>() : 0;
}

json age_of(const json& object, std::initializer_list<const char*> path, WallTime now) {
  auto t = parse_rfc3339(text(object, path));
  if (!t) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

const json& array_at(const json& object, std::initializer_list<const char*> path) {
  static const json kEmpty = json::array();
  const json& value = field(object, path);
  return value.is_array() ? value : kEmpty;
}

TableColumn name_column() {
  return {"Name", "string", "name", "Name must be unique within a namespace.", 0};
}

TableColumn age_column() {
  return {"Age", "string", "", "Time since the object was created.", 0};
}

// A terminated container's reason, else "Signal:N" or "ExitCode:N".
std::string terminated_reason(const json& terminated) {
  if (auto reason = text(terminated, {"reason"}); !reason.empty()) return reason;
  if (long long signal = number(terminated, {"signal"}); signal != 0)
    return "Signal:" + std::to_string(signal);
  return "ExitCode:" + std::to_string(number(terminated, {"exitCode"}));
}

// The init containers' part of the status; empty when they are all done.
std::string init_reason(const json& pod) {
  const json& statuses = array_at(pod, {"status", "initContainerStatuses"});
  const auto total = array_at(pod, {"spec", "initContainers"}).size();
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const json& state = field(statuses[i], {"state"});
    const json& terminated = field(state, {"terminated"});
    if (terminated.is_object() && number(terminated, {"exitCode"}) == 0) continue;
    if (terminated.is_object()) return "Init:" + terminated_reason(terminated);
    if (auto waiting = text(state, {"waiting", "reason"}); !waiting.empty() && waiting != "PodInitializing") {
      return "Init:" + waiting;
    }
    return "Init:" + std::to_string(i) + "/" + std::to_string(total);
  }
  return "";
}

}  // namespace

std::string pod_status_reason(const json& pod) {
  std::string reason = text(pod, {"status", "phase"});
  if (auto given = text(pod, {"status", "reason"}); !given.empty()) reason = given;
  if (auto init = init_reason(pod); !init.empty()) {
    reason = init;
  } else {
    bool running = false;
    const json& statuses = array_at(pod, {"status", "containerStatuses"});
    for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
      const json& state = field(*it, {"state"});
      if (auto waiting = text(state, {"waiting", "reason"}); !waiting.empty()) {
        reason = waiting;
      } else if (field(state, {"terminated"}).is_object()) {
        reason = terminated_reason(field(state, {"terminated"}));
      } else if (field(state, {"running"}).is_object() && field(*it, {"ready"}) == true) {
        running = true;
      }
    }
    if (reason == "Completed" && running) reason = "Running";
  }
  if (!text(pod, {"metadata", "deletionTimestamp"}).empty()) {
    reason = text(pod, {"status", "reason"}) == "NodeLost" ? "Unknown" : "Terminating";
  }
  return reason;
}

namespace {

json pod_cells(const json& pod, WallTime now) {
  const json& statuses = array_at(pod, {"status", "containerStatuses"});
  long long ready = 0;
  long long restarts = 0;
  std::string last_restart;
  for (const auto& status : statuses) {
    if (field(status, {"ready"}) == true) ++ready;
    restarts += number(status, {"restartCount"});
    auto finished = text(status, {"lastState", "terminated", "finishedAt"});
    if (finished > last_restart) last_restart = finished;
  }
  std::string restart_cell = std::to_string(restarts);
  if (restarts > 0 && !last_restart.empty()) {
    restart_cell += " (" + age_of(json{{"t", last_restart}}, {"t"}, now).get<std::string>() + " ago)";
  }
  const auto containers = array_at(pod, {"spec", "containers"}).size();
  auto or_none = [](const std::string& s) { return s.empty() ? std::string("<none>") : s; };
  return json::array({text(pod, {"metadata", "name"}),
                      std::to_string(ready) + "/" + std::to_string(containers), pod_status_reason(pod),
                      restart_cell, age_of(pod, {"metadata", "creationTimestamp"}, now),
                      or_none(text(pod, {"status", "podIP"})), or_none(text(pod, {"spec", "nodeName"})),
                      or_none(text(pod, {"status", "nominatedNodeName"})), "<none>"});
}

json event_cells(const json& event, WallTime now) {
  json last_seen = age_of(event, {"lastTimestamp"}, now);
  if (text(event, {"lastTimestamp"}).empty()) last_seen = age_of(event, {"eventTime"}, now);
  if (!text(event, {"series", "lastObservedTime"}).empty())
    last_seen = age_of(event, {"series", "lastObservedTime"}, now);
  std::string kind = text(event, {"involvedObject", "kind"});
  for (auto& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string source = text(event, {"source", "component"});
  if (auto host = text(event, {"source", "host"}); !host.empty()) source += ", " + host;
  long long count = number(event, {"count"});
  return json::array({last_seen, text(event, {"type"}), text(event, {"reason"}),
                      kind + "/" + text(event, {"involvedObject", "name"}),
                      text(event, {"involvedObject", "fieldPath"}), source, text(event, {"message"}),
                      age_of(event, {"firstTimestamp"}, now), std::to_string(count == 0 ? 1 : count),
                      text(event, {"metadata", "name"})});
}

json node_cells(const json& node, WallTime now) {
  std::string status = "Unknown";
  for (const auto& condition : array_at(node, {"status", "conditions"})) {
    if (text(condition, {"type"}) != "Ready") continue;
    status = text(condition, {"status"}) == "True" ? "Ready" : "NotReady";
  }
  if (field(node, {"spec", "unschedulable"}) == true) status += ",SchedulingDisabled";
  std::string roles;
  const json& labels = field(node, {"metadata", "labels"});
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      const std::string prefix = "node-role.kubernetes.io/";
      if (key.rfind(prefix, 0) == 0 && key.size() > prefix.size()) {
        roles += (roles.empty() ? "" : ",") + key.substr(prefix.size());
      }
    }
  }
  std::string internal_ip = "<none>";
  for (const auto& address : array_at(node, {"status", "addresses"})) {
    if (text(address, {"type"}) == "InternalIP") internal_ip = text(address, {"address"});
  }
  auto info = [&](const char* key) { return text(node, {"status", "nodeInfo", key}); };
  return json::array({text(node, {"metadata", "name"}), status, roles.empty() ? "<none>" : roles,
                      age_of(node, {"metadata", "creationTimestamp"}, now), info("kubeletVersion"),
                      internal_ip, "<none>", info("osImage"), info("kernelVersion"),
                      info("containerRuntimeVersion")});
}

json deployment_cells(const json& deployment, WallTime now) {
  const json& desired = field(deployment, {"spec", "replicas"});
  const long long replicas = desired.is_number_integer() ? desired.get<long long>() : 1;
  std::string containers;
  std::string images;
  for (const auto& c : array_at(deployment, {"spec", "template", "spec", "containers"})) {
    containers += (containers.empty() ? "" : ",") + text(c, {"name"});
    images += (images.empty() ? "" : ",") + text(c, {"image"});
  }
  std::string selector;
  const json& labels = field(deployment, {"spec", "selector", "matchLabels"});
  if (labels.is_object()) {
    for (const auto& [key, value] : labels.items()) {
      selector +=
          (selector.empty() ? "" : ",") + key + "=" + (value.is_string() ? value.get<std::string>() : "");
    }
  }
  return json::array(
      {text(deployment, {"metadata", "name"}),
       std::to_string(number(deployment, {"status", "readyReplicas"})) + "/" + std::to_string(replicas),
       number(deployment, {"status", "updatedReplicas"}), number(deployment, {"status", "availableReplicas"}),
       age_of(deployment, {"metadata", "creationTimestamp"}, now), containers, images,
       selector.empty() ? "<none>" : selector});
}

json lease_cells(const json& lease, WallTime now) {
  return json::array({text(lease, {"metadata", "name"}), text(lease, {"spec", "holderIdentity"}),
                      age_of(lease, {"metadata", "creationTimestamp"}, now)});
}

json namespace_cells(const json& ns, WallTime now) {
  return json::array({text(ns, {"metadata", "name"}), text(ns, {"status", "phase"}),
                      age_of(ns, {"metadata", "creationTimestamp"}, now)});
}

std::map<std::string, BuiltinPrinter> make_printers() {
  auto wide = [](std::string name, std::string description) {
    return TableColumn{std::move(name), "string", "", std::move(description), 1};
  };
  auto plain = [](std::string name, std::string type, std::string description) {
    return TableColumn{std::move(name), std::move(type), "", std::move(description), 0};
  };
  std::map<std::string, BuiltinPrinter> printers;
  printers["/pods"] = {
      {name_column(), plain("Ready", "string", "Ready containers of all containers."),
       plain("Status", "string", "The pod's phase, or why it is not running."),
       plain("Restarts", "string", "Container restarts, and when the last one was."), age_column(),
       wide("IP", "The pod's IP address."), wide("Node", "The node the pod was scheduled to."),
       wide("Nominated Node", "The node nominated by preemption."),
       wide("Readiness Gates", "Readiness gates met of all readiness gates.")},
      pod_cells};
  printers["/events"] = {
      {plain("Last Seen", "string", "When the event was last seen."),
       plain("Type", "string", "Normal or Warning."),
       plain("Reason", "string", "Why the event was recorded, in one word."),
       plain("Object", "string", "The object the event is about."),
       wide("Subobject", "The part of the object, such as a container."),
       wide("Source", "The component that recorded the event."), plain("Message", "string", "What happened."),
       wide("First Seen", "When the event was first seen."), wide("Count", "How often the event occurred."),
       wide("Name", "The event's name.")},
      event_cells};
  printers["/nodes"] = {{name_column(), plain("Status", "string", "Whether the node is Ready."),
                         plain("Roles", "string", "The node's roles, from its node-role labels."),
                         age_column(), plain("Version", "string", "The kubelet's version."),
                         wide("Internal-IP", "The node's internal address."),
                         wide("External-IP", "The node's external address."),
                         wide("OS-Image", "The node's operating system image."),
                         wide("Kernel-Version", "The node's kernel version."),
                         wide("Container-Runtime", "The node's container runtime and version.")},
                        node_cells};
  printers["apps/deployments"] = {
      {name_column(), plain("Ready", "string", "Ready replicas of desired replicas."),
       plain("Up-to-date", "integer", "Replicas updated to the latest pod template."),
       plain("Available", "integer", "Replicas available to serve."), age_column(),
       wide("Containers", "The pod template's containers."), wide("Images", "The pod template's images."),
       wide("Selector", "The deployment's pod selector.")},
      deployment_cells};
  printers["coordination.k8s.io/leases"] = {
      {name_column(), plain("Holder", "string", "The lease's holder identity."), age_column()}, lease_cells};
  printers["/namespaces"] = {
      {name_column(), plain("Status", "string", "The namespace's phase."), age_column()}, namespace_cells};
  return printers;
}

}  // namespace

const BuiltinPrinter* builtin_printer(const std::string& group, const std::string& plural) {
  static const std::map<std::string, BuiltinPrinter> printers = make_printers();
  auto it = printers.find(group + "/" + plural);
  return it == printers.end() ? nullptr : &it->second;
}

}  // namespace eslease::kubeemu
