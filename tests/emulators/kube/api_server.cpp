#include "emulators/kube/api_server.h"

#include <algorithm>

#include "common/text.h"
#include "emulators/kube/discovery.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/schema/schema.h"

namespace eslease::kubeemu {

using nlohmann::json;

void send_json(http::ServerResponse& response, int code, const json& body,
               const std::vector<std::string>& warnings) {
  http::Headers headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}};
  for (const auto& warning : warnings) headers.emplace_back("Warning", "299 - " + json(warning).dump());
  response.send(code, std::move(headers), body.dump(-1, ' ', false, json::error_handler_t::replace));
}

void send_error(http::ServerResponse& response, const ApiError& error) {
  http::Headers headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}};
  if (error.retry_after_seconds)
    headers.emplace_back("Retry-After", std::to_string(*error.retry_after_seconds));
  response.send(error.code, std::move(headers), error.body().dump());
}

ApiServer::ApiServer(ApiServerOptions options, Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      store_(options_.watch_history),
      server_address_(options_.server_address) {
  const std::string now = format_rfc3339_seconds(clock_.now());
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    json ns = {{"apiVersion", "v1"},
               {"kind", "Namespace"},
               {"metadata",
                {{"name", name},
                 {"uid", random_uid()},
                 {"creationTimestamp", now},
                 {"labels", {{"kubernetes.io/metadata.name", name}}}}},
               {"spec", {{"finalizers", {"kubernetes"}}}},
               {"status", {{"phase", "Active"}}}};
    store_.put("/namespaces", "", name, std::move(ns));
  }
  if (options_.simulate_kubelet) {
    // Nodes register before anything is scheduled, as kubelets do when a cluster comes up.
    const auto names = simulated_node_names(options_.kubelet);
    for (std::size_t i = 0; i < names.size(); ++i) {
      store_.put("/nodes", "", names[i], make_node(names[i], static_cast<int>(i + 1), clock_.now()));
    }
    kubelet_ = std::make_unique<SimulatedKubelet>(options_.kubelet, mutex_, store_, clock_);
    kubelet_->start();
  }
  garbage_collector_ = std::make_unique<GarbageCollector>(mutex_, store_, registry_,
                                                          static_cast<GarbageCollectorTarget&>(*this));
  garbage_collector_->start();
}

ApiServer::~ApiServer() {
  // Before the members they use go: their threads may be waiting for mutex_.
  if (garbage_collector_) garbage_collector_->stop();
  if (kubelet_) kubelet_->stop();
}

void ApiServer::shutdown() {
  shutting_down_ = true;
  if (garbage_collector_) garbage_collector_->stop();
  if (kubelet_) kubelet_->stop();  // without mutex_: the kubelet thread may need it to finish
  std::lock_guard lock(mutex_);
  store_.close_all_watches();
}

void ApiServer::set_server_address(std::string address) {
  std::lock_guard lock(mutex_);
  server_address_ = std::move(address);
}

