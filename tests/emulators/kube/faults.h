// Fault injection and request counters behind /_emulator/: latency, error answers and
// dropped connections per verb and resource, so client retry paths can be tested; and
// writes that are applied but whose answer is lost or late, so that clients meet writes
// of unknown outcome.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "emulators/kube/api_status.h"
#include "http/server.h"

namespace eslease::kubeemu {

// When a fault strikes. kBefore: ahead of the request, which is then not served unless the
// fault only delays it. kAfterApply: after a write succeeded, to lose its answer (drop) or
// send it late (latency).
enum class FaultPhase { kBefore, kAfterApply };

struct Fault {
  std::string verb = "*";      // get, list, watch, create, update, patch, delete, or *
  std::string resource = "*";  // plural resource name, or *
  FaultPhase phase = FaultPhase::kBefore;
  int status = 0;  // 0 = answer normally after the latency
  int count = -1;  // requests affected; -1 until cleared
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
  // Parses the POST /_emulator/faults body; a 400 BadRequest when malformed.
  static std::variant<Fault, ApiError> parse(const nlohmann::json& body);
  // create, update, patch and delete: the verbs an after_apply fault strikes.
  static bool is_write(const std::string& verb);
  void add(Fault fault);
  void clear();
  // Consumes one use of the first fault of `phase` that matches.
  std::optional<FaultAction> take(const std::string& verb, const std::string& resource,
                                  FaultPhase phase = FaultPhase::kBefore);
  // Serves a write through `serve`, holding its answer back. A write that succeeded (2xx)
  // loses its answer when `client_left` (the client went away during an injected delay) or
  // when an after_apply fault strikes; each such write is counted.
  void answer_write(const std::string& verb, const std::string& resource, bool client_left,
                    http::ServerResponse& response, const std::function<void(http::ServerResponse&)>& serve);
  std::uint64_t applied_unanswered() const { return applied_unanswered_; }

 private:
  std::mutex mutex_;
  std::vector<Fault> faults_;
  std::atomic<std::uint64_t> applied_unanswered_{0};
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
