// The admin endpoints under /_emulator/ (no auth, never faulted): stats, faults, watch
// drops, compaction, and the simulated kubelet's pod and node changes.
#include <algorithm>

#include "emulators/kube/api_server.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

// Only the listed keys, so a typo ("redy") is a 400 rather than a silent no-op.
std::optional<std::string> unknown_key(const json& body, std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : body.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) return key;
  }
  return std::nullopt;
}

// The change a /_emulator/kubelet/nodes/{name} body asks for: exactly one of ready, network
// and power.
std::variant<NodeChange, ApiError> wanted_node_change(const json& body) {
  if (auto key = unknown_key(body, {"ready", "network", "power"})) {
    return bad_request("unknown field \"" + *key + "\"");
  }
  if (body.size() != 1) {
    return bad_request(R"(give exactly one of "ready" ("True", "False" or "Unknown"), "network" )"
                       R"(("partitioned" or "connected") and "power" ("off" or "on"))");
  }
  const auto& [field, value] = *body.items().begin();
  if (field == "ready") {
    if (value.is_boolean()) return NodeChange{field, value.get<bool>() ? "True" : "False"};
    if (value == "True" || value == "False" || value == "Unknown")
      return NodeChange{field, value.get<std::string>()};
    return bad_request(R"("ready" must be "True", "False" or "Unknown")");
  }
  if (field == "network") {
    if (value == "partitioned" || value == "connected") return NodeChange{field, value.get<std::string>()};
    return bad_request(R"("network" must be "partitioned" or "connected")");
  }
  if (value == "off" || value == "on") return NodeChange{field, value.get<std::string>()};
  return bad_request(R"("power" must be "off" or "on")");
}

// What is wrong with a /_emulator/kubelet/pods/{ns}/{name} body: exactly one of ready and
// phase, each of its type, and reason, message and exitCode only beside a phase.
std::optional<ApiError> pod_change_error(const json& body) {
  if (auto key = unknown_key(body, {"ready", "phase", "reason", "message", "exitCode"})) {
    return bad_request("unknown field \"" + *key + "\"");
  }
  const bool has_ready = body.contains("ready");
  const bool has_phase = body.contains("phase");
  if (has_ready == has_phase) {
    return bad_request(
        R"(give exactly one of "ready" (true or false) and "phase" ("Succeeded" or "Failed"))");
  }
  if (has_ready && !body["ready"].is_boolean()) return bad_request(R"("ready" must be true or false)");
  if (has_phase && body["phase"] != "Succeeded" && body["phase"] != "Failed") {
    return bad_request(R"("phase" must be "Succeeded" or "Failed")");
  }
  for (const char* key : {"reason", "message"}) {
    if (body.contains(key) && (!has_phase || !body[key].is_string())) {
      return bad_request(std::string("\"") + key + "\" must be a string, next to \"phase\"");
    }
  }
  if (body.contains("exitCode")) {
    const json& code = body["exitCode"];
    if (!has_phase || !code.is_number_integer() || code.get<std::int64_t>() < 0 ||
        code.get<std::int64_t>() > 255) {
      return bad_request(R"("exitCode" must be an integer from 0 to 255, next to "phase")");
    }
  }
  return std::nullopt;
}

std::string node_name_of(const json& pod) {
  return pod.contains("spec") && pod["spec"].is_object() && pod["spec"].contains("nodeName") &&
                 pod["spec"]["nodeName"].is_string()
             ? pod["spec"]["nodeName"].get<std::string>()
             : "";
}

}  // namespace

void ApiServer::handle_admin(const http::ServerRequest& request, http::ServerResponse& response) {
  const std::string& path = request.path;
  if (path == "/_emulator/stats" && request.method == "GET") {
    std::size_t watches;
    {
      std::lock_guard lock(mutex_);
      watches = store_.open_watches();
    }
    return send_json(response, 200,
                     {{"requests", counters_.snapshot()},
                      {"subresource_requests", subresource_counters_.snapshot()},
                      {"watches_open", watches},
                      {"kube_write_applied_unanswered", faults_.applied_unanswered()}});
  }
  if (path == "/_emulator/faults" && request.method == "POST") {
    json body = json::parse(request.body, nullptr, false);
    auto fault = FaultInjector::parse(body);
    if (auto* error = std::get_if<ApiError>(&fault)) return send_error(response, *error);
    faults_.add(std::get<Fault>(fault));
    return send_json(response, 200, {{"acknowledged", true}});
  }
  if (path == "/_emulator/faults" && request.method == "DELETE") {
    faults_.clear();
    return send_json(response, 200, {{"acknowledged", true}});
  }
  if (path == "/_emulator/watches/drop" && request.method == "POST") {
    std::size_t dropped;
    {
      std::lock_guard lock(mutex_);
      dropped = store_.open_watches();
      store_.close_all_watches();
    }
    return send_json(response, 200, {{"dropped", dropped}});
  }
  if (path == "/_emulator/compact" && request.method == "POST") {
    std::lock_guard lock(mutex_);
    store_.compact();
    return send_json(response, 200, {{"resourceVersion", std::to_string(store_.current_rv())}});
  }
  if (path.starts_with("/_emulator/kubelet/")) {
    auto segments = split_path(path);
    if (!segments) return send_error(response, bad_request("malformed escape in request path"));
    return handle_kubelet_admin(*segments, request, response);
  }
  send_error(response, path_not_found());
}

