#include "controller/app.h"

#include <csignal>
#include <iostream>
#include <thread>

#include "common/log.h"
#include "config/controller_options.h"
#include "controller/controller.h"
#include "es/http_document_api.h"
#include "kube/config.h"
#include "kube/http_api.h"
#include "kube/instrumented_api.h"
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
  void expired() override { m_.count_expiration(); }
  void renewal_failed() override { m_.count_renewal_failure(); }
  void backend_conflict(std::string_view op) override { m_.count_backend_conflict(op); }
  void reconciled(std::string_view result, double seconds) override { m_.count_reconcile(result, seconds); }
  void queue_depth(std::size_t depth) override { m_.set_workqueue_depth(static_cast<double>(depth)); }
  void leading(bool leader) override { m_.set_leader(leader); }
  void claims(const std::map<std::pair<std::string, std::string>, int>& counts, int waiters) override {
    m_.set_claims(counts, waiters);
  }

 private:
  metrics::Metrics& m_;
};

std::stop_source* g_stop = nullptr;

void on_signal(int) {
  if (g_stop) g_stop->request_stop();  // request_stop is lock-free for std::stop_source
}

int fail(const std::string& message) {
  log::error("cannot start", {{"error", message}});
  return 1;
}

}  // namespace

int run_controller_app(const std::vector<std::string>& args) {
  const config::Environment environment = config::Environment::process();
  auto loaded = config::load_controller_options(args, environment);
  if (!loaded.ok()) {
    std::cerr << "eslease-controller: " << loaded.error().message
              << "\nRun eslease-controller --help for usage.\n";
    return 2;
  }
  config::ControllerOptions opts = std::move(*loaded);
  if (opts.help) {
    std::cout << config::usage();
    return 0;
  }
  if (opts.version) {
    std::cout << "eslease-controller " << ESLEASE_VERSION << "\n";
    return 0;
  }
  log::Format format = log::Format::kText;
  log::Level level = log::Level::kInfo;
  log::parse_format(opts.log_format, format);
  log::parse_level(opts.log_level, level);
  log::configure(format, level);
  config::resolve_runtime_defaults(opts, config::read_runtime_facts(environment));
  Clock& clock = SystemClock::instance();
  metrics::Metrics metrics(ESLEASE_VERSION);

  // Elasticsearch.
  es::ClientOptions es_options;
  es_options.hosts = opts.es_hosts;
  es_options.credentials = es::CredentialOptions{opts.es_username, opts.es_password_file,
                                                 opts.es_api_key_file, opts.es_bearer_token_file};
  es_options.request_timeout = opts.es_timeout;
  es_options.on_request = [&metrics](std::string_view op, int status, std::chrono::milliseconds d) {
    metrics.observe_backend_request(op, status, d);
  };
  http::TransportOptions es_transport;
  es_transport.tls.verify = !opts.es_insecure_skip_tls_verify;
  es_transport.tls.ca_file = opts.es_ca_file;
  auto documents = es::make_http_document_api(http::make_cpprest_transport(es_transport), es_options, clock);
  if (!documents.ok()) return fail(documents.error().describe());
  lock::StoreOptions store_options;
  store_options.index = opts.index;
  store_options.writer = opts.identity;
  store_options.awaits_token_history = true;  // the Leases' tokens, once the caches are synced
  store_options.on_fencing = [&metrics](const lock::FencingReport& report) {
    metrics.set_fencing_epoch(report.epoch);
    if (report.refused) metrics.count_fencing_refusal();
  };
  auto store = lock::make_es_lock_store(**documents, clock, std::move(store_options));
  if (!store.ok()) return fail(store.error().describe());

  // Kubernetes.
  auto rest = kube::load_default(opts.kubeconfig);
  if (!rest.ok()) return fail("no Kubernetes configuration: " + rest.error().message);
  auto http_api = kube::HttpApi::connect(*rest);
  std::stop_source stop;
  kube::InstrumentedApiOptions api_options;
  api_options.qps = opts.kube_api_qps;
  api_options.burst = opts.kube_api_burst;
  api_options.observer = [&metrics](std::string_view verb, int status, std::chrono::milliseconds d) {
    metrics.observe_kube_request(verb, status, d);
  };
  api_options.stop = stop.get_token();
  kube::InstrumentedApi api(*http_api, std::move(api_options), clock);
  log::info("starting", {{"version", ESLEASE_VERSION},
                         {"identity", opts.identity},
                         {"kubernetes", rest->describe()},
                         {"index", opts.index},
                         {"liveness_takeover", opts.liveness_takeover ? "true" : "false"}});

  // Create (or check) the lock index; keep trying while Elasticsearch is away, as it may
  // start after us, but refuse an index whose mapping is wrong.
  g_stop = &stop;
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  std::unique_ptr<Controller> controller;
  std::atomic<bool> index_ready{false};
  metrics::EndpointOptions endpoint_options;
  endpoint_options.metrics_address = opts.metrics_bind_address;
  endpoint_options.health_address = opts.health_probe_bind_address;
  std::mutex controller_mutex;  // the scrape thread reads `controller` while main sets it
  endpoint_options.metrics_text = [&] {
    std::lock_guard lock(controller_mutex);
    if (controller && controller->synced()) controller->publish_claim_metrics();
    return metrics.text();
  };
  endpoint_options.not_ready_reason = [&]() -> std::string {
    if (!index_ready.load()) return "the lock index is not ready";
    std::lock_guard lock(controller_mutex);
    if (!controller || !controller->synced()) return "caches are not synced";
    return "";
  };
  auto endpoints = metrics::Endpoints::start(endpoint_options);
  if (!endpoints.ok()) return fail(endpoints.error().describe());
  for (const auto& bound : (*endpoints)->bound())
    log::info("serving", {{"endpoint", bound.endpoint}, {"address", bound.address}});

  for (Backoff backoff(BackoffPolicy{Millis(200), Millis(10000), 2.0}); !stop.stop_requested();) {
    Status prepared = (*store)->prepare();
    if (prepared.ok()) break;
    if (!prepared.error().unavailable()) return fail(prepared.error().describe());
    log::warn("Elasticsearch not reachable yet; retrying", {{"error", prepared.error().describe()}});
    clock.sleep_for(backoff.next(), stop.get_token());
  }
  if (stop.stop_requested()) return 0;
  index_ready = true;

  kube::EventRecorderOptions event_options;
  event_options.host = opts.identity;
  kube::EventRecorder events(api, event_options);
  MetricsObserver observer(metrics);
  ControllerOptions controller_options;
  controller_options.namespaces = opts.namespaces;
  controller_options.workers = opts.workers;
  controller_options.liveness_takeover = opts.liveness_takeover;
  controller_options.holds_annotation = opts.holds_annotation;
  controller_options.leader_elect = opts.leader_elect;
  controller_options.leader_election.ns = opts.leader_election_namespace;
  controller_options.leader_election.name = opts.leader_election_id;
  controller_options.leader_election.identity = opts.identity;
  controller_options.leader_election.lease_duration = opts.leader_election_lease_duration;
  controller_options.leader_election.renew_deadline = opts.leader_election_renew_deadline;
  controller_options.leader_election.retry_period = opts.leader_election_retry_period;
  controller_options.on_watch_restart = [&metrics](const std::string& resource, kube::RestartReason reason) {
    metrics.count_watch_restart(resource, kube::to_string(reason));
  };
  Controller* running = nullptr;
  {
    std::lock_guard lock(controller_mutex);
    controller = std::make_unique<Controller>(api, **store, &events, observer, clock, controller_options);
    running = controller.get();
  }
  Status ran = running->run(stop.get_token());
  events.flush(std::chrono::seconds(2));
  {
    std::lock_guard lock(controller_mutex);
    controller.reset();
  }
  g_stop = nullptr;
  if (!ran.ok()) return fail(ran.error().describe());
  log::info("stopped cleanly");
  return 0;
}

}  // namespace eslease::controller
