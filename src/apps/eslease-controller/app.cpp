#include "apps/eslease-controller/app.h"

#include <iostream>
#include <thread>

#include "common/log.h"
#include "common/signals.h"
#include "config/controller_config.h"
#include "controller/controller.h"
#include "kube/config.h"
#include "kube/http_api.h"
#include "kube/instrumented_api.h"
#include "lock/connection.h"
#include "metrics/endpoints.h"
#include "metrics/metrics.h"

#ifndef ESLEASE_VERSION
#define ESLEASE_VERSION "0.0.0"
#endif

namespace eslease::controller {
namespace {

// Metrics as the controller reports them.
class MetricsObserver final : public Observer {
 public:
  explicit MetricsObserver(metrics::Metrics& m) : m_(m) {}
  void granted(double wait) override {
    m_.count_grant();
    m_.observe_acquire_wait(wait);
  }
  void taken_over(std::string_view reason, std::optional<double> latency) override {
    m_.count_takeover(reason);
    if (latency) m_.observe_takeover_latency(*latency);
  }
  void released() override { m_.count_release(); }
  void claim_timed_out(std::string_view priority) override { m_.count_claim_timeout(priority); }
  void expired() override { m_.count_expiration(); }
  void renewal_failed() override { m_.count_renewal_failure(); }
  void backend_conflict(std::string_view op) override { m_.count_backend_conflict(op); }
  void reconciled(std::string_view result, double seconds) override { m_.count_reconcile(result, seconds); }
  void queue_depth(std::size_t depth) override { m_.set_workqueue_depth(static_cast<double>(depth)); }
  void leading(bool leader) override { m_.set_leader(leader); }
  void claims(const std::map<std::pair<std::string, std::string>, int>& counts, int waiters) override {
    m_.set_claims(counts, waiters);
  }
  void lock_slots(std::int64_t held, std::int64_t free) override { m_.set_lock_slots(held, free); }

 private:
  metrics::Metrics& m_;
};

int fail(const std::string& message) {
  log::error("cannot start", {{"error", message}});
  return 1;
}

void configure_logging(const config::ControllerConfig& opts) {
  log::Format format = log::Format::kText;
  log::Level level = log::Level::kInfo;
  log::parse_format(opts.log_format, format);
  log::parse_level(opts.log_level, level);
  log::configure(format, level);
}

// What the endpoints report while main starts, runs and stops the controller.
class Serving {
 public:
  explicit Serving(metrics::Metrics& metrics) : metrics_(metrics) {}

  Result<std::unique_ptr<metrics::Endpoints>> start(const config::ControllerConfig& opts) {
    metrics::EndpointOptions options;
    options.metrics_address = opts.metrics_bind_address;
    options.health_address = opts.health_probe_bind_address;
    options.metrics_text = [this] {
      std::lock_guard lock(mutex_);
      if (controller_ && controller_->synced()) controller_->publish_claim_metrics();
      return metrics_.text();
    };
    options.not_ready_reason = [this]() -> std::string {
      if (!index_ready_.load()) return "the lock index is not ready";
      std::lock_guard lock(mutex_);
      if (!controller_ || !controller_->synced()) return "caches are not synced";
      return "";
    };
    auto endpoints = metrics::Endpoints::start(options);
    if (!endpoints.ok()) return endpoints.error();
    for (const auto& bound : (*endpoints)->bound())
      log::info("serving", {{"endpoint", bound.endpoint}, {"address", bound.address}});
    return endpoints;
  }
  void index_ready() { index_ready_.store(true); }
  // The controller the endpoints ask (nullptr: none), set while no scrape reads it.
  void set_controller(Controller* controller) {
    std::lock_guard lock(mutex_);
    controller_ = controller;
  }

