// _search, _count and _delete_by_query over refreshed documents only.
#include <algorithm>
#include <chrono>

#include "emulators/es/handlers.h"
#include "emulators/es/hits.h"
#include "emulators/es/query.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

constexpr int kMaxResultWindow = 10000;

struct SearchRequest {
  Query query;
  int size = 10;
  int from = 0;
  std::vector<SortField> sort;
  bool seq_no_primary_term = false;
  bool version = false;
  SourceFilter source;
  std::optional<long long> track_total_hits = kMaxResultWindow;  // nullopt: exact; -1: off
  bool track_scores = false;
  long long max_docs = -1;  // delete_by_query
};

struct Hit {
  std::string index_name;
  std::string id;
  Doc doc;
  json sort_values = json::array();
};

EsError unknown_key(const std::string& key, const json& value) {
  return make_es_error(400, "parsing_exception",
                       "Unknown key for a " + token_name(value) + " in [" + key + "].",
                       {{"line", 1}, {"col", 1}});
}

std::optional<EsError> read_int(const json& v, const std::string& key, int& out) {
  if (!v.is_number_integer()) {
    return make_es_error(400, "x_content_parse_exception",
                         "[" + key + "] failed to parse field [" + key + "]");
  }
  out = v.get<int>();
  return std::nullopt;
}

std::optional<EsError> read_track_total_hits(const json& v, SearchRequest& req) {
  if (v.is_boolean()) {
    req.track_total_hits = v.get<bool>() ? std::nullopt : std::optional<long long>(-1);
  } else if (v.is_number_integer()) {
    req.track_total_hits = v.get<long long>();
  } else if (v.is_string() && (v == "true" || v == "false")) {
    req.track_total_hits = v == "true" ? std::nullopt : std::optional<long long>(-1);
  } else {
    return illegal_argument("[track_total_hits] parameter must be positive or equals to -1, got " + v.dump());
  }
  return std::nullopt;
}

const std::vector<std::string> kUnsupported = {
    "aggs",          "aggregations",  "search_after",     "highlight", "collapse",      "post_filter",
    "suggest",       "script_fields", "docvalue_fields",  "fields",    "stored_fields", "min_score",
    "rescore",       "pit",           "runtime_mappings", "knn",       "explain",       "profile",
    "indices_boost", "stats",         "terminate_after",  "ext",       "slice",         "rank",
    "retriever"};

// A body field of _count (dbq: of _delete_by_query) other than the query.
std::optional<EsError> read_count_field(const std::string& key, const json& value, bool dbq,
                                        SearchRequest& req) {
  if (dbq && key == "max_docs" && value.is_number_integer()) {
    req.max_docs = value.get<long long>();
    return std::nullopt;
  }
  if (dbq && (key == "size" || key == "sort" || key == "_source")) return std::nullopt;
  return dbq ? parse_error("Unknown key for a " + token_name(value) + " in [" + key + "].")
             : make_es_error(400, "parsing_exception", "request does not support [" + key + "]");
}

// A body field of _search other than the query.
std::optional<EsError> read_search_field(const std::string& key, const json& value, SearchRequest& req) {
  if (key == "size") return read_int(value, key, req.size);
  if (key == "from") return read_int(value, key, req.from);
  if (key == "sort") {
    auto sort = parse_sort(value);
    if (auto* err = std::get_if<EsError>(&sort)) return *err;
    req.sort = std::get<std::vector<SortField>>(sort);
    return std::nullopt;
  }
  if (key == "_source") {
    auto f = parse_source_filter(value);
    if (auto* err = std::get_if<EsError>(&f)) return *err;
    req.source = std::get<SourceFilter>(f);
    return std::nullopt;
  }
  if (key == "seq_no_primary_term" || key == "version" || key == "track_scores") {
    if (!value.is_boolean())
      return make_es_error(400, "x_content_parse_exception", "[" + key + "] failed to parse");
    (key == "version"        ? req.version
     : key == "track_scores" ? req.track_scores
                             : req.seq_no_primary_term) = value.get<bool>();
    return std::nullopt;
  }
  if (key == "track_total_hits") return read_track_total_hits(value, req);
  if (key == "timeout") return std::nullopt;
  if (std::find(kUnsupported.begin(), kUnsupported.end(), key) != kUnsupported.end()) {
    return emulator_limitation("[" + key + "] in search requests");
  }
  return unknown_key(key, value);
}