namespace {

std::optional<std::vector<std::string>> split_path(const std::string& path) {
  std::vector<std::string> segments;
  std::size_t start = 1;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    const std::string raw =
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!raw.empty()) {
      auto decoded = percent_decode(raw);
      if (!decoded) return std::nullopt;
      segments.push_back(*decoded);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return segments;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

void ApiServer::handle(const http::ServerRequest& request, http::ServerResponse& response) {
  try {
    if (starts_with(request.path, "/_emulator/")) return handle_admin(request, response);
    if (options_.bearer_token) {
      const auto header = request.header("Authorization");
      if (!header || *header != "Bearer " + *options_.bearer_token)
        return send_error(response, unauthorized());
    }
    if (request.body.size() > options_.max_body_bytes) {
      return send_error(response, request_entity_too_large(options_.max_body_bytes));
    }
    auto segments = split_path(request.path);
    if (!segments) return send_error(response, bad_request("malformed escape in request path"));
    if (handle_discovery(*segments, request, response)) return;

    Call call;
    if (auto error = parse_call(*segments, request, call)) return send_error(response, *error);
    counters_.count(call.verb, call.type->plural);
    // Also by plural.group, as kubectl names resources: leases.eslease.io and
    // leases.coordination.k8s.io share a plural.
    if (!call.type->group.empty()) counters_.count(call.verb, call.type->plural + "." + call.type->group);
    bool client_left = false;  // during an injected delay: a write served after it goes unanswered
    const std::string resource =
        call.type->group.empty() ? call.type->plural : call.type->plural + "." + call.type->group;
    if (auto fault = faults_.take(call.verb, resource)) {
      if (fault->latency.count() > 0) client_left = response.wait_closing(fault->latency);
      if (fault->drop) return response.drop_connection();
      if (fault->status == 429) return send_error(response, too_many_requests(fault->retry_after_seconds));
      if (fault->status == 503)
        return send_error(response,
                          service_unavailable("the server is currently unable to handle the request"));
      if (fault->status >= 500) return send_error(response, internal_error("injected fault"));
      if (fault->status != 0) {
        ApiError error;
        error.code = fault->status;
        error.message = "injected fault";
        return send_error(response, error);
      }
    }
    auto serve = [&](http::ServerResponse& out) {
      if (call.subresource == "scale" && call.verb != "watch") return scale(call, out);
      if (call.verb == "get") return get(call, out);
      if (call.verb == "list") return list(call, out);
      if (call.verb == "watch") return watch(call, out);
      if (call.verb == "create") return create(call, out);
      if (call.verb == "update") return update(call, out);
      if (call.verb == "patch") return patch(call, out);
      if (call.verb == "delete") return remove(call, out);
      if (call.verb == "deletecollection") return remove_collection(call, out);
      send_error(out, path_not_found());
    };
    if (!FaultInjector::is_write(call.verb)) return serve(response);
    faults_.answer_write(call.verb, resource, client_left, response, serve);
  } catch (const std::exception& e) {
    send_error(response, internal_error(e.what()));
  }
}

std::optional<ApiError> ApiServer::parse_call(const std::vector<std::string>& segments,
                                              const http::ServerRequest& request, Call& call) {
  std::string group;
  std::size_t at;
  if (segments.size() >= 3 && segments[0] == "api") {
    call.version = segments[1];
    at = 2;
  } else if (segments.size() >= 4 && segments[0] == "apis") {
    group = segments[1];
    call.version = segments[2];
    at = 3;
  } else {
    return path_not_found();
  }
  std::vector<std::string> rest(segments.begin() + at, segments.end());
  std::lock_guard lock(mutex_);
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    auto inner = registry_.find(group, call.version, rest[2]);
    if (inner && inner->namespaced) {
      call.ns = rest[1];
      rest.erase(rest.begin(), rest.begin() + 2);
    }
  }
  if (rest.empty() || rest.size() > 3) return path_not_found();
  call.type = registry_.find(group, call.version, rest[0]);
  if (!call.type) return path_not_found();
  if (!call.type->namespaced && !call.ns.empty()) return path_not_found();
  if (rest.size() >= 2) call.name = rest[1];
  if (rest.size() == 3) {
    call.subresource = rest[2];
    const bool status = call.subresource == "status" && call.type->has_status_subresource(call.version);
    const bool scale = call.subresource == "scale" && has_scale_subresource(*call.type);
    if (!status && !scale) return path_not_found();
  }
  for (auto& [key, value] : http::parse_query(request.query)) call.query[key] = value;
  call.request = &request;
  const auto accept = request.header("Accept");
  call.wants_table = accept && accept->find("as=Table") != std::string::npos;
  const bool watch = call.flag("watch");
  const std::string& method = request.method;
  const bool item = !call.name.empty();
  if (call.type->namespaced && call.ns.empty() && item) return path_not_found();
  if (method == "GET") {
    call.verb = watch ? "watch" : (item ? "get" : "list");
    if (watch && item) {
      call.query["fieldSelector"] = "metadata.name=" + call.name;
      call.name.clear();
    }
  } else if (method == "POST" && !item) {
    call.verb = "create";
  } else if (method == "PUT" && item) {
    call.verb = "update";
  } else if (method == "PATCH" && item) {
    call.verb = "patch";
  } else if (method == "DELETE" && item && call.subresource.empty()) {
    call.verb = "delete";
  } else if (method == "DELETE" && !item) {
    call.verb = "deletecollection";
  } else {
    const std::string action = method == "POST" ? "create" : to_lower(method);
    return method_not_supported(group, call.type->plural, action);
  }
  if ((call.verb == "create" || call.verb == "deletecollection") && call.type->namespaced &&
      call.ns.empty()) {
    return path_not_found();
  }
  return std::nullopt;
}

std::vector<json> ApiServer::crds_serving(const std::string& group, const std::string& version) const {
  std::vector<json> out;
  for (const auto& crd : store_.list("apiextensions.k8s.io/customresourcedefinitions", "")) {
    const json& spec = (*crd)["spec"];
    if (spec.value("group", "") != group) continue;
    for (const auto& v : spec.value("versions", json::array())) {
      if (v.value("name", "") == version && v.value("served", false)) {
        out.push_back(*crd);
        break;
      }
    }
  }
  return out;
}

json ApiServer::openapi_document(const std::string& group, const std::string& version) {
  auto crds = crds_serving(group, version);
  if (!crds.empty()) return schema::openapi_v3_for_group_version(group, version, crds);
  return builtin_openapi_v3(registry_, group, version);
}

bool ApiServer::handle_discovery(const std::vector<std::string>& segments, const http::ServerRequest& request,
                                 http::ServerResponse& response) {
  if (request.method != "GET") return false;
  const std::size_t n = segments.size();
  auto path_is = [&](std::initializer_list<const char*> parts) {
    if (parts.size() != n) return false;
    std::size_t i = 0;
    for (const char* p : parts) {
      if (segments[i++] != p) return false;
    }
    return true;
  };
  if (path_is({"healthz"}) || path_is({"livez"}) || path_is({"readyz"})) {
    response.send(200, {{"Content-Type", "text/plain; charset=utf-8"}}, "ok");
    return true;
  }
  if (path_is({"version"})) return send_json(response, 200, version_info()), true;
  std::lock_guard lock(mutex_);
  if (path_is({"api"})) return send_json(response, 200, api_versions(server_address_)), true;
  if (path_is({"apis"})) return send_json(response, 200, api_group_list(registry_)), true;
  if (n == 2 && segments[0] == "api") {
    json list = api_resource_list(registry_, "", segments[1]);
    if (list.is_null()) return send_error(response, path_not_found()), true;
    return send_json(response, 200, list), true;
  }
  if (n == 2 && segments[0] == "apis") {
    json group = api_group(registry_, segments[1]);
    if (group.is_null()) return send_error(response, path_not_found()), true;
    return send_json(response, 200, group), true;
  }
  if (n == 3 && segments[0] == "apis") {
    json list = api_resource_list(registry_, segments[1], segments[2]);
    if (list.is_null()) return send_error(response, path_not_found()), true;
    return send_json(response, 200, list), true;
  }
  if (n >= 1 && segments[0] == "openapi") {
    if (path_is({"openapi", "v3"})) {
      json paths = json::object();
      for (const auto& [group, versions] : registry_.groups()) {
        for (const auto& version : versions) {
          const std::string key = openapi_path_key(group, version);
          paths[key] = {
              {"serverRelativeURL", openapi_server_relative_url(key, openapi_document(group, version))}};
        }
      }
      return send_json(response, 200, {{"paths", paths}}), true;
    }
    const bool core = n == 4 && segments[1] == "v3" && segments[2] == "api";
    const bool named = n == 5 && segments[1] == "v3" && segments[2] == "apis";
    if (core || named) {
      const std::string group = core ? "" : segments[3];
      const std::string version = segments[n - 1];
      if (api_resource_list(registry_, group, version).is_null())
        return send_error(response, path_not_found()), true;
      send_json(response, 200, openapi_document(group, version));
      return true;
    }
    send_error(response, path_not_found());
    return true;
  }
  return false;
}

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
                      {"watches_open", watches},
                      {"kube_write_applied_unanswered", faults_.applied_unanswered()}});
  }
  if (path == "/_emulator/faults" && request.method == "POST") {
    json body = json::parse(request.body, nullptr, false);
    auto fault = FaultInjector::parse(body);
    if (!fault) return send_error(response, bad_request(fault.error().message));
    faults_.add(*fault);
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
  if (starts_with(path, "/_emulator/kubelet/")) {
    auto segments = split_path(path);
    if (!segments) return send_error(response, bad_request("malformed escape in request path"));
    return handle_kubelet_admin(*segments, request, response);
  }
  send_error(response, path_not_found());
}