 private:
  metrics::Metrics& metrics_;
  std::atomic<bool> index_ready_{false};
  std::mutex mutex_;
  Controller* controller_ = nullptr;
};

// Creates (or checks) the lock index; keeps trying while Elasticsearch is away, as it may
// start after us, but refuses an index whose mapping is wrong. Ok when stopped meanwhile;
// `waited` tells whether Elasticsearch was away at first.
Status prepare_index(lock::LockStore& store, Clock& clock, std::stop_token stop, bool& waited) {
  for (Backoff backoff(BackoffPolicy{Millis(200), Millis(10000), 2.0}); !stop.stop_requested();) {
    Status prepared = store.prepare();
    if (prepared.ok() || !prepared.error().unavailable()) return prepared;
    waited = true;
    log::warn("Elasticsearch not reachable yet; retrying", {{"error", prepared.error().describe()}});
    clock.sleep_for(backoff.next(), stop);
  }
  return {};
}

ControllerOptions controller_options(const config::ControllerConfig& opts, metrics::Metrics& metrics) {
  ControllerOptions options;
  options.namespaces = opts.namespaces;
  options.workers = opts.workers;
  options.liveness_takeover = opts.liveness_takeover;
  options.node_heartbeat_grace = opts.node_heartbeat_grace;
  options.holds_annotation = opts.holds_annotation;
  options.longest_renewal_pause = config::longest_renewal_pause(opts);
  options.leader_elect = opts.leader_elect;
  options.leader_election.ns = opts.leader_election_namespace;
  options.leader_election.name = opts.leader_election_id;
  options.leader_election.identity = opts.identity;
  options.leader_election.lease_duration = opts.leader_election_lease_duration;
  options.leader_election.renew_deadline = opts.leader_election_renew_deadline;
  options.leader_election.retry_period = opts.leader_election_retry_period;
  options.on_watch_restart = [&metrics](const std::string& resource, kube::RestartReason reason) {
    metrics.count_watch_restart(resource, reason);
  };
  return options;
}

lock::OpenOptions store_options(const config::ControllerConfig& opts, metrics::Metrics& metrics) {
  lock::OpenOptions options;
  options.writer = opts.writer;
  options.on_request = metrics.backend_request_observer();
  options.awaits_token_history = true;  // the Leases' tokens, once the caches are synced
  options.on_fencing = [&metrics](const lock::FencingReport& report) {
    metrics.set_fencing_epoch(report.epoch);
    if (report.refused) metrics.count_fencing_refusal();
  };
  return options;
}

kube::InstrumentedApiOptions api_options(const config::ControllerConfig& opts, metrics::Metrics& metrics,
                                         std::stop_token stop) {
  kube::InstrumentedApiOptions options;
  options.qps = opts.kube_api_qps;
  options.burst = opts.kube_api_burst;
  options.observer = metrics.kube_request_observer();
  options.stop = std::move(stop);
  return options;
}

// Connects to both backends, serves the endpoints and runs the controller until `stop`.
int run(const config::ControllerConfig& opts, std::stop_source& stop) {
  Clock& clock = SystemClock::instance();
  metrics::Metrics metrics(ESLEASE_VERSION);
  auto store = lock::open_lock_store(opts.elasticsearch, clock, store_options(opts, metrics));
  if (!store.ok()) return fail(store.error().describe());

  auto rest = kube::load_default(opts.kubeconfig);
  if (!rest.ok()) return fail("no Kubernetes configuration: " + rest.error().message);
  auto http_api = kube::HttpApi::connect(*rest);
  kube::InstrumentedApi api(*http_api, api_options(opts, metrics, stop.get_token()), clock);
  log::info("starting", {{"version", ESLEASE_VERSION},
                         {"identity", opts.identity},
                         {"kubernetes", rest->describe()},
                         {"index", opts.elasticsearch.index},
                         {"liveness_takeover", opts.liveness_takeover ? "true" : "false"}});

  Serving serving(metrics);
  auto endpoints = serving.start(opts);
  if (!endpoints.ok()) return fail(endpoints.error().describe());

  kube::EventRecorderOptions event_options;
  event_options.host = opts.identity;
  kube::EventRecorder events(api, clock, event_options);
  MetricsObserver observer(metrics);
  Controller controller(api, **store, &events, observer, clock, controller_options(opts, metrics));
  serving.set_controller(&controller);
  // The controller runs while the index is prepared: with Elasticsearch away, the Leases it
  // serves say so (BackendAvailable=False), and nothing is granted before the index's tokens
  // are checked (lock/token_guard.h). A lock index that cannot be used stops it.
  Status prepared;
  std::jthread preparing([&] {
    bool waited = false;
    prepared = prepare_index(**store, clock, stop.get_token(), waited);
    if (!prepared.ok()) {
      stop.request_stop();
    } else if (!stop.stop_requested()) {
      serving.index_ready();
      if (waited) controller.backend_returned();
    }
  });
  Status ran = controller.run(stop.get_token());
  stop.request_stop();  // the controller is done: so is the preparing (its error, if any, stands)
  preparing.join();
  events.flush(std::chrono::seconds(2));
  serving.set_controller(nullptr);
  if (!prepared.ok()) return fail(prepared.error().describe());
  if (!ran.ok()) return fail(ran.error().describe());
  log::info("stopped cleanly");
  return 0;
}

}  // namespace

int run_controller_app(const std::vector<std::string>& args) {
  const config::EnvironmentVariables environment = config::EnvironmentVariables::process();
  auto loaded = config::load_controller_config(args, environment);
  if (!loaded.ok()) {
    std::cerr << "eslease-controller: " << loaded.error().message
              << "\nRun eslease-controller --help for usage.\n";
    return 2;
  }
  config::ControllerConfig opts = std::move(*loaded);
  if (opts.help) {
    std::cout << config::usage();
    return 0;
  }
  if (opts.version) {
    std::cout << "eslease-controller " << ESLEASE_VERSION << "\n";
    return 0;
  }
  configure_logging(opts);
  config::resolve_runtime_defaults(opts, config::read_runtime_facts(environment));
  for (const std::string& warning : config::timing_warnings(opts)) log::warn(warning);
  std::stop_source stop;
  // The stop runs on the catcher's thread: its callbacks take mutexes. Once stopped, a
  // second SIGTERM leaves the clean exit as it is.
  auto signals =
      SignalCatcher::start([&stop](int) { stop.request_stop(); }, SignalCatcher::Afterwards::kIgnore);
  if (!signals.ok()) {
    log::error("cannot start", {{"error", signals.error().describe()}});
    return 1;
  }
  return run(opts, stop);
}

}  // namespace eslease::controller