std::optional<EsError> read_search_body(const std::string& raw, bool count_only, bool dbq,
                                        SearchRequest& req) {
  auto parsed = parse_body(raw, false);
  if (auto* err = std::get_if<EsError>(&parsed)) return *err;
  const json& body = std::get<json>(parsed);
  if (!body.is_object()) {
    return make_es_error(400, "parsing_exception",
                         "Expected [START_OBJECT] but found [" + token_name(body) + "]");
  }
  for (const auto& [key, value] : body.items()) {
    std::optional<EsError> err;
    if (key == "query") {
      auto q = parse_query(value, raw);
      if (auto* e = std::get_if<EsError>(&q)) return *e;
      req.query = std::get<Query>(q);
    } else {
      err = count_only ? read_count_field(key, value, dbq, req) : read_search_field(key, value, req);
    }
    if (err) return err;
  }
  return std::nullopt;
}

// size, from, sort, seq_no_primary_term, version and track_total_hits as parameters.
std::optional<EsError> read_search_params(const Params& p, SearchRequest& req) {
  for (const char* name : {"size", "from"}) {
    auto v = p.as_int(name);
    if (auto* err = std::get_if<EsError>(&v)) return *err;
    if (auto n = std::get<std::optional<int>>(v)) (std::string(name) == "size" ? req.size : req.from) = *n;
  }
  if (auto s = p.get("sort")) req.sort = parse_sort_param(*s);
  for (const char* name : {"seq_no_primary_term", "version"}) {
    auto v = p.as_bool(name);
    if (auto* err = std::get_if<EsError>(&v)) return *err;
    if (auto b = std::get<std::optional<bool>>(v))
      (std::string(name) == "version" ? req.version : req.seq_no_primary_term) = *b;
  }
  if (auto t = p.get("track_total_hits")) {
    json v = (*t == "true" || *t == "false") ? json(*t) : json::parse(*t, nullptr, false);
    if (v.is_discarded()) {
      return illegal_argument("[track_total_hits] parameter must be positive or equals to -1, got " + *t);
    }
    if (auto err = read_track_total_hits(v, req)) return err;
  }
  return std::nullopt;
}

// The body of _search (count_only: _count; dbq: _delete_by_query) plus its parameters.
std::variant<SearchRequest, EsError> parse_search(const Call& call, bool count_only, bool dbq) {
  SearchRequest req;
  const std::string& raw = call.request.body;
  if (!raw.empty()) {
    if (auto err = read_search_body(raw, count_only, dbq, req)) return *err;
  }
  const Params& p = call.params;
  if (p.has("q")) return emulator_limitation("the [q] parameter (query string queries)");
  if (p.has("scroll")) return emulator_limitation("scroll searches");
  if (count_only) return req;
  if (auto err = read_search_params(p, req)) return *err;
  if (auto s = p.get("_source")) req.source.enabled = *s != "false";
  if (req.size < 0)
    return illegal_argument("[size] parameter cannot be negative, found [" + std::to_string(req.size) + "]");
  if (req.from < 0)
    return illegal_argument("[from] parameter cannot be negative, found [" + std::to_string(req.from) + "]");
  if (req.from + req.size > kMaxResultWindow) {
    return illegal_argument(
        "Result window is too large, from + size must be less than or equal to: [10000] but was [" +
        std::to_string(req.from + req.size) +
        "]. See the scroll api for a more efficient way to request large data sets. This limit "
        "can be set by changing the [index.max_result_window] index level setting.");
  }
  return req;
}

EsError shard_failure(const EsError& cause, const std::string& index) {
  EsError e = make_es_error(400, "search_phase_execution_exception", "all shards failed",
                            {{"phase", "query"},
                             {"grouped", true},
                             {"failed_shards", json::array({{{"shard", 0},
                                                             {"index", index},
                                                             {"node", "es-emulator-node-0"},
                                                             {"reason", cause.to_json()}}})}});
  e.status = cause.status;
  e.caused_by = std::make_shared<EsError>(cause);
  e.root_causes.push_back(cause);
  return e;
}

