#include "emulators/es/api.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

#include "common/base64.h"
#include "common/text.h"
#include "emulators/es/handlers.h"
#include "emulators/es/routes.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

std::optional<std::string> find_in(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (to_lower(key) == to_lower(name)) return value;
  }
  return std::nullopt;
}

// The media type a response uses: the compatible-with form when the client asked for it.
std::string response_content_type(const ApiRequest& request) {
  for (const char* name : {"accept", "content-type"}) {
    auto value = request.header(name);
    if (!value) continue;
    auto lower = to_lower(*value);
    auto at = lower.find("compatible-with=");
    if (lower.find("application/vnd.elasticsearch+") != std::string::npos && at != std::string::npos) {
      std::string version = trim(lower.substr(at + 16, 1));
      return "application/vnd.elasticsearch+json;compatible-with=" + version;
    }
  }
  return "application/json";
}

// Path segments are split before they are decoded, so an encoded '/' stays inside its id.
std::variant<std::vector<std::string>, EsError> path_segments(const std::string& path) {
  std::vector<std::string> segments;
  std::size_t start = 1;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    std::string raw = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!raw.empty() || (slash != std::string::npos && slash + 1 < path.size())) {
      auto decoded = percent_decode(raw);
      if (!decoded) return illegal_argument("unterminated escape sequence in path [" + path + "]");
      segments.push_back(*decoded);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return segments;
}

// A path no endpoint takes (400), or a method the path does not allow (405 with Allow).
ApiResponse route_miss_reply(const ApiRequest& request, const RouteMiss& miss) {
  const std::string uri = request.path + (request.query.empty() ? "" : "?" + request.query);
  if (miss.allowed.empty()) return error_reply(no_handler(uri, request.method));
  std::string list;
  for (const auto& m : miss.allowed) list += (list.empty() ? "" : ", ") + m;
  ApiResponse response =
      error_reply(rest_error(405, "Incorrect HTTP method for uri [" + uri + "] and method [" +
                                      request.method + "], allowed: [" + list + "]"));
  std::string allow;
  for (const auto& m : miss.allowed) allow += (allow.empty() ? "" : ",") + m;
  response.headers.emplace_back("Allow", allow);
  return response;
}

ApiResponse dropped_connection() {
  ApiResponse dropped;
  dropped.drop = true;
  return dropped;
}

ApiResponse dispatch(Endpoint endpoint, Call& call) {
  switch (endpoint) {
    case Endpoint::kInfo:
      return handle_info(call);
    case Endpoint::kHealth:
      return handle_cluster_health(call);
    case Endpoint::kIndexCreate:
      return handle_index_create(call);
    case Endpoint::kIndexDelete:
      return handle_index_delete(call);
    case Endpoint::kIndexExists:
      return handle_index_exists(call);
    case Endpoint::kIndexGet:
      return handle_index_get(call, false);
    case Endpoint::kMapping:
      return handle_index_get(call, true);
    case Endpoint::kPutMapping:
      return handle_put_mapping(call);
    case Endpoint::kPutSettings:
      return handle_put_settings(call);
    case Endpoint::kRefresh:
      return handle_refresh(call);
    case Endpoint::kDocIndex:
      return handle_doc_write(call, WriteKind::kIndex);
    case Endpoint::kDocCreate:
      return handle_doc_write(call, WriteKind::kCreate);
    case Endpoint::kDocGet:
      return handle_doc_get(call, false, false);
    case Endpoint::kDocHead:
      return handle_doc_get(call, true, false);
    case Endpoint::kDocSource:
      return handle_doc_get(call, call.request.method == "HEAD", true);
    case Endpoint::kDocDelete:
      return handle_doc_delete(call);
    case Endpoint::kUpdate:
      return handle_update(call);
    case Endpoint::kMget:
      return handle_mget(call);
    case Endpoint::kSearch:
      return handle_search(call);
    case Endpoint::kCount:
      return handle_count(call);
    case Endpoint::kDeleteByQuery:
      return handle_delete_by_query(call);
    case Endpoint::kBulk:
      return handle_bulk(call);
  }
  return error_reply(make_es_error(500, "illegal_state_exception", "unrouted endpoint"));
}