namespace {

ApiError admin_conflict(const std::string& resource, const std::string& name, const std::string& why) {
  return conflict("", resource, name, why);
}

// Only the listed keys, so a typo ("redy") is a 400 rather than a silent no-op.
std::optional<std::string> unknown_key(const json& body, std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : body.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) return key;
  }
  return std::nullopt;
}

}  // namespace

void ApiServer::handle_kubelet_admin(const std::vector<std::string>& segments,
                                     const http::ServerRequest& request, http::ServerResponse& response) {
  // segments: _emulator kubelet pods <ns> <name> | _emulator kubelet nodes <name>
  const bool pod = segments.size() == 5 && segments[2] == "pods";
  const bool node = segments.size() == 4 && segments[2] == "nodes";
  if (!pod && !node) return send_error(response, path_not_found());
  if (request.method != "POST") {
    ApiError error;
    error.code = 405;
    error.reason = "MethodNotAllowed";
    error.message = "only POST is supported on " + request.path;
    return send_error(response, error);
  }
  const std::string& name = segments.back();
  if (!kubelet_) {
    return send_error(response, admin_conflict(pod ? "pods" : "nodes", name,
                                               "the kubelet is not simulated: start kube-emulator with "
                                               "--simulate-kubelet"));
  }
  const json body = json::parse(request.body, nullptr, false);
  if (!body.is_object()) {
    return send_error(
        response, bad_request(pod ? R"(body must be a JSON object: {"ready": false} or {"phase": "Failed"})"
                                  : R"(body must be a JSON object: {"ready": "False"})"));
  }
  const WallTime now = clock_.now();
  if (node) {
    if (auto key = unknown_key(body, {"ready"}))
      return send_error(response, bad_request("unknown field \"" + *key + "\""));
    const json& ready = body.contains("ready") ? body["ready"] : json();
    std::string status;
    if (ready.is_boolean()) {
      status = ready.get<bool>() ? "True" : "False";
    } else if (ready == "True" || ready == "False" || ready == "Unknown") {
      status = ready.get<std::string>();
    } else {
      return send_error(response, bad_request(R"("ready" must be "True", "False" or "Unknown")"));
    }
    std::lock_guard lock(mutex_);
    auto current = store_.get("/nodes", "", name);
    if (!current) return send_error(response, not_found("", "nodes", name));
    json next = *current;
    set_node_ready(next, status, now);
    if (next == *current) return send_json(response, 200, *current);
    return send_json(response, 200, *store_.put("/nodes", "", name, std::move(next)));
  }
  const std::string& ns = segments[3];
  if (auto key = unknown_key(body, {"ready", "phase", "reason", "message", "exitCode"})) {
    return send_error(response, bad_request("unknown field \"" + *key + "\""));
  }
  const bool has_ready = body.contains("ready");
  const bool has_phase = body.contains("phase");
  if (has_ready == has_phase) {
    return send_error(
        response,
        bad_request(R"(give exactly one of "ready" (true or false) and "phase" ("Succeeded" or "Failed"))"));
  }
  if (has_ready && !body["ready"].is_boolean())
    return send_error(response, bad_request(R"("ready" must be true or false)"));
  if (has_phase && body["phase"] != "Succeeded" && body["phase"] != "Failed") {
    return send_error(response, bad_request(R"("phase" must be "Succeeded" or "Failed")"));
  }
  for (const char* key : {"reason", "message"}) {
    if (body.contains(key) && (!has_phase || !body[key].is_string())) {
      return send_error(response,
                        bad_request(std::string("\"") + key + "\" must be a string, next to \"phase\""));
    }
  }
  std::optional<int> exit_code;
  if (body.contains("exitCode")) {
    const json& code = body["exitCode"];
    if (!has_phase || !code.is_number_integer() || code.get<std::int64_t>() < 0 ||
        code.get<std::int64_t>() > 255) {
      return send_error(response,
                        bad_request(R"("exitCode" must be an integer from 0 to 255, next to "phase")"));
    }
    exit_code = code.get<int>();
  }
  std::lock_guard lock(mutex_);
  auto current = store_.get("/pods", ns, name);
  if (!current) return send_error(response, not_found("", "pods", name));
  json next = *current;
  Status changed;
  if (has_ready) {
    // Ready also needs the pod's node to be Ready (pods on other nodes have no simulated node).
    const std::string node_name = next.contains("spec") && next["spec"].is_object() &&
                                          next["spec"].contains("nodeName") &&
                                          next["spec"]["nodeName"].is_string()
                                      ? next["spec"]["nodeName"].get<std::string>()
                                      : "";
    auto node_object = store_.get("/nodes", "", node_name);
    const auto& simulated = kubelet_->nodes();
    const bool node_ready = std::find(simulated.begin(), simulated.end(), node_name) == simulated.end() ||
                            (node_object && node_ready_status(*node_object) == "True");
    changed = set_pod_ready(next, body["ready"].get<bool>(), node_ready, now);
  } else {
    changed = end_pod(next, body["phase"].get<std::string>(), body.value("reason", ""),
                      body.value("message", ""), exit_code, now);
  }
  if (!changed) return send_error(response, admin_conflict("pods", name, changed.error().message));
  if (next == *current) return send_json(response, 200, *current);
  send_json(response, 200, *store_.put("/pods", ns, name, std::move(next)));
}

json ApiServer::present(const Call& call, const json& stored) const {
  if (!call.type->custom) return stored;
  json object = stored;
  object["apiVersion"] = call.type->group_version(call.version);
  return object;
}

}  // namespace eslease::kubeemu