// Runs the query over the refreshed documents of the call's indices.
std::variant<std::vector<Hit>, EsError> execute(Call& call, const SearchRequest& req, int& shards) {
  auto names = call.store.resolve(call.index);
  if (auto* err = std::get_if<EsError>(&names)) return *err;
  const auto& list = std::get<std::vector<std::string>>(names);
  shards = static_cast<int>(list.size());
  std::vector<Hit> hits;
  std::optional<EsError> failure;
  call.store.for_each_searchable(list, [&](const Index& index, const std::string& id, const Doc& doc) {
    if (failure) return;
    auto matched = query_matches(req.query, index, id, doc, call.now_ms);
    if (auto* err = std::get_if<EsError>(&matched)) {
      failure = shard_failure(*err, index.name);
      return;
    }
    if (!std::get<bool>(matched)) return;
    Hit hit{index.name, id, doc};
    for (const auto& s : req.sort) {
      auto v = sort_value(s, index, id, doc);
      if (auto* err = std::get_if<EsError>(&v)) {
        failure = shard_failure(*err, index.name);
        return;
      }
      hit.sort_values.push_back(std::get<json>(v));
    }
    hits.push_back(std::move(hit));
  });
  if (failure) return *failure;
  if (!req.sort.empty()) {
    std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
      for (std::size_t i = 0; i < req.sort.size(); ++i) {
        int c = compare_sort_values(a.sort_values[i], b.sort_values[i], req.sort[i].descending);
        if (c != 0) return c < 0;
      }
      return false;
    });
  }
  return hits;
}

json shards_json(int shards) {
  return {{"total", shards}, {"successful", shards}, {"skipped", 0}, {"failed", 0}};
}

long long elapsed_ms(const Clock& clock, MonoTime start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.monotonic() - start).count();
}

struct DeleteByQuery {
  SearchRequest search;
  bool abort_on_conflict = true;  // conflicts=abort (else proceed)
  bool refresh = false;
};

std::variant<DeleteByQuery, EsError> parse_delete_by_query(const Call& call) {
  if (call.request.body.empty()) return validation_error({"query is missing"});
  auto parsed = parse_search(call, true, true);
  if (auto* err = std::get_if<EsError>(&parsed)) return *err;
  DeleteByQuery dbq;
  dbq.search = std::get<SearchRequest>(parsed);
  auto conflicts = call.params.get("conflicts").value_or("abort");
  if (conflicts != "abort" && conflicts != "proceed") {
    return illegal_argument("conflicts may only be \"proceed\" or \"abort\" but was [" + conflicts + "]");
  }
  dbq.abort_on_conflict = conflicts == "abort";
  auto wait = call.params.as_bool("wait_for_completion");
  if (auto* err = std::get_if<EsError>(&wait)) return *err;
  if (!std::get<std::optional<bool>>(wait).value_or(true)) {
    return emulator_limitation("delete_by_query as a task (wait_for_completion=false)");
  }
  auto refresh = call.params.as_bool("refresh");
  if (auto* err = std::get_if<EsError>(&refresh)) return *err;
  dbq.refresh = std::get<std::optional<bool>>(refresh).value_or(false);
  auto max_docs = call.params.as_long("max_docs");
  if (auto* err = std::get_if<EsError>(&max_docs)) return *err;
  if (auto m = std::get<std::optional<long long>>(max_docs)) dbq.search.max_docs = *m;
  return dbq;
}

// Each match is deleted only if it is still the version the search saw, as the
// scroll-then-bulk of the real implementation does.
std::vector<WriteOp> deletes_of(const std::vector<Hit>& hits, long long max_docs) {
  std::vector<WriteOp> ops;
  for (const auto& h : hits) {
    if (max_docs >= 0 && static_cast<long long>(ops.size()) >= max_docs) break;
    WriteOp op;
    op.kind = WriteKind::kDelete;
    op.index = h.index_name;
    op.id = h.id;
    op.if_seq_no = h.doc.seq_no;
    op.if_primary_term = h.doc.primary_term;
    ops.push_back(std::move(op));
  }
  return ops;
}

}  // namespace

