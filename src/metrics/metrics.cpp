#include "metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <mutex>
#include <set>

namespace eslease::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Takeovers should land in milliseconds; TTL-based hand-overs take tens of seconds.
const Histogram::BucketBoundaries kLatencyBuckets = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25,
                                                     0.5,   1,     2.5,   5,    10,   30,   60};
const Histogram::BucketBoundaries kWaitBuckets = {0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600};
const Histogram::BucketBoundaries kRequestBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,    0.25,  0.5,    1,     2.5,  10};

std::string code_label(int status) {
  return status == 0 ? "error" : std::to_string(status);
}

}  // namespace

struct Metrics::Families {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Gauge>& claims =
      BuildGauge().Name("eslease_claims").Help("Leases by phase and priority.").Register(*registry);
  prometheus::Gauge& waiters = BuildGauge()
                                   .Name("eslease_lock_waiters")
                                   .Help("Claims waiting for a lock (phase Pending).")
                                   .Register(*registry)
                                   .Add({});
  prometheus::Histogram& acquire_wait = BuildHistogram()
                                            .Name("eslease_acquire_wait_seconds")
                                            .Help("Time from a claim starting to wait to its grant.")
                                            .Register(*registry)
                                            .Add({}, kWaitBuckets);
  prometheus::Family<prometheus::Counter>& conflicts =
      BuildCounter()
          .Name("eslease_backend_conflicts_total")
          .Help("Elasticsearch version conflicts (409) met by lock writes, by operation.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& takeovers = BuildCounter()
                                                           .Name("eslease_takeovers_total")
                                                           .Help("Locks handed to a new holder, by reason.")
                                                           .Register(*registry);
  prometheus::Histogram& takeover_latency =
      BuildHistogram()
          .Name("eslease_takeover_latency_seconds")
          .Help("Time from a holder seen dead to its successor's grant.")
          .Register(*registry)
          .Add({}, kLatencyBuckets);
  prometheus::Counter& grants = BuildCounter()
                                    .Name("eslease_grants_total")
                                    .Help("New grants (a new fencing token): acquires and takeovers.")
                                    .Register(*registry)
                                    .Add({});
  prometheus::Counter& releases = BuildCounter()
                                      .Name("eslease_releases_total")
                                      .Help("Lock documents released.")
                                      .Register(*registry)
                                      .Add({});
  prometheus::Counter& expirations = BuildCounter()
                                         .Name("eslease_expirations_total")
                                         .Help("Grants that ended because they expired.")
                                         .Register(*registry)
                                         .Add({});
  prometheus::Counter& renewal_failures = BuildCounter()
                                              .Name("eslease_renewal_failures_total")
                                              .Help("Grants lost because they could not be renewed in time.")
                                              .Register(*registry)
                                              .Add({});
  prometheus::Family<prometheus::Histogram>& backend_requests =
      BuildHistogram()
          .Name("eslease_backend_request_duration_seconds")
          .Help("Elasticsearch requests by operation and HTTP status (error: no answer).")
          .Register(*registry);
  prometheus::Family<prometheus::Histogram>& kube_requests =
      BuildHistogram()
          .Name("eslease_kube_request_duration_seconds")
          .Help("Kubernetes API requests by verb and HTTP status (error: no answer).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& reconciles = BuildCounter()
                                                            .Name("eslease_reconcile_total")
                                                            .Help("Reconciles of a lock, by result.")
                                                            .Register(*registry);
  prometheus::Histogram& reconcile_duration = BuildHistogram()
                                                  .Name("eslease_reconcile_duration_seconds")
                                                  .Help("Time to reconcile one lock.")
                                                  .Register(*registry)
                                                  .Add({}, kRequestBuckets);
  prometheus::Gauge& queue_depth = BuildGauge()
                                       .Name("eslease_workqueue_depth")
                                       .Help("Locks waiting in the work queue.")
                                       .Register(*registry)
                                       .Add({});
  prometheus::Family<prometheus::Counter>& watch_restarts =
      BuildCounter()
          .Name("eslease_watch_restarts_total")
          .Help("Informer restarts by resource and reason (expired, closed, idle, error).")
          .Register(*registry);
  prometheus::Gauge& leader =
      BuildGauge().Name("eslease_leader").Help("1 while this replica leads.").Register(*registry).Add({});
  prometheus::Family<prometheus::Gauge>& build_info =
      BuildGauge()
          .Name("eslease_build_info")
          .Help("Always 1; the version label says which build runs.")
          .Register(*registry);
  std::mutex claims_mutex;
  std::set<std::pair<std::string, std::string>> claim_labels;  // series set before
};

Metrics::Metrics(const std::string& version) : f_(std::make_unique<Families>()) {
  f_->build_info.Add({{"version", version}}).Set(1);
  for (const char* phase : {"Pending", "Held", "Released", "TimedOut", "Invalid"})
    for (const char* priority : {"Foreground", "Background"})
      f_->claims.Add({{"phase", phase}, {"priority", priority}});
  f_->reconciles.Add({{"result", "success"}});
  f_->reconciles.Add({{"result", "error"}});
}

Metrics::~Metrics() = default;

void Metrics::set_claims(const std::map<std::pair<std::string, std::string>, int>& by_phase_priority,
                         int waiters) {
  std::lock_guard lock(f_->claims_mutex);
  for (const auto& labels : f_->claim_labels)
    f_->claims.Add({{"phase", labels.first}, {"priority", labels.second}}).Set(0);
  for (const auto& [labels, count] : by_phase_priority) {
    f_->claims.Add({{"phase", labels.first}, {"priority", labels.second}}).Set(count);
    f_->claim_labels.insert(labels);
  }
  f_->waiters.Set(waiters);
}

void Metrics::observe_acquire_wait(double seconds) {
  f_->acquire_wait.Observe(seconds);
}
void Metrics::count_backend_conflict(std::string_view op) {
  f_->conflicts.Add({{"op", std::string(op)}}).Increment();
}
void Metrics::count_takeover(std::string_view reason) {
  f_->takeovers.Add({{"reason", std::string(reason)}}).Increment();
}
void Metrics::observe_takeover_latency(double seconds) {
  f_->takeover_latency.Observe(seconds);
}
void Metrics::count_grant() {
  f_->grants.Increment();
}
void Metrics::count_release() {
  f_->releases.Increment();
}
void Metrics::count_expiration() {
  f_->expirations.Increment();
}
void Metrics::count_renewal_failure() {
  f_->renewal_failures.Increment();
}
void Metrics::observe_backend_request(std::string_view op, int status, std::chrono::milliseconds duration) {
  f_->backend_requests.Add({{"op", std::string(op)}, {"code", code_label(status)}}, kRequestBuckets)
      .Observe(std::chrono::duration<double>(duration).count());
}
void Metrics::observe_kube_request(std::string_view verb, int status, std::chrono::milliseconds duration) {
  f_->kube_requests.Add({{"verb", std::string(verb)}, {"code", code_label(status)}}, kRequestBuckets)
      .Observe(std::chrono::duration<double>(duration).count());
}
void Metrics::count_reconcile(std::string_view result, double seconds) {
  f_->reconciles.Add({{"result", std::string(result)}}).Increment();
  f_->reconcile_duration.Observe(seconds);
}
void Metrics::set_workqueue_depth(double depth) {
  f_->queue_depth.Set(depth);
}
void Metrics::count_watch_restart(std::string_view resource, std::string_view reason) {
  f_->watch_restarts.Add({{"resource", std::string(resource)}, {"reason", std::string(reason)}}).Increment();
}
void Metrics::set_leader(bool leader) {
  f_->leader.Set(leader ? 1 : 0);
}

std::string Metrics::text() const {
  return prometheus::TextSerializer().Serialize(f_->registry->Collect());
}

}  // namespace eslease::metrics
