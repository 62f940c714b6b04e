#include "emulators/es/routes.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <utility>

namespace eslease::esemu {

namespace {

using Routed = std::variant<Route, RouteMiss>;
using ParamSet = std::set<std::string>;

ParamSet with(ParamSet base, std::initializer_list<const char*> more) {
  for (const char* m : more) base.insert(m);
  return base;
}

const ParamSet kIndicesOptions = {"ignore_unavailable", "allow_no_indices", "expand_wildcards"};
const ParamSet kDocReadParams = {"realtime",      "refresh",     "routing",          "preference",
                                 "stored_fields", "_source",     "_source_includes", "_source_excludes",
                                 "version",       "version_type"};
const ParamSet kIndexParams = {"op_type",
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
const ParamSet kSearchParams = {"size",
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
const ParamSet kBulkParams = {"refresh",
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
const ParamSet kCountParams =
    with(kIndicesOptions, {"q", "min_score", "preference", "routing", "terminate_after", "analyzer",
                           "default_operator", "df", "lenient"});
const ParamSet kIndexGetParams =
    with(kIndicesOptions, {"local", "flat_settings", "include_defaults", "master_timeout", "features"});
const ParamSet kHealthParams = {"wait_for_status",
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
const ParamSet kDeleteByQueryParams =
    with(kIndicesOptions, {"conflicts", "refresh", "max_docs", "wait_for_completion", "slices", "scroll_size",
                           "requests_per_second", "timeout", "wait_for_active_shards", "routing", "q",
                           "search_timeout", "scroll"});
const ParamSet kPutMappingParams = with(kIndicesOptions, {"timeout", "master_timeout", "write_index_only"});
const ParamSet kPutSettingsParams =
    with(kIndicesOptions, {"timeout", "master_timeout", "preserve_existing", "flat_settings"});
const ParamSet kDocDeleteParams = {"refresh",      "routing",   "timeout",         "version",
                                   "version_type", "if_seq_no", "if_primary_term", "wait_for_active_shards"};
const ParamSet kUpdateParams = {"refresh",
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

Route make_route(Endpoint endpoint, std::string op, ParamSet params, bool body = false,
                 std::string index = "", std::string id = "") {
  return Route{endpoint, std::move(op), std::move(index), std::move(id), std::move(params), body};
}

// The route for `method` among a path's routes; else the methods the path allows, sorted.
Routed pick(const std::string& method, std::initializer_list<std::pair<const char*, Route>> routes) {
  RouteMiss miss;
  for (const auto& [m, r] : routes) {
    if (method == m) return r;
    miss.allowed.push_back(m);
  }
  std::sort(miss.allowed.begin(), miss.allowed.end());
  miss.allowed.erase(std::unique(miss.allowed.begin(), miss.allowed.end()), miss.allowed.end());
  return miss;
}

// The same route for both methods.
Routed pick_either(const std::string& method, const char* a, const char* b, const Route& r) {
  return pick(method, {{a, r}, {b, r}});
}

// Endpoints that stand alone or follow an index: /_bulk and /{index}/_bulk, and so on. Each
// takes either of two methods.
struct CollectionRoute {
  const char* name;
  const char* method;
  const char* other_method;
  Endpoint endpoint;
  const char* op;
  const ParamSet* params;
  bool takes_body;
};

const CollectionRoute kCollections[] = {
    {"_bulk", "POST", "PUT", Endpoint::kBulk, "bulk", &kBulkParams, true},
    {"_search", "GET", "POST", Endpoint::kSearch, "search", &kSearchParams, true},
    {"_count", "GET", "POST", Endpoint::kCount, "count", &kCountParams, true},
    {"_refresh", "GET", "POST", Endpoint::kRefresh, "refresh", &kIndicesOptions, false},
    {"_mget", "GET", "POST", Endpoint::kMget, "mget", &kDocReadParams, true}};

std::optional<Routed> route_collection(const std::string& method, const std::string& name,
                                       const std::string& index) {
  for (const auto& c : kCollections) {
    if (name == c.name) {
      return pick_either(method, c.method, c.other_method,
                         make_route(c.endpoint, c.op, *c.params, c.takes_body, index));
    }
  }
  return std::nullopt;
}

// /{index}
Routed route_index(const std::string& method, const std::string& index) {
  if (auto c = route_collection(method, index, "")) return *c;
  return pick(method,
              {{"DELETE", make_route(Endpoint::kIndexDelete, "indices.delete",
                                     with(kIndicesOptions, {"timeout", "master_timeout"}), false, index)},
               {"GET", make_route(Endpoint::kIndexGet, "indices.get", kIndexGetParams, false, index)},
               {"HEAD", make_route(Endpoint::kIndexExists, "indices.exists", kIndexGetParams, false, index)},
               {"PUT", make_route(Endpoint::kIndexCreate, "indices.create",
                                  {"wait_for_active_shards", "timeout", "master_timeout"}, true, index)}});
}

// /{index}/{api}
Routed route_index_api(const std::string& method, const std::string& index, const std::string& api) {
  if (auto c = route_collection(method, api, index)) return *c;
  if (api == "_delete_by_query") {
    return pick(method, {{"POST", make_route(Endpoint::kDeleteByQuery, "delete_by_query",
                                             kDeleteByQueryParams, true, index)}});
  }
  if (api == "_mapping") {
    const Route put =
        make_route(Endpoint::kPutMapping, "indices.put_mapping", kPutMappingParams, true, index);
    return pick(method,
                {{"GET", make_route(Endpoint::kMapping, "indices.get",
                                    with(kIndicesOptions, {"local", "master_timeout"}), false, index)},
                 {"POST", put},
                 {"PUT", put}});
  }
  if (api == "_settings") {
    return pick(method, {{"PUT", make_route(Endpoint::kPutSettings, "indices.put_settings",
                                            kPutSettingsParams, true, index)}});
  }
  if (api == "_doc")
    return pick(method, {{"POST", make_route(Endpoint::kDocIndex, "index", kIndexParams, true, index)}});
  return RouteMiss{};
}

// /{index}/{kind}/{id}
Routed route_document(const std::string& method, const std::string& index, const std::string& kind,
                      const std::string& id) {
  auto r = [&](Endpoint e, std::string op, const ParamSet& params, bool body) {
    return make_route(e, std::move(op), params, body, index, id);
  };
  if (kind == "_doc") {
    return pick(method, {{"DELETE", r(Endpoint::kDocDelete, "delete", kDocDeleteParams, false)},
                         {"GET", r(Endpoint::kDocGet, "get", kDocReadParams, false)},
                         {"HEAD", r(Endpoint::kDocHead, "head", kDocReadParams, false)},
                         {"POST", r(Endpoint::kDocIndex, "index", kIndexParams, true)},
                         {"PUT", r(Endpoint::kDocIndex, "index", kIndexParams, true)}});
  }
  if (kind == "_create")
    return pick_either(method, "POST", "PUT", r(Endpoint::kDocCreate, "create", kIndexParams, true));
  if (kind == "_update") return pick(method, {{"POST", r(Endpoint::kUpdate, "update", kUpdateParams, true)}});
  if (kind == "_source") {
    return pick(method, {{"GET", r(Endpoint::kDocSource, "get", kDocReadParams, false)},
                         {"HEAD", r(Endpoint::kDocSource, "head", kDocReadParams, false)}});
  }
  return RouteMiss{};
}

}  // namespace

Routed route(const std::string& method, const std::vector<std::string>& segments) {
  const std::size_t n = segments.size();
  if (n == 0) return pick_either(method, "GET", "HEAD", make_route(Endpoint::kInfo, "info", {}));
  if (n == 1) return route_index(method, segments[0]);
  if (segments[0] == "_cluster" && segments[1] == "health" && n <= 3) {
    return pick(method, {{"GET", make_route(Endpoint::kHealth, "cluster.health", kHealthParams, false,
                                            n == 3 ? segments[2] : "")}});
  }
  if (n == 2) return route_index_api(method, segments[0], segments[1]);
  if (n == 3) return route_document(method, segments[0], segments[1], segments[2]);
  return RouteMiss{};
}

}  // namespace eslease::esemu
