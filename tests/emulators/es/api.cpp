#include "emulators/es/api.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>
#include <thread>

#include "common/base64.h"
#include "common/text.h"
#include "emulators/es/handlers.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

std::optional<std::string> find_in(const HeaderList& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (to_lower(key) == to_lower(name)) return value;
  }
  return std::nullopt;
}

enum class Endpoint {
  kInfo,
  kHealth,
  kIndexCreate,
  kIndexDelete,
  kIndexExists,
  kIndexGet,
  kMapping,
  kPutMapping,
  kPutSettings,
  kRefresh,
  kDocIndex,
  kDocCreate,
  kDocGet,
  kDocHead,
  kDocSource,
  kDocDelete,
  kUpdate,
  kMget,
  kSearch,
  kCount,
  kDeleteByQuery,
  kBulk
};

struct Route {
  Endpoint endpoint = Endpoint::kInfo;
  std::string op;
  std::string index;
  std::string id;
  std::set<std::string> params;
  bool takes_body = false;
};

struct RouteMiss {
  std::vector<std::string> allowed;  // empty: no handler for the path at all
};

const std::set<std::string> kDocReadParams = {
    "realtime", "refresh",          "routing",          "preference", "stored_fields",
    "_source",  "_source_includes", "_source_excludes", "version",    "version_type"};
const std::set<std::string> kIndexParams = {"op_type",
                                            "refresh",
                                            "routing",
                                            "timeout",
                                            "version",
                                            "version_type",
                                            "if_seq_no",
                                            "if_primary_term",
                                            "pipeline",
                                            "require_alias",
                                            "wait_for_active_shards",
                                            "require_data_stream"};
const std::set<std::string> kSearchParams = {"size",
                                             "from",
                                             "sort",
                                             "seq_no_primary_term",
                                             "version",
                                             "track_total_hits",
                                             "_source",
                                             "_source_includes",
                                             "_source_excludes",
                                             "timeout",
                                             "allow_no_indices",
                                             "ignore_unavailable",
                                             "expand_wildcards",
                                             "rest_total_hits_as_int",
                                             "typed_keys",
                                             "request_cache",
                                             "preference",
                                             "routing",
                                             "search_type",
                                             "batched_reduce_size",
                                             "ccs_minimize_roundtrips",
                                             "allow_partial_search_results",
                                             "track_scores",
                                             "q",
                                             "scroll"};
const std::set<std::string> kIndicesOptions = {"ignore_unavailable", "allow_no_indices", "expand_wildcards"};

std::set<std::string> with(std::set<std::string> base, std::initializer_list<const char*> more) {
  for (const char* m : more) base.insert(m);
  return base;
}