bool supported_content_type(const std::string& value) {
  std::string media = to_lower(trim(value.substr(0, value.find(';'))));
  return media == "application/json" || media == "application/x-ndjson" ||
         media == "application/vnd.elasticsearch+json" || media == "application/vnd.elasticsearch+x-ndjson";
}

// The body's media type, and whether the endpoint takes a body at all.
std::optional<EsError> check_body(const ApiRequest& request, bool takes_body) {
  if (request.body.empty()) return std::nullopt;
  auto type = request.header("content-type");
  if (!type) return rest_error(406, "Content-Type header is missing");
  if (!supported_content_type(*type))
    return rest_error(406, "Content-Type header [" + *type + "] is not supported");
  if (!takes_body) {
    return illegal_argument("request [" + request.method + " " + request.path +
                            "] does not support having a body");
  }
  return std::nullopt;
}

// Every query parameter is one the endpoint knows (or one every endpoint takes).
std::optional<EsError> check_params(const std::string& path, const Params& params,
                                    const std::set<std::string>& known) {
  std::vector<std::string> unknown;
  for (const auto& [name, value] : params.items()) {
    if (name == "pretty" || name == "human" || name == "error_trace") continue;
    if (name == "filter_path") return emulator_limitation("the [filter_path] parameter");
    if (!known.contains(name) && std::find(unknown.begin(), unknown.end(), name) == unknown.end()) {
      unknown.push_back(name);
    }
  }
  if (unknown.empty()) return std::nullopt;
  std::string list;
  for (const auto& u : unknown) list += (list.empty() ? "[" : ", [") + u + "]";
  return illegal_argument("request [" + path + "] contains unrecognized parameter" +
                          (unknown.size() > 1 ? "s" : "") + ": " + list);
}

}  // namespace

std::optional<std::string> ApiRequest::header(std::string_view name) const {
  return find_in(headers, name);
}
std::optional<std::string> ApiResponse::header(std::string_view name) const {
  return find_in(headers, name);
}

EsApi::EsApi(ApiOptions options, Clock& clock) : options_(std::move(options)), clock_(clock), store_(clock) {}

ApiResponse EsApi::handle_admin(const ApiRequest& request, const std::string& path) {
  const auto params = Params(http_query_pairs(request.query));
  if (path == "/_emulator/stats" && request.method == "GET") return json_reply(200, stats_.to_json());
  if (path == "/_emulator/stats/reset" && request.method == "POST") {
    stats_.reset();
    return json_reply(200, {{"acknowledged", true}});
  }
  if (path == "/_emulator/faults") {
    if (request.method == "GET") return json_reply(200, faults_.to_json());
    if (request.method == "DELETE") {
      faults_.clear();
      return json_reply(200, {{"acknowledged", true}});
    }
    if (request.method == "POST") {
      auto body = parse_body(request.body.empty() ? "{}" : request.body, false);
      if (auto* err = std::get_if<EsError>(&body)) return error_reply(*err);
      auto rule = parse_fault_rule(std::get<json>(body));
      if (auto* err = std::get_if<EsError>(&rule)) return error_reply(*err);
      faults_.add(std::get<FaultRule>(rule));
      return json_reply(200, {{"acknowledged", true}, {"rule", std::get<FaultRule>(rule).to_json()}});
    }
  }
  if (options_.upstream && (path == "/_emulator/bump_primary_term" || path == "/_emulator/snapshot" ||
                            path == "/_emulator/restore")) {
    return error_reply(illegal_argument("[" + path + "] needs the emulator's own store; the fault proxy " +
                                        "cannot reach into a real engine's shards"));
  }
  if (path == "/_emulator/bump_primary_term" && request.method == "POST") {
    auto index = params.get("index");
    if (!index || index->empty()) return error_reply(illegal_argument("missing parameter [index]"));
    auto term = store_.bump_primary_term(*index);
    if (!term) return error_reply(index_not_found(*index));
    return json_reply(200, {{"index", *index}, {"primary_term", *term}});
  }
  if (path == "/_emulator/snapshot" && request.method == "POST") {
    auto index = params.get("index");
    auto snapshot = params.get("snapshot");
    if (!index || index->empty()) return error_reply(illegal_argument("missing parameter [index]"));
    if (!snapshot || snapshot->empty()) return error_reply(illegal_argument("missing parameter [snapshot]"));
    if (!store_.snapshot(*index, *snapshot)) return error_reply(index_not_found(*index));
    return json_reply(200, {{"snapshot", *snapshot}, {"index", *index}});
  }
  if (path == "/_emulator/restore" && request.method == "POST") {
    auto snapshot = params.get("snapshot");
    if (!snapshot || snapshot->empty()) return error_reply(illegal_argument("missing parameter [snapshot]"));
    auto restored = store_.restore(*snapshot);
    if (!restored) {
      return error_reply(
          make_es_error(404, "snapshot_missing_exception", "[emulator:" + *snapshot + "] is missing"));
    }
    return json_reply(200, {{"snapshot", *snapshot},
                            {"index", restored->name},
                            {"uuid", restored->uuid},
                            {"primary_term", restored->primary_term},
                            {"next_seq_no", restored->next_seq_no}});
  }
  return error_reply(no_handler(path, request.method));
}

