#include "emulators/es/faults.h"

#include <array>

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {
constexpr std::array<const char*, 19> kOps = {"info",
                                              "cluster.health",
                                              "indices.create",
                                              "indices.delete",
                                              "indices.exists",
                                              "indices.get",
                                              "indices.put_mapping",
                                              "index",
                                              "create",
                                              "get",
                                              "head",
                                              "delete",
                                              "update",
                                              "bulk",
                                              "mget",
                                              "search",
                                              "count",
                                              "delete_by_query",
                                              "refresh"};
}  // namespace

bool is_known_op(const std::string& op) {
  for (const char* known : kOps) {
    if (op == known) return true;
  }
  return false;
}

bool is_write_op(const std::string& op) {
  return op == "index" || op == "create" || op == "update" || op == "delete" || op == "bulk";
}

json FaultRule::to_json() const {
  json out = {{"op", op},
              {"phase", phase == FaultPhase::kAfterApply ? "after_apply" : "before"},
              {"count", count},
              {"latency_ms", latency_ms},
              {"drop", drop}};
  out["status"] = status ? json(*status) : json();
  return out;
}

std::variant<FaultRule, EsError> parse_fault_rule(const json& body) {
  FaultRule rule;
  if (!body.is_object()) return parse_error("fault rule must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (key == "op") {
      if (!value.is_string() || (value != "*" && !is_known_op(value.get<std::string>()))) {
        return illegal_argument("unknown op [" +
                                (value.is_string() ? value.get<std::string>() : value.dump()) + "]");
      }
      rule.op = value.get<std::string>();
    } else if (key == "status") {
      if (value.is_null()) continue;
      if (!value.is_number_integer()) return illegal_argument("status must be an integer");
      int s = value.get<int>();
      if (s != 429 && s != 500 && s != 502 && s != 503 && s != 504) {
        return illegal_argument("status must be one of 429, 500, 502, 503, 504");
      }
      rule.status = s;
    } else if (key == "count") {
      if (!value.is_number_integer() || value.get<long long>() < -1 || value.get<long long>() == 0 ||
          value.get<long long>() > 1000000000) {
        return illegal_argument("count must be a positive integer or -1");
      }
      rule.count = value.get<int>();
    } else if (key == "latency_ms") {
      if (!value.is_number_integer() || value.get<long long>() < 0 || value.get<long long>() > 600000) {
        return illegal_argument("latency_ms must be an integer between 0 and 600000");
      }
      rule.latency_ms = value.get<int>();
    } else if (key == "drop") {
      if (!value.is_boolean()) return illegal_argument("drop must be a boolean");
      rule.drop = value.get<bool>();
    } else if (key == "phase") {
      if (value != "before" && value != "after_apply") {
        return illegal_argument("phase must be \"before\" or \"after_apply\"");
      }
      rule.phase = value == "after_apply" ? FaultPhase::kAfterApply : FaultPhase::kBefore;
    } else {
      return illegal_argument("unknown fault field [" + key + "]");
    }
  }
  if (rule.drop && rule.status)
    return illegal_argument("a fault either drops the connection or answers a status");
  if (rule.phase == FaultPhase::kAfterApply) {
    if (rule.op != "*" && !is_write_op(rule.op)) {
      return illegal_argument(
          "phase [after_apply] is for writes: op must be index, create, update, delete, bulk or *");
    }
    if (rule.status)
      return illegal_argument("a fault after the write is applied loses its answer: it has no status");
    if (!rule.drop && rule.latency_ms == 0) {
      return illegal_argument("a fault after the write is applied needs drop or latency_ms");
    }
  }
  return rule;
}

EsError fault_error(int status, const std::string& op, const std::string& index) {
  const std::string shard = index.empty() ? "" : "[" + index + "][0] ";
  switch (status) {
    case 429:
      return make_es_error(429, "es_rejected_execution_exception",
                           "rejected execution of coordinating operation [coordinating_and_primary_bytes=0, "
                           "replica_bytes=0, all_bytes=0, coordinating_operation_bytes=1024, "
                           "max_coordinating_and_primary_bytes=107374182]");
    case 503:
      if (op == "search" || op == "count" || op == "delete_by_query") {
        EsError e = make_es_error(503, "search_phase_execution_exception", "all shards failed",
                                  {{"phase", "query"}, {"grouped", true}, {"failed_shards", json::array()}});
        return e;
      }
      if (index.empty()) {
        return make_es_error(503, "cluster_block_exception",
                             "blocked by: [SERVICE_UNAVAILABLE/1/state not recovered / initialized];");
      }
      return make_es_error(503, "unavailable_shards_exception",
                           shard +
                               "primary shard is not active Timeout: [1m], request: [BulkShardRequest [[" +
                               index + "][0]] containing [1] requests]");
    case 504:
      return make_es_error(504, "timeout_exception",
                           "injected fault: gateway timeout while handling [" + op + "]");
    case 502:
      return make_es_error(502, "connect_transport_exception",
                           "injected fault: bad gateway while handling [" + op + "]");
    default:
      return make_es_error(status, "illegal_state_exception", "injected fault while handling [" + op + "]");
  }
}

void Faults::add(FaultRule rule) {
  std::lock_guard lock(mutex_);
  rules_.push_back(std::move(rule));
}

void Faults::clear() {
  std::lock_guard lock(mutex_);
  rules_.clear();
}

std::optional<FaultRule> Faults::take(const std::string& op, FaultPhase phase) {
  std::lock_guard lock(mutex_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (it->phase != phase || (it->op != "*" && it->op != op)) continue;
    FaultRule taken = *it;
    if (it->count > 0 && --it->count == 0) rules_.erase(it);
    return taken;
  }
  return std::nullopt;
}

json Faults::to_json() const {
  std::lock_guard lock(mutex_);
  json rules = json::array();
  for (const auto& r : rules_) rules.push_back(r.to_json());
  return {{"rules", rules}};
}

void Stats::count(const std::string& op) {
  std::lock_guard lock(mutex_);
  ++counts_[op];
}

void Stats::count_applied_unanswered() {
  std::lock_guard lock(mutex_);
  ++applied_unanswered_;
}

void Stats::reset() {
  std::lock_guard lock(mutex_);
  counts_.clear();
  applied_unanswered_ = 0;
}

json Stats::to_json() const {
  std::lock_guard lock(mutex_);
  json requests = json::object();
  long long total = 0;
  for (const auto& [op, n] : counts_) {
    requests[op] = n;
    total += n;
  }
  return {{"requests", requests}, {"total", total}, {"es_write_applied_unanswered", applied_unanswered_}};
}

}  // namespace eslease::esemu
