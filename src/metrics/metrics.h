// Every Prometheus metric eslease exports, in one place (prefix eslease_). Callers use the
// typed methods below and never touch prometheus-cpp. Thread-safe.
//
// Label values must stay bounded (no lock, Lease or pod names): callers pass fixed
// vocabularies (operations, verbs, reasons, phases), HTTP statuses become their number or
// "error", and as a last guard each family keeps at most kMaxSeriesPerFamily label sets;
// anything beyond is counted under the value "other" rather than growing without bound.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace eslease::kube {
enum class RestartReason;  // kube/informer.h; only its name is needed here
}  // namespace eslease::kube

namespace eslease::metrics {

// One request seen by a client: what it did (an Elasticsearch op, a Kubernetes verb), the
// HTTP status (0 when no answer came) and how long it took. The shape of
// es::ClientOptions::on_request and kube::InstrumentedApi's observer.
using RequestObserver =
    std::function<void(std::string_view what, int status, std::chrono::milliseconds duration)>;

inline constexpr std::size_t kMaxSeriesPerFamily = 256;

class Metrics {
 public:
  // `version` becomes eslease_build_info{version="..."} 1.
  explicit Metrics(std::string_view version);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Contention.
  // eslease_claims{phase,priority}: one series.
  void set_claims(std::string_view phase, std::string_view priority, double count);
  // A whole snapshot: every series not in it drops to 0 (a phase nobody is in any more must
  // not keep its old count), and eslease_lock_waiters is set to `waiters`.
  void set_claims(const std::map<std::pair<std::string, std::string>, int>& by_phase_priority, int waiters);
  // eslease_lock_slots{state="held"|"free"}.
  void set_lock_slots(std::int64_t held, std::int64_t free);
  void observe_acquire_wait(double seconds);
  // eslease_claim_timeouts_total{priority}: once per claim that gives up waiting.
  void count_claim_timeout(std::string_view priority);
  void count_backend_conflict(std::string_view op);

  // Takeover.
  void count_takeover(std::string_view reason);
  void observe_takeover_latency(double seconds);
  void count_grant();
  void count_release();
  void count_expiration();
  void count_renewal_failure();
  // Fencing tokens (lock/token_guard.h): the lock index's epoch grants are issued in, and
  // grants refused because the next token could not be proven larger than those issued.
  void set_fencing_epoch(std::int64_t epoch);
  void count_fencing_refusal();

  // Machinery. `status` 0 = no answer, labelled code="error".
  void observe_backend_request(std::string_view op, int status, std::chrono::milliseconds duration);
  void observe_kube_request(std::string_view verb, int status, std::chrono::milliseconds duration);
  // eslease_reconcile_total{result} and eslease_reconcile_duration_seconds.
  void count_reconcile(std::string_view result, double seconds);
  void set_workqueue_depth(double depth);
  void count_watch_restart(std::string_view resource, std::string_view reason);
  void count_watch_restart(std::string_view resource, kube::RestartReason reason);
  void set_leader(bool leader);

  // Adapters for the clients' hooks. Each holds a reference to this object, which must
  // outlive the client it is given to.
  RequestObserver backend_request_observer();  // es::ClientOptions::on_request
  RequestObserver kube_request_observer();     // kube::InstrumentedApi

  // The exposition text for /metrics (Prometheus text format 0.0.4).
  std::string text() const;

 private:
  struct Families;
  std::unique_ptr<Families> f_;
};

// The code label for an HTTP status: "200", "409", ...; "error" for 0 (no answer) and
// anything that is not an HTTP status.
std::string code_label(int status);

}  // namespace eslease::metrics
