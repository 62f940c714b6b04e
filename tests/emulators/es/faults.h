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

struct FaultRule {
  std::string op = "*";
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
  // The first rule matching `op` with count left, which is consumed.
  std::optional<FaultRule> take(const std::string& op);
  nlohmann::ordered_json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::vector<FaultRule> rules_;
};

class Stats {
 public:
  void count(const std::string& op);
  void reset();
  nlohmann::ordered_json to_json() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, long long> counts_;
};

bool is_known_op(const std::string& op);

}  // namespace eslease::esemu
