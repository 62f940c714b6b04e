// Every Prometheus metric eslease exports, in one place (prefix eslease_). Callers use the
// typed methods below and never touch prometheus-cpp; label values are bounded (no lock
// or Lease names). Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace eslease::metrics {

class Metrics {
 public:
  explicit Metrics(const std::string& version);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Contention.
  void set_claims(const std::map<std::pair<std::string, std::string>, int>& by_phase_priority, int waiters);
  void observe_acquire_wait(double seconds);
  void count_backend_conflict(std::string_view op);
  // Takeover.
  void count_takeover(std::string_view reason);
  void observe_takeover_latency(double seconds);
  void count_grant();
  void count_release();
  void count_expiration();
  void count_renewal_failure();
  // Machinery. `status` 0 = no answer (labelled "error").
  void observe_backend_request(std::string_view op, int status, std::chrono::milliseconds duration);
  void observe_kube_request(std::string_view verb, int status, std::chrono::milliseconds duration);
  void count_reconcile(std::string_view result, double seconds);
  void set_workqueue_depth(double depth);
  void count_watch_restart(std::string_view resource, std::string_view reason);
  void set_leader(bool leader);

  // The exposition text for /metrics.
  std::string text() const;

 private:
  struct Families;
  std::unique_ptr<Families> f_;
};

}  // namespace eslease::metrics
