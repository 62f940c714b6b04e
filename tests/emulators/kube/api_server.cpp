#include "emulators/kube/api_server.h"

#include <algorithm>

#include "common/text.h"
#include "emulators/kube/discovery.h"
#include "emulators/kube/object_meta.h"
#include "emulators/kube/schema/schema.h"

namespace eslease::kubeemu {

using nlohmann::json;

void send_json_text(http::ServerResponse& response, int code, std::string text,
                    const std::vector<std::string>& warnings) {
  http::Headers headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}};
  for (const auto& warning : warnings) headers.emplace_back("Warning", "299 - " + json(warning).dump());
  response.send(code, std::move(headers), std::move(text));
}

std::string to_text(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void send_json(http::ServerResponse& response, int code, const json& body,
               const std::vector<std::string>& warnings) {
  send_json_text(response, code, to_text(body), warnings);
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

void ApiServer::handle(const http::ServerRequest& request, http::ServerResponse& response) {
  try {
    if (request.path.starts_with("/_emulator/")) return handle_admin(request, response);
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
    if (!call.subresource.empty()) subresource_counters_.count(call.verb, resource + "/" + call.subresource);
    if (auto fault = faults_.take(call.verb, resource)) {
      if (fault->latency.count() > 0) client_left = response.wait_closing(fault->latency);
      if (fault->drop) return response.drop_connection();
      if (fault->status == 429) return send_error(response, too_many_requests(fault->retry_after_seconds));
      if (fault->status == 503)
        return send_error(response,
                          service_unavailable("the server is currently unable to handle the request"));
      if (fault->status >= 500) return send_error(response, internal_error("injected fault"));
      if (fault->status != 0)
        return send_error(response, make_api_error(fault->status, "", "injected fault"));
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

namespace {

// The verb of a resource request, as the apiserver's RequestInfoFactory names it; "" for a
// method the path does not take.
std::string verb_of(const std::string& method, bool item, bool watch, bool subresource) {
  if (method == "GET") return watch ? "watch" : (item ? "get" : "list");
  if (method == "POST" && !item) return "create";
  if (method == "PUT" && item) return "update";
  if (method == "PATCH" && item) return "patch";
  if (method == "DELETE" && item && !subresource) return "delete";
  if (method == "DELETE" && !item) return "deletecollection";
  return "";
}

}  // namespace

std::optional<ApiError> ApiServer::resolve_path(const std::vector<std::string>& segments, Call& call,
                                                std::string& group) {
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
  std::vector<std::string> rest(segments.begin() + static_cast<std::ptrdiff_t>(at), segments.end());
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
  return std::nullopt;
}

std::optional<ApiError> ApiServer::parse_call(const std::vector<std::string>& segments,
                                              const http::ServerRequest& request, Call& call) {
  std::string group;
  if (auto error = resolve_path(segments, call, group)) return error;
  for (auto& [key, value] : http::parse_query(request.query)) call.query[key] = value;
  call.request = &request;
  const auto accept = request.header("Accept");
  call.wants_table = accept && accept->find("as=Table") != std::string::npos;
  const std::string& method = request.method;
  const bool item = !call.name.empty();
  if (call.type->namespaced && call.ns.empty() && item) return path_not_found();
  call.verb = verb_of(method, item, call.flag("watch"), !call.subresource.empty());
  if (call.verb.empty()) {
    const std::string action = method == "POST" ? "create" : to_lower(method);
    return method_not_supported(group, call.type->plural, action);
  }
  if (call.verb == "watch" && item) {
    call.query["fieldSelector"] = "metadata.name=" + call.name;
    call.name.clear();
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
      const std::string& version = segments[n - 1];
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

json ApiServer::present(const Call& call, const json& stored) const {
  json relabelled;
  if (&shown(call, stored, relabelled) == &stored) return stored;
  return relabelled;
}

const json& ApiServer::shown(const Call& call, const json& stored, json& relabelled) const {
  if (!call.type->custom) return stored;
  const std::string version = call.type->group_version(call.version);
  if (const auto it = stored.find("apiVersion"); it != stored.end() && *it == version) return stored;
  relabelled = stored;
  relabelled["apiVersion"] = version;
  return relabelled;
}

}  // namespace eslease::kubeemu