std::optional<ApiResponse> EsApi::check_auth(const ApiRequest& request) {
  if (!options_.basic_auth && !options_.api_key) return std::nullopt;
  const std::string uri = request.path + (request.query.empty() ? "" : "?" + request.query);
  auto header = request.header("authorization");
  std::string reason = "missing authentication credentials for REST request [" + uri + "]";
  if (header) {
    auto space = header->find(' ');
    std::string scheme = to_lower(header->substr(0, space));
    std::string credentials = space == std::string::npos ? "" : trim(header->substr(space + 1));
    auto decoded = base64_decode(credentials);
    if (scheme == "basic" && options_.basic_auth) {
      auto colon = decoded ? decoded->find(':') : std::string::npos;
      if (colon != std::string::npos && decoded->substr(0, colon) == options_.basic_auth->first &&
          decoded->substr(colon + 1) == options_.basic_auth->second) {
        return std::nullopt;
      }
      std::string user = colon == std::string::npos ? "" : decoded->substr(0, colon);
      reason = "unable to authenticate user [" + user + "] for REST request [" + uri + "]";
    } else if (scheme == "apikey" && options_.api_key) {
      if (decoded && *decoded == *options_.api_key) return std::nullopt;
      reason =
          "unable to authenticate with provided credentials and anonymous access is not allowed for this "
          "request";
    } else if (scheme == "basic" || scheme == "apikey" || scheme == "bearer") {
      reason =
          "unable to authenticate with provided credentials and anonymous access is not allowed for this "
          "request";
    }
  }
  const json challenges = {"Basic realm=\"security\", charset=\"UTF-8\"", "Bearer realm=\"security\"",
                           "ApiKey"};
  EsError e =
      make_es_error(401, "security_exception", reason, {{"header", {{"WWW-Authenticate", challenges}}}});
  ApiResponse response = error_reply(e);
  for (const auto& c : challenges) response.headers.emplace_back("WWW-Authenticate", c.get<std::string>());
  return response;
}

ApiResponse EsApi::handle(const ApiRequest& request, const Sleeper& sleep) {
  const bool proxy = static_cast<bool>(options_.upstream);
  const std::string content_type = response_content_type(request);
  auto finish = [&](ApiResponse response) {
    // Through the proxy the engine's own headers pass unchanged.
    if (!proxy) response.headers.emplace_back("X-elastic-product", "Elasticsearch");
    if (!response.header("content-type")) response.headers.emplace_back("content-type", content_type);
    if (request.method == "HEAD") response.body.clear();
    return response;
  };

  if (request.path == "/_emulator" || request.path.rfind("/_emulator/", 0) == 0) {
    return finish(handle_admin(request, request.path));
  }
  return finish(proxy ? forward(request, sleep) : emulate(request, sleep));
}

