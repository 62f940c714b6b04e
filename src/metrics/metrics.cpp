#include "metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <mutex>
#include <set>
#include <vector>

#include "api/lease_api.h"
#include "kube/informer.h"
#include "metrics/process_metrics.h"

namespace eslease::metrics {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

// Takeovers should land in milliseconds (the target is p50 < 10 ms, p99 < 50 ms), so the
// low end is fine-grained; TTL-based hand-overs take tens of seconds and land at the top.
const Histogram::BucketBoundaries kTakeoverBuckets = {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
                                                      0.05,  0.075,  0.1,   0.25,   0.5,  1,     2.5,  5,
                                                      10,    15,     20,    30,     45,   60};
// Waiting for a lock lasts as long as the holder's work: seconds to an hour.
const Histogram::BucketBoundaries kWaitBuckets = {0.01, 0.05, 0.1, 0.5, 1,   5,    10,
                                                  30,   60,   120, 300, 900, 1800, 3600};
// Requests and reconciles: sub-millisecond on a local emulator, seconds when a server struggles.
const Histogram::BucketBoundaries kRequestBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,   0.5,   1,      2.5,   5,    10,    30};

// A label value as exported: printable ASCII only and short, so no caller's string can
// break the exposition format or blow up a series' size.
std::string clean(std::string_view value) {
  if (value.empty()) return "unknown";
  std::string out;
  for (char c : value.substr(0, 64)) {
    const auto u = static_cast<unsigned char>(c);
    out += u >= 0x21 && u < 0x7f && c != '"' && c != '\\' ? c : '_';
  }
  return out;
}

// A family whose label sets are capped: the kMaxSeriesPerFamily-th new set and beyond
// are all recorded as "other". Series are looked up once and then reused.
template <typename T>
class Bounded {
 public:
  using Make = std::function<T&(prometheus::Family<T>&, const prometheus::Labels&)>;
  Bounded(prometheus::Family<T>& family, std::vector<std::string> names, Make make = default_make())
      : family_(family), names_(std::move(names)), make_(std::move(make)) {}

  T& at(std::initializer_list<std::string_view> values) {
    std::vector<std::string> key;
    for (std::string_view v : values) key.push_back(clean(v));
    std::lock_guard lock(mutex_);
    if (auto it = series_.find(key); it != series_.end()) return *it->second;
    if (series_.size() + 1 >= kMaxSeriesPerFamily) key.assign(names_.size(), "other");
    if (auto it = series_.find(key); it != series_.end()) return *it->second;
    prometheus::Labels labels;
    for (std::size_t i = 0; i < names_.size(); ++i) labels[names_[i]] = key[i];
    T& series = make_(family_, labels);
    series_.emplace(std::move(key), &series);
    return series;
  }

  // Every label set created so far, for snapshots that reset what they do not mention.
  std::vector<std::vector<std::string>> keys() {
    std::lock_guard lock(mutex_);
    std::vector<std::vector<std::string>> out;
    for (const auto& [key, series] : series_) out.push_back(key);
    return out;
  }

 private:
  static Make default_make() {
    return [](prometheus::Family<T>& family, const prometheus::Labels& labels) -> T& {
      return family.Add(labels);
    };
  }

  prometheus::Family<T>& family_;
  const std::vector<std::string> names_;
  const Make make_;
  std::mutex mutex_;
  std::map<std::vector<std::string>, T*> series_;
};

Bounded<Histogram>::Make histogram_with(const Histogram::BucketBoundaries& buckets) {
  return [buckets](prometheus::Family<Histogram>& family, const prometheus::Labels& labels) -> Histogram& {
    return family.Add(labels, buckets);
  };
}

