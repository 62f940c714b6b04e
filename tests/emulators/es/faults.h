// Fault injection and request counters, driven through the /_emulator admin endpoints.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "emulators/es/es_error.h"

namespace eslease::esemu {

// When a rule strikes. kBefore: ahead of the operation, which is then not performed unless
// the rule only delays it. kAfterApply: after a write succeeded, so that its answer is lost
// (drop) or comes late (latency_ms): the client cannot tell whether the write happened.
enum class FaultPhase { kBefore, kAfterApply };

struct FaultRule {
  std::string op = "*";
  FaultPhase phase = FaultPhase::kBefore;
  std::optional<int> status;  // 429, 500, 502, 503, 504
  int count = 1;              // -1: until cleared
  int latency_ms = 0;
  bool drop = false;
  nlohmann::ordered_json to_json() const;
};

// Parses a POST /_emulator/faults body.
std::variant<FaultRule, EsError> parse_fault_rule(const nlohmann::ordered_json& body);

// An Elasticsearch-looking error for an injected status on an operation.
EsError fault_error(int status, const std::string& op, const std::string& index);

class Faults {
 public:
  void add(FaultRule rule);
  void clear();
  // The first rule of `phase` matching `op` with count left, which is consumed.
  std::optional<FaultRule> take(const std::string& op, FaultPhase phase);
  nlohmann::ordered_json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::vector<FaultRule> rules_;
};

class Stats {
 public:
  void count(const std::string& op);
  // A write that was applied and whose answer the client never got.
  void count_applied_unanswered();
  void reset();
  nlohmann::ordered_json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, long long> counts_;
  long long applied_unanswered_ = 0;
};

bool is_known_op(const std::string& op);
// The document writes: index, create, update, delete and bulk.
bool is_write_op(const std::string& op);

}  // namespace eslease::esemu