namespace {

// The name stats and fault rules use for a routed request.
std::string operation(const Route& r, const ApiRequest& request) {
  if (r.endpoint == Endpoint::kDocIndex && !r.id.empty()) {
    auto op_type = Params(http_query_pairs(request.query)).get("op_type");
    if (op_type && *op_type == "create") return "create";
  }
  return r.op;
}

}  // namespace

ApiResponse EsApi::emulate(const ApiRequest& request, const Sleeper& sleep) {
  if (auto denied = check_auth(request)) return *denied;
  auto segments = path_segments(request.path);
  if (auto* error = std::get_if<EsError>(&segments)) return error_reply(*error);
  auto routed = route(request.method, std::get<std::vector<std::string>>(segments));
  if (auto* miss = std::get_if<RouteMiss>(&routed)) return route_miss_reply(request, *miss);
  const Route& r = std::get<Route>(routed);
  return under_faults(operation(r, request), r.index, sleep, [&] {
    Call call{request, Params(http_query_pairs(request.query)), r.index, r.id, store_, clock_, now_millis()};
    if (auto refused = check_body(request, r.takes_body)) return error_reply(*refused);
    if (auto refused = check_params(request.path, call.params, r.params)) return error_reply(*refused);
    return dispatch(r.endpoint, call);
  });
}

ApiResponse EsApi::forward(const ApiRequest& request, const Sleeper& sleep) {
  // A request the emulator does not route (another API of the engine) still passes, under
  // the rules for every operation ("*") only.
  std::string op = "other";
  std::string index;
  auto segments = path_segments(request.path);
  if (auto* decoded = std::get_if<std::vector<std::string>>(&segments)) {
    auto routed = route(request.method, *decoded);
    if (auto* r = std::get_if<Route>(&routed)) {
      op = operation(*r, request);
      index = r->index;
    }
  }
  return under_faults(op, index, sleep, [&] {
    auto answer = options_.upstream(request);
    return answer ? std::move(*answer) : dropped_connection();
  });
}

ApiResponse EsApi::under_faults(const std::string& op, const std::string& index, const Sleeper& sleep,
                                const std::function<ApiResponse()>& perform) {
  stats_.count(op);
  // Set when the client left during an injected delay: a write performed after it is never answered.
  bool client_left = false;
  if (auto fault = faults_.take(op, FaultPhase::kBefore)) {
    if (fault->latency_ms > 0) client_left = !wait_out(sleep, fault->latency_ms, Hold::kRequest);
    if (fault->drop) return dropped_connection();
    if (fault->status) return error_reply(fault_error(*fault->status, op, index));
  }
  ApiResponse answer = perform();
  if (is_write_op(op) && answer.status >= 200 && answer.status < 300) {
    answer = answer_applied_write(op, std::move(answer), client_left, sleep);
  }
  return answer;
}

bool EsApi::wait_out(const Sleeper& sleep, int delay_ms, Hold hold) {
  const auto delay = std::chrono::milliseconds(delay_ms);
  if (sleep) return sleep(delay, hold);
  clock_.sleep_for(delay, {});
  return true;
}

long long EsApi::now_millis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().time_since_epoch()).count();
}

ApiResponse EsApi::answer_applied_write(const std::string& op, ApiResponse answer, bool client_left,
                                        const Sleeper& sleep) {
  if (!client_left) {
    auto fault = faults_.take(op, FaultPhase::kAfterApply);
    if (!fault) return answer;
    if (fault->latency_ms > 0) client_left = !wait_out(sleep, fault->latency_ms, Hold::kAnswer);
    if (!client_left && !fault->drop) return answer;
  }
  stats_.count_applied_unanswered();
  return dropped_connection();
}

}  // namespace eslease::esemu