// Matches method and decoded path segments to an endpoint, as Elasticsearch's REST
// controller does: a known path with another method is a 405, an unknown path a 400.
std::variant<Route, RouteMiss> route(const std::string& method, const std::vector<std::string>& seg) {
  auto pick =
      [&](std::initializer_list<std::pair<const char*, Route>> options) -> std::variant<Route, RouteMiss> {
    RouteMiss miss;
    for (const auto& [m, r] : options) {
      if (method == m) return r;
      miss.allowed.push_back(m);
    }
    std::sort(miss.allowed.begin(), miss.allowed.end());
    miss.allowed.erase(std::unique(miss.allowed.begin(), miss.allowed.end()), miss.allowed.end());
    return miss;
  };
  auto r = [](Endpoint e, std::string op, std::set<std::string> params, bool body = false,
              std::string index = "", std::string id = "") {
    return Route{e, std::move(op), std::move(index), std::move(id), std::move(params), body};
  };
  const std::size_t n = seg.size();
  if (n == 0) {
    return pick({{"GET", r(Endpoint::kInfo, "info", {})}, {"HEAD", r(Endpoint::kInfo, "info", {})}});
  }
  const std::string& first = seg[0];
  auto collection = [&](const std::string& name,
                        const std::string& index) -> std::optional<std::variant<Route, RouteMiss>> {
    if (name == "_bulk") {
      auto params = std::set<std::string>{"refresh",
                                          "routing",
                                          "timeout",
                                          "wait_for_active_shards",
                                          "pipeline",
                                          "require_alias",
                                          "_source",
                                          "_source_includes",
                                          "_source_excludes",
                                          "list_executed_pipelines",
                                          "require_data_stream"};
      return pick({{"POST", r(Endpoint::kBulk, "bulk", params, true, index)},
                   {"PUT", r(Endpoint::kBulk, "bulk", params, true, index)}});
    }
    if (name == "_search") {
      return pick({{"GET", r(Endpoint::kSearch, "search", kSearchParams, true, index)},
                   {"POST", r(Endpoint::kSearch, "search", kSearchParams, true, index)}});
    }
    if (name == "_count") {
      auto params = with(kIndicesOptions, {"q", "min_score", "preference", "routing", "terminate_after",
                                           "analyzer", "default_operator", "df", "lenient"});
      return pick({{"GET", r(Endpoint::kCount, "count", params, true, index)},
                   {"POST", r(Endpoint::kCount, "count", params, true, index)}});
    }
    if (name == "_refresh") {
      return pick({{"GET", r(Endpoint::kRefresh, "refresh", kIndicesOptions, false, index)},
                   {"POST", r(Endpoint::kRefresh, "refresh", kIndicesOptions, false, index)}});
    }
    if (name == "_mget") {
      return pick({{"GET", r(Endpoint::kMget, "mget", kDocReadParams, true, index)},
                   {"POST", r(Endpoint::kMget, "mget", kDocReadParams, true, index)}});
    }
    return std::nullopt;
  };
  if (n == 1) {
    if (auto c = collection(first, "")) return *c;
    std::set<std::string> get_params =
        with(kIndicesOptions, {"local", "flat_settings", "include_defaults", "master_timeout", "features"});
    return pick({{"DELETE", r(Endpoint::kIndexDelete, "indices.delete",
                              with(kIndicesOptions, {"timeout", "master_timeout"}), false, first)},
                 {"GET", r(Endpoint::kIndexGet, "indices.get", get_params, false, first)},
                 {"HEAD", r(Endpoint::kIndexExists, "indices.exists", get_params, false, first)},
                 {"PUT", r(Endpoint::kIndexCreate, "indices.create",
                           {"wait_for_active_shards", "timeout", "master_timeout"}, true, first)}});
  }
  std::set<std::string> health_params = {"wait_for_status",
                                         "timeout",
                                         "level",
                                         "local",
                                         "master_timeout",
                                         "wait_for_active_shards",
                                         "wait_for_nodes",
                                         "wait_for_events",
                                         "wait_for_no_relocating_shards",
                                         "wait_for_no_initializing_shards",
                                         "expand_wildcards"};
  if (first == "_cluster" && seg[1] == "health" && n <= 3) {
    return pick(
        {{"GET", r(Endpoint::kHealth, "cluster.health", health_params, false, n == 3 ? seg[2] : "")}});
  }
  if (n == 2) {
    if (auto c = collection(seg[1], first)) return *c;
    if (seg[1] == "_delete_by_query") {
      auto params =
          with(kIndicesOptions, {"conflicts", "refresh", "max_docs", "wait_for_completion", "slices",
                                 "scroll_size", "requests_per_second", "timeout", "wait_for_active_shards",
                                 "routing", "q", "search_timeout", "scroll"});
      return pick({{"POST", r(Endpoint::kDeleteByQuery, "delete_by_query", params, true, first)}});
    }
    if (seg[1] == "_mapping") {
      auto put = with(kIndicesOptions, {"timeout", "master_timeout", "write_index_only"});
      return pick({{"GET", r(Endpoint::kMapping, "indices.get",
                             with(kIndicesOptions, {"local", "master_timeout"}), false, first)},
                   {"POST", r(Endpoint::kPutMapping, "indices.put_mapping", put, true, first)},
                   {"PUT", r(Endpoint::kPutMapping, "indices.put_mapping", put, true, first)}});
    }
    if (seg[1] == "_settings") {
      auto put = with(kIndicesOptions, {"timeout", "master_timeout", "preserve_existing", "flat_settings"});
      return pick({{"PUT", r(Endpoint::kPutSettings, "indices.put_settings", put, true, first)}});
    }
    if (seg[1] == "_doc") {
      return pick({{"POST", r(Endpoint::kDocIndex, "index", kIndexParams, true, first)}});
    }
    return RouteMiss{};
  }
  if (n == 3) {
    const std::string& kind = seg[1];
    const std::string& id = seg[2];
    if (kind == "_doc") {
      auto del =
          std::set<std::string>{"refresh",      "routing",   "timeout",         "version",
                                "version_type", "if_seq_no", "if_primary_term", "wait_for_active_shards"};
      return pick({{"DELETE", r(Endpoint::kDocDelete, "delete", del, false, first, id)},
                   {"GET", r(Endpoint::kDocGet, "get", kDocReadParams, false, first, id)},
                   {"HEAD", r(Endpoint::kDocHead, "head", kDocReadParams, false, first, id)},
                   {"POST", r(Endpoint::kDocIndex, "index", kIndexParams, true, first, id)},
                   {"PUT", r(Endpoint::kDocIndex, "index", kIndexParams, true, first, id)}});
    }
    if (kind == "_create") {
      return pick({{"POST", r(Endpoint::kDocCreate, "create", kIndexParams, true, first, id)},
                   {"PUT", r(Endpoint::kDocCreate, "create", kIndexParams, true, first, id)}});
    }
    if (kind == "_update") {
      auto params = std::set<std::string>{"refresh",
                                          "routing",
                                          "timeout",
                                          "retry_on_conflict",
                                          "if_seq_no",
                                          "if_primary_term",
                                          "wait_for_active_shards",
                                          "_source",
                                          "_source_includes",
                                          "_source_excludes",
                                          "require_alias",
                                          "lang"};
      return pick({{"POST", r(Endpoint::kUpdate, "update", params, true, first, id)}});
    }
    if (kind == "_source") {
      return pick({{"GET", r(Endpoint::kDocSource, "get", kDocReadParams, false, first, id)},
                   {"HEAD", r(Endpoint::kDocSource, "head", kDocReadParams, false, first, id)}});
    }
  }
  return RouteMiss{};
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

bool wait_out(const EsApi::Sleeper& sleep, int delay_ms, EsApi::Hold hold) {
  const auto delay = std::chrono::milliseconds(delay_ms);
  if (sleep) return sleep(delay, hold);
  std::this_thread::sleep_for(delay);
  return true;
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

}  // namespace

std::optional<std::string> ApiRequest::header(std::string_view name) const {
  return find_in(headers, name);
}
std::optional<std::string> ApiResponse::header(std::string_view name) const {
  return find_in(headers, name);
}

EsApi::EsApi(ApiOptions options, Store::NowMillis now_millis)
    : options_(std::move(options)),
      now_millis_(now_millis ? std::move(now_millis) : [] {
        return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
      }),
      store_(now_millis_) {}

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
  return simple_error_reply(
      400, "no handler found for uri [" + path + "] and method [" + request.method + "]", false);
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
  const std::string content_type = response_content_type(request);
  auto finish = [&](ApiResponse response) {
    response.headers.emplace_back("X-elastic-product", "Elasticsearch");
    response.headers.emplace_back("content-type", content_type);
    if (request.method == "HEAD") response.body.clear();
    return response;
  };

  if (request.path == "/_emulator" || request.path.rfind("/_emulator/", 0) == 0) {
    return finish(handle_admin(request, request.path));
  }
  if (auto denied = check_auth(request)) return finish(*denied);

  // Path segments are split before they are decoded, so an encoded '/' stays inside its id.
  std::vector<std::string> segments;
  std::size_t start = 1;
  const std::string& path = request.path;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    std::string raw = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!raw.empty() || (slash != std::string::npos && slash + 1 < path.size())) {
      auto decoded = percent_decode(raw);
      if (!decoded)
        return finish(error_reply(illegal_argument("unterminated escape sequence in path [" + path + "]")));
      segments.push_back(*decoded);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }

  auto routed = route(request.method, segments);
  if (auto* miss = std::get_if<RouteMiss>(&routed)) {
    const std::string uri = request.path + (request.query.empty() ? "" : "?" + request.query);
    if (miss->allowed.empty()) {
      return finish(simple_error_reply(
          400, "no handler found for uri [" + uri + "] and method [" + request.method + "]", false));
    }
    std::string list;
    for (const auto& m : miss->allowed) list += (list.empty() ? "" : ", ") + m;
    ApiResponse response =
        simple_error_reply(405, "Incorrect HTTP method for uri [" + uri + "] and method [" + request.method +
                                    "], allowed: [" + list + "]");
    std::string allow;
    for (const auto& m : miss->allowed) allow += (allow.empty() ? "" : ",") + m;
    response.headers.emplace_back("Allow", allow);
    return finish(response);
  }
  Route& r = std::get<Route>(routed);
  if (r.endpoint == Endpoint::kDocIndex && !r.id.empty()) {
    auto op_type = Params(http_query_pairs(request.query)).get("op_type");
    if (op_type && *op_type == "create") r.op = "create";
  }
  stats_.count(r.op);

  // Set when the client left during an injected delay: a write performed after it is never answered.
  bool client_left = false;
  if (auto fault = faults_.take(r.op, FaultPhase::kBefore)) {
    if (fault->latency_ms > 0) client_left = !wait_out(sleep, fault->latency_ms, Hold::kRequest);
    if (fault->drop) {
      ApiResponse dropped;
      dropped.drop = true;
      return dropped;
    }
    if (fault->status) return finish(error_reply(fault_error(*fault->status, r.op, r.index)));
  }

  if (!request.body.empty()) {
    auto type = request.header("content-type");
    if (!type) return finish(simple_error_reply(406, "Content-Type header is missing"));
    if (!supported_content_type(*type)) {
      return finish(simple_error_reply(406, "Content-Type header [" + *type + "] is not supported"));
    }
    if (!r.takes_body) {
      return finish(error_reply(illegal_argument("request [" + request.method + " " + request.path +
                                                 "] does not support having a body")));
    }
  }

  Call call{request, Params(http_query_pairs(request.query)), r.index, r.id, store_, now_millis_()};
  std::vector<std::string> unknown;
  for (const auto& [name, value] : call.params.items()) {
    if (name == "pretty" || name == "human" || name == "error_trace") continue;
    if (name == "filter_path") return finish(error_reply(emulator_limitation("the [filter_path] parameter")));
    if (!r.params.contains(name) && std::find(unknown.begin(), unknown.end(), name) == unknown.end()) {
      unknown.push_back(name);
    }
  }
  if (!unknown.empty()) {
    std::string list;
    for (const auto& u : unknown) list += (list.empty() ? "[" : ", [") + u + "]";
    return finish(
        error_reply(illegal_argument("request [" + request.path + "] contains unrecognized parameter" +
                                     (unknown.size() > 1 ? "s" : "") + ": " + list)));
  }

  ApiResponse answer = dispatch(r.endpoint, call);
  if (is_write_op(r.op) && answer.status >= 200 && answer.status < 300) {
    answer = answer_applied_write(r.op, std::move(answer), client_left, sleep);
    if (answer.drop) return answer;
  }
  return finish(std::move(answer));
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
  ApiResponse lost;
  lost.drop = true;
  return lost;
}

}  // namespace eslease::esemu