double seconds_of(std::chrono::milliseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

std::string code_label(int status) {
  return status >= 100 && status <= 599 ? std::to_string(status) : "error";
}

struct Metrics::Families {
  prometheus::Registry registry;

  // Contention.
  Bounded<Gauge> claims{
      BuildGauge().Name("eslease_claims").Help("Leases by phase and priority.").Register(registry),
      {"phase", "priority"}};
  Gauge& waiters = BuildGauge()
                       .Name("eslease_lock_waiters")
                       .Help("Claims waiting for a lock that a live pod could take (phase Pending).")
                       .Register(registry)
                       .Add({});
  prometheus::Family<Gauge>& slots =
      BuildGauge()
          .Name("eslease_lock_slots")
          .Help("Slots of the claimed locks (a lock of capacity N has N), by state: held or free.")
          .Register(registry);
  Gauge& slots_held = slots.Add({{"state", "held"}});
  Gauge& slots_free = slots.Add({{"state", "free"}});
  Histogram& acquire_wait = BuildHistogram()
                                .Name("eslease_acquire_wait_seconds")
                                .Help("Time from a claim starting to wait to its grant, in seconds.")
                                .Register(registry)
                                .Add({}, kWaitBuckets);
  Bounded<Counter> claim_timeouts{
      BuildCounter()
          .Name("eslease_claim_timeouts_total")
          .Help("Claims that gave up waiting (phase TimedOut after acquireTimeoutSeconds), by priority.")
          .Register(registry),
      {"priority"}};
  Bounded<Counter> conflicts{
      BuildCounter()
          .Name("eslease_backend_conflicts_total")
          .Help("Elasticsearch version conflicts (409) met by lock writes, by operation.")
          .Register(registry),
      {"op"}};

  // Takeover.
  Bounded<Counter> takeovers{
      BuildCounter()
          .Name("eslease_takeovers_total")
          .Help("Locks handed from a dead or expired holder to the next claim, by reason.")
          .Register(registry),
      {"reason"}};
  Histogram& takeover_latency =
      BuildHistogram()
          .Name("eslease_takeover_latency_seconds")
          .Help("Time from a holder seen dead to its successor's grant, in seconds.")
          .Register(registry)
          .Add({}, kTakeoverBuckets);
  Counter& grants =
      BuildCounter()
          .Name("eslease_grants_total")
          .Help("New grants (each a new fencing token): acquires and takeovers, never renewals.")
          .Register(registry)
          .Add({});
  Counter& releases = BuildCounter()
                          .Name("eslease_releases_total")
                          .Help("Lock documents released.")
                          .Register(registry)
                          .Add({});
  Counter& expirations = BuildCounter()
                             .Name("eslease_expirations_total")
                             .Help("Grants that ended because their lock document expired.")
                             .Register(registry)
                             .Add({});
  Counter& renewal_failures = BuildCounter()
                                  .Name("eslease_renewal_failures_total")
                                  .Help("Grants lost because renewal kept failing until they expired.")
                                  .Register(registry)
                                  .Add({});
  Gauge& fencing_epoch =
      BuildGauge()
          .Name("eslease_fencing_token_epoch")
          .Help(
              "The lock index's fencing-token epoch new grants are issued in; it rises when "
              "the index was re-created or restored.")
          .Register(registry)
          .Add({});
  Counter& fencing_refusals =
      BuildCounter()
          .Name("eslease_fencing_refusals_total")
          .Help(
              "Grants refused because the next fencing token could not be proven larger "
              "than every token issued before.")
          .Register(registry)
          .Add({});

  // Machinery.
  Bounded<Histogram> backend_requests{
      BuildHistogram()
          .Name("eslease_backend_request_duration_seconds")
          .Help(
              "Elasticsearch requests by operation and HTTP status (code=\"error\": no answer), in seconds.")
          .Register(registry),
      {"op", "code"},
      histogram_with(kRequestBuckets)};
  Bounded<Histogram> kube_requests{
      BuildHistogram()
          .Name("eslease_kube_request_duration_seconds")
          .Help("Kubernetes API requests by verb and HTTP status (code=\"error\": no answer), in seconds.")
          .Register(registry),
      {"verb", "code"},
      histogram_with(kRequestBuckets)};
  Bounded<Counter> reconciles{BuildCounter()
                                  .Name("eslease_reconcile_total")
                                  .Help("Reconciles of a lock, by result (success, requeue, error).")
                                  .Register(registry),
                              {"result"}};
  Histogram& reconcile_duration = BuildHistogram()
                                      .Name("eslease_reconcile_duration_seconds")
                                      .Help("Time to reconcile one lock, in seconds.")
                                      .Register(registry)
                                      .Add({}, kRequestBuckets);
  Gauge& queue_depth = BuildGauge()
                           .Name("eslease_workqueue_depth")
                           .Help("Locks waiting in the work queue.")
                           .Register(registry)
                           .Add({});
  Bounded<Counter> watch_restarts{
      BuildCounter()
          .Name("eslease_watch_restarts_total")
          .Help("Informer restarts by resource and reason (expired, closed, idle, error).")
          .Register(registry),
      {"resource", "reason"}};
  Gauge& leader = BuildGauge()
                      .Name("eslease_leader")
                      .Help("1 while this replica leads, else 0.")
                      .Register(registry)
                      .Add({});
  prometheus::Family<Gauge>& build_info = BuildGauge()
                                              .Name("eslease_build_info")
                                              .Help("Always 1; the version label names the running build.")
                                              .Register(registry);

  std::mutex snapshot_mutex;  // one set_claims snapshot at a time
};

Metrics::Metrics(std::string_view version) : f_(std::make_unique<Families>()) {
  f_->build_info.Add({{"version", clean(version)}}).Set(1);
  // Series that exist from the start read as 0 instead of missing, so rate() and alerts
  // work before the first event.
  for (api::Phase phase : api::kPhases)
    for (api::Priority priority : api::kPriorities)
      f_->claims.at({api::to_string(phase), api::to_string(priority)});
  for (api::Priority priority : api::kPriorities) f_->claim_timeouts.at({api::to_string(priority)});
  for (std::string_view result : {"success", "requeue", "error"}) f_->reconciles.at({result});
  for (std::string_view op : {"acquire", "take_over", "release"}) f_->conflicts.at({op});
  for (api::Reason reason : {api::Reason::kPodDeleted, api::Reason::kPodReplaced, api::Reason::kPodFailed,
                             api::Reason::kPodSucceeded, api::Reason::kPodNotReady, api::Reason::kNodeLost,
                             api::Reason::kExpired, api::Reason::kRevoked})
    f_->takeovers.at({api::to_string(reason)});
  for (std::string_view resource : {"leases", "pods", "nodes"})
    for (auto reason : {kube::RestartReason::kExpired, kube::RestartReason::kClosed,
                        kube::RestartReason::kIdle, kube::RestartReason::kError})
      f_->watch_restarts.at({resource, kube::to_string(reason)});
}

Metrics::~Metrics() = default;

void Metrics::set_claims(std::string_view phase, std::string_view priority, double count) {
  f_->claims.at({phase, priority}).Set(count);
}

void Metrics::set_claims(const std::map<std::pair<std::string, std::string>, int>& by_phase_priority,
                         int waiters) {
  std::lock_guard lock(f_->snapshot_mutex);
  std::set<std::vector<std::string>> given;
  for (const auto& [labels, count] : by_phase_priority) {
    f_->claims.at({labels.first, labels.second}).Set(count);
    given.insert({clean(labels.first), clean(labels.second)});
  }
  for (const auto& key : f_->claims.keys())
    if (!given.count(key)) f_->claims.at({key[0], key[1]}).Set(0);
  f_->waiters.Set(waiters);
}

void Metrics::set_lock_slots(std::int64_t held, std::int64_t free) {
  f_->slots_held.Set(static_cast<double>(held));
  f_->slots_free.Set(static_cast<double>(free));
}

void Metrics::observe_acquire_wait(double seconds) {
  f_->acquire_wait.Observe(seconds);
}
void Metrics::count_claim_timeout(std::string_view priority) {
  f_->claim_timeouts.at({priority}).Increment();
}
void Metrics::count_backend_conflict(std::string_view op) {
  f_->conflicts.at({op}).Increment();
}
void Metrics::count_takeover(std::string_view reason) {
  f_->takeovers.at({reason}).Increment();
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
void Metrics::set_fencing_epoch(std::int64_t epoch) {
  f_->fencing_epoch.Set(static_cast<double>(epoch));
}
void Metrics::count_fencing_refusal() {
  f_->fencing_refusals.Increment();
}
void Metrics::observe_backend_request(std::string_view op, int status, std::chrono::milliseconds duration) {
  f_->backend_requests.at({op, code_label(status)}).Observe(seconds_of(duration));
}
void Metrics::observe_kube_request(std::string_view verb, int status, std::chrono::milliseconds duration) {
  f_->kube_requests.at({verb, code_label(status)}).Observe(seconds_of(duration));
}
void Metrics::count_reconcile(std::string_view result, double seconds) {
  f_->reconciles.at({result}).Increment();
  f_->reconcile_duration.Observe(seconds);
}
void Metrics::set_workqueue_depth(double depth) {
  f_->queue_depth.Set(depth);
}
void Metrics::count_watch_restart(std::string_view resource, std::string_view reason) {
  f_->watch_restarts.at({resource, reason}).Increment();
}
void Metrics::count_watch_restart(std::string_view resource, kube::RestartReason reason) {
  count_watch_restart(resource, kube::to_string(reason));
}
void Metrics::set_leader(bool leader) {
  f_->leader.Set(leader ? 1 : 0);
}

RequestObserver Metrics::backend_request_observer() {
  return [this](std::string_view op, int status, std::chrono::milliseconds duration) {
    observe_backend_request(op, status, duration);
  };
}

RequestObserver Metrics::kube_request_observer() {
  return [this](std::string_view verb, int status, std::chrono::milliseconds duration) {
    observe_kube_request(verb, status, duration);
  };
}

std::string Metrics::text() const {
  auto families = f_->registry.Collect();
  for (auto& family : process_metric_families()) families.push_back(std::move(family));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace eslease::metrics