void ApiServer::handle_kubelet_admin(const std::vector<std::string>& segments,
                                     const http::ServerRequest& request, http::ServerResponse& response) {
  // segments: _emulator kubelet pods <ns> <name> | _emulator kubelet nodes <name>
  const bool pod = segments.size() == 5 && segments[2] == "pods";
  const bool node = segments.size() == 4 && segments[2] == "nodes";
  if (!pod && !node) return send_error(response, path_not_found());
  if (request.method != "POST") {
    return send_error(response,
                      make_api_error(405, "MethodNotAllowed", "only POST is supported on " + request.path));
  }
  const std::string& name = segments.back();
  if (!kubelet_) {
    return send_error(response,
                      conflict("", pod ? "pods" : "nodes", name,
                               "the kubelet is not simulated: start kube-emulator with --simulate-kubelet"));
  }
  const json body = json::parse(request.body, nullptr, false);
  if (!body.is_object()) {
    return send_error(
        response, bad_request(pod ? R"(body must be a JSON object: {"ready": false} or {"phase": "Failed"})"
                                  : R"(body must be a JSON object: {"ready": "False"})"));
  }
  std::variant<json, ApiError> changed =
      node ? change_node_as_kubelet(name, body) : change_pod_as_kubelet(segments[3], name, body);
  if (auto* error = std::get_if<ApiError>(&changed)) return send_error(response, *error);
  send_json(response, 200, std::get<json>(changed));
}

std::variant<json, ApiError> ApiServer::change_node_as_kubelet(const std::string& name, const json& body) {
  auto change = wanted_node_change(body);
  if (auto* error = std::get_if<ApiError>(&change)) return *error;
  std::lock_guard lock(mutex_);
  if (!store_.get("/nodes", "", name)) return not_found("", "nodes", name);
  return kubelet_->change_node(name, std::get<NodeChange>(change));
}

std::variant<json, ApiError> ApiServer::change_pod_as_kubelet(const std::string& ns, const std::string& name,
                                                              const json& body) {
  const WallTime now = clock_.now();
  if (auto error = pod_change_error(body)) return *error;
  std::optional<int> exit_code;
  if (body.contains("exitCode")) exit_code = body["exitCode"].get<int>();
  std::lock_guard lock(mutex_);
  auto current = store_.get("/pods", ns, name);
  if (!current) return not_found("", "pods", name);
  json next = *current;
  const std::string node_name = node_name_of(next);
  const auto& simulated = kubelet_->nodes();
  const bool on_simulated = std::find(simulated.begin(), simulated.end(), node_name) != simulated.end();
  if (on_simulated && !kubelet_->kubelet_up(node_name)) {
    return conflict(
        "", "pods", name,
        "node " + node_name + " is partitioned or powered off: its kubelet cannot report the change");
  }
  std::optional<ApiError> refused;
  if (body.contains("ready")) {
    // Ready also needs the pod's node to be Ready (pods on other nodes have no simulated node).
    auto node_object = store_.get("/nodes", "", node_name);
    const bool node_ready = !on_simulated || (node_object && node_ready_status(*node_object) == "True");
    refused = set_pod_ready(next, body["ready"].get<bool>(), node_ready, now);
  } else {
    refused = end_pod(next, body["phase"].get<std::string>(), body.value("reason", ""),
                      body.value("message", ""), exit_code, now);
  }
  if (refused) return *refused;
  if (next == *current) return *current;
  return *store_.put("/pods", ns, name, std::move(next));
}

}  // namespace eslease::kubeemu