ApiResponse handle_search(Call& call) {
  const MonoTime start = call.clock.monotonic();
  auto parsed = parse_search(call, false, false);
  if (auto* err = std::get_if<EsError>(&parsed)) return error_reply(*err);
  const SearchRequest& req = std::get<SearchRequest>(parsed);
  int shards = 0;
  auto executed = execute(call, req, shards);
  if (auto* err = std::get_if<EsError>(&executed)) return error_reply(*err);
  const auto& hits = std::get<std::vector<Hit>>(executed);

  const bool scored = req.sort.empty() || req.track_scores;
  json page = json::array();
  for (std::size_t i = static_cast<std::size_t>(req.from);
       i < hits.size() && page.size() < static_cast<std::size_t>(req.size); ++i) {
    const Hit& h = hits[i];
    json hit = {{"_index", h.index_name}, {"_id", h.id}};
    if (req.version) hit["_version"] = h.doc.version;
    if (req.seq_no_primary_term) {
      hit["_seq_no"] = h.doc.seq_no;
      hit["_primary_term"] = h.doc.primary_term;
    }
    hit["_score"] = scored ? json(1.0) : json();
    if (req.source.enabled) hit["_source"] = filter_source(h.doc.source, req.source);
    if (!req.sort.empty()) hit["sort"] = h.sort_values;
    page.push_back(hit);
  }
  json hits_json = json::object();
  const long long total = static_cast<long long>(hits.size());
  if (call.params.get("rest_total_hits_as_int") == "true") {
    hits_json["total"] = total;
  } else if (!req.track_total_hits) {
    hits_json["total"] = {{"value", total}, {"relation", "eq"}};
  } else if (*req.track_total_hits >= 0) {
    const long long limit = *req.track_total_hits;
    hits_json["total"] = total > limit ? json{{"value", limit}, {"relation", "gte"}}
                                       : json{{"value", total}, {"relation", "eq"}};
  }
  hits_json["max_score"] = scored && !hits.empty() && req.size > 0 ? json(1.0) : json();
  hits_json["hits"] = page;
  return json_reply(200, {{"took", elapsed_ms(call.clock, start)},
                          {"timed_out", false},
                          {"_shards", shards_json(shards)},
                          {"hits", hits_json}});
}

ApiResponse handle_count(Call& call) {
  auto parsed = parse_search(call, true, false);
  if (auto* err = std::get_if<EsError>(&parsed)) return error_reply(*err);
  // RestCountAction reads terminate_after after the body and before it looks at any index.
  auto terminate_after = call.params.as_int("terminate_after");
  if (auto* err = std::get_if<EsError>(&terminate_after)) return error_reply(*err);
  const int limit = std::get<std::optional<int>>(terminate_after).value_or(0);
  if (limit < 0) return error_reply(illegal_argument("terminateAfter must be > 0"));
  if (limit > 0) return error_reply(emulator_limitation("the [terminate_after] parameter"));
  int shards = 0;
  auto executed = execute(call, std::get<SearchRequest>(parsed), shards);
  if (auto* err = std::get_if<EsError>(&executed)) return error_reply(*err);
  return json_reply(
      200, {{"count", std::get<std::vector<Hit>>(executed).size()}, {"_shards", shards_json(shards)}});
}

ApiResponse handle_delete_by_query(Call& call) {
  const MonoTime start = call.clock.monotonic();
  auto parsed = parse_delete_by_query(call);
  if (auto* err = std::get_if<EsError>(&parsed)) return error_reply(*err);
  const DeleteByQuery& dbq = std::get<DeleteByQuery>(parsed);
  int shards = 0;
  auto executed = execute(call, dbq.search, shards);
  if (auto* err = std::get_if<EsError>(&executed)) return error_reply(*err);
  const std::vector<WriteOp> ops = deletes_of(std::get<std::vector<Hit>>(executed), dbq.search.max_docs);
  auto outcomes = call.store.write(ops, RefreshPolicy::kNone);
  if (dbq.refresh) {
    std::vector<std::string> touched;
    touched.reserve(ops.size());
    for (const auto& op : ops) touched.push_back(op.index);
    call.store.refresh(touched);
  }
  long long deleted = 0, version_conflicts = 0;
  json failures = json::array();
  for (const auto& o : outcomes) {
    if (!o.error) {
      ++deleted;
      continue;
    }
    ++version_conflicts;
    if (dbq.abort_on_conflict) {
      failures.push_back(
          {{"index", o.index}, {"id", o.id}, {"cause", o.error->to_json()}, {"status", o.error->status}});
    }
  }
  json body = {{"took", elapsed_ms(call.clock, start)},
               {"timed_out", false},
               {"total", static_cast<long long>(ops.size())},
               {"deleted", deleted},
               {"batches", ops.empty() ? 0 : 1},
               {"version_conflicts", version_conflicts},
               {"noops", 0},
               {"retries", {{"bulk", 0}, {"search", 0}}},
               {"throttled_millis", 0},
               {"requests_per_second", -1.0},
               {"throttled_until_millis", 0},
               {"failures", failures}};
  return json_reply(failures.empty() ? 200 : 409, body);
}

}  // namespace eslease::esemu
