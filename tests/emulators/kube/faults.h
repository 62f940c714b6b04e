// Fault injection and request counters behind /_emulator/: latency, error answers and
// dropped connections per verb and resource, so client retry paths can be tested.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace eslease::kubeemu {

struct Fault {
  std::string verb = "*";      // get, list, watch, create, update, patch, delete, or *
  std::string resource = "*";  // plural resource name, or *
  int status = 0;              // 0 = answer normally after the latency
  int count = -1;              // requests affected; -1 until cleared
  std::chrono::milliseconds latency{0};
  bool drop = false;  // close the connection without an answer
  int retry_after_seconds = 0;
};

// What to do with one request.
struct FaultAction {
  std::chrono::milliseconds latency{0};
  int status = 0;
  bool drop = false;
  int retry_after_seconds = 0;
};

class FaultInjector {
 public:
  // Parses the POST /_emulator/faults body. Error(kInvalidArgument) when malformed.
  static Result<Fault> parse(const nlohmann::json& body);
  void add(Fault fault);
  void clear();
  // Consumes one use of the first matching fault.
  std::optional<FaultAction> take(const std::string& verb, const std::string& resource);

 private:
  std::mutex mutex_;
  std::vector<Fault> faults_;
};

class RequestCounters {
 public:
  void count(const std::string& verb, const std::string& resource);
  nlohmann::json snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::uint64_t> counts_;
};

}  // namespace eslease::kubeemu
