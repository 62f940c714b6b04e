#include "controller/controller.h"

#include <algorithm>
#include <map>
#include <thread>

#include "common/duration.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "controller/claim_queue.h"
#include "controller/lease_codec.h"
#include "controller/lock_table.h"
#include "controller/reconciler.h"
#include "controller/session_keeper.h"
#include "controller/work_queue.h"

namespace eslease::controller {

using LeaseInformer = kube::TypedInformer<LeaseRecord>;
using PodInformer = kube::TypedInformer<PodRecord>;
using NodeInformer = kube::TypedInformer<NodeRecord>;
using NodeLeaseInformer = kube::TypedInformer<NodeLeaseRecord>;

// The namespace of the kubelets' heartbeats: a coordination.k8s.io Lease per node.
constexpr const char* kNodeLeaseNamespace = "kube-node-lease";

// The informer caches of every watched namespace, holding typed records decoded once as
// each object arrives (the JSON is not kept).
class Controller::Caches final : public ClusterView {
 public:
  explicit Caches(const ClaimIndex& index) : index_(index) {}
  std::optional<LeaseRecord> lease(const std::string& key) const override {
    const LeaseInformer* informer = for_namespace(leases, key);
    return informer ? informer->cache().get(key) : std::nullopt;
  }
  std::optional<PodRecord> pod(const std::string& key) const override {
    const PodInformer* informer = for_namespace(pods, key);
    return informer ? informer->cache().get(key) : std::nullopt;
  }
  bool read_lease(const std::string& key, const std::function<void(const LeaseRecord&)>& fn) const override {
    const LeaseInformer* informer = for_namespace(leases, key);
    return informer && informer->cache().read(key, fn);
  }
  bool read_pod(const std::string& key, const std::function<void(const PodRecord&)>& fn) const override {
    const PodInformer* informer = for_namespace(pods, key);
    return informer && informer->cache().read(key, fn);
  }
  void for_each_pod(const std::string& ns, const std::function<void(const PodRecord&)>& fn) const override {
    const std::string prefix = ns + "/";
    for (const auto& [informer_ns, informer] : pods) {
      if (!informer_ns.empty() && informer_ns != ns) continue;
      // Copied out first: `fn` runs outside the cache's lock.
      std::vector<PodRecord> matched;
      informer->cache().for_each([&](const std::string& key, const PodRecord& pod) {
        if (key.compare(0, prefix.size(), prefix) == 0) matched.push_back(pod);
      });
      for (const PodRecord& pod : matched) fn(pod);
    }
  }
  void for_each_lease(const std::function<void(const LeaseRecord&)>& fn) const override {
    for (const auto& [ns, informer] : leases) {
      informer->cache().for_each([&](const std::string&, const LeaseRecord& lease) { fn(lease); });
    }
  }
  // The claim index knows which Leases of a namespace show Held; the cache has their latest
  // state. (The index learns of each change just after the cache does.)
  void for_each_held_lease(const std::string& ns,
                           const std::function<void(const LeaseRecord&)>& fn) const override {
    for (const std::string& key : index_.held_in(ns)) read_lease(key, fn);
  }

  bool synced() const {
    auto all_synced = [](const auto& informers) {
      return std::all_of(informers.begin(), informers.end(),
                         [](const auto& i) { return i.second->has_synced(); });
    };
    return all_synced(leases) && all_synced(pods) && (!nodes || nodes->has_synced());
  }
  // Waits until every informer has delivered its first list; false when stopped first.
  bool wait_for_sync(std::stop_token stop) const {
    auto all_synced = [&](const auto& informers) {
      return std::all_of(informers.begin(), informers.end(),
                         [&](const auto& i) { return i.second->wait_for_sync(Millis::max(), stop); });
    };
    return all_synced(leases) && all_synced(pods) && (!nodes || nodes->wait_for_sync(Millis::max(), stop));
  }

  // "" holds the all-namespaces informer.
  std::map<std::string, std::unique_ptr<LeaseInformer>> leases;
  std::map<std::string, std::unique_ptr<PodInformer>> pods;
  std::unique_ptr<NodeInformer> nodes;
  std::unique_ptr<NodeLeaseInformer> node_leases;  // null: heartbeats are not judged

 private:
  const ClaimIndex& index_;
  template <typename Informer>
  static const Informer* for_namespace(const std::map<std::string, std::unique_ptr<Informer>>& informers,
                                       const std::string& key) {
    auto all = informers.find("");
    if (all != informers.end()) return all->second.get();
    auto it = informers.find(key.substr(0, key.find('/')));
    return it == informers.end() ? nullptr : it->second.get();
  }
};

namespace {

// What the Leases show of the grants made before a term (lock/token_guard.h): the largest
// fencing token any of them shows (Held, Released, or let go of by its holder), and the
// longest lease duration of a grant shown Held.
lock::IssuedBefore issued_before(const ClusterView& cluster) {
  lock::IssuedBefore out;
  auto count = [&out](const std::string& text) {
    if (std::optional<std::int64_t> token = parse_fencing_token(text))
      out.largest_token = std::max(out.largest_token, *token);
  };
  cluster.for_each_lease([&](const LeaseRecord& lease) {
    count(lease.status.fencing_token);
    count(lease.released_token);
    if (lease.status.phase == Phase::kHeld) {
      const Millis duration = api::lease_duration(lease.spec.lease_duration_seconds);
      out.longest_validity = std::max(out.longest_validity, duration);
    }
  });
  return out;
}

}  // namespace

// One term of leadership: the lock table, the sessions, the queue and the workers.
class LeadershipTerm {
 public:
  LeadershipTerm(const ClusterView& cluster, ClaimIndex& index, PodTracker& tracker, lock::LockStore& store,
                 kube::Api& api, kube::EventRecorder* events, Observer& observer, Clock& clock,
                 const ControllerOptions& options)
      : clock_(clock),
        observer_(observer),
        queue_(clock),
        sessions_(table_, store, api, cluster, observer, clock, session_options(options)),
        reconciler_(cluster, index, tracker, table_, store, sessions_, api, events, observer, clock,
                    ReconcilerOptions{options.liveness_takeover, options.holds_annotation}),
        workers_(options.workers) {}

  void add(const std::string& lock_id) {
    queue_.add(lock_id);
    observer_.queue_depth(queue_.len());
  }

  Reconciler& reconciler() { return reconciler_; }

  void run(std::stop_token stop, const std::vector<std::string>& locks) {
    reconciler_.prime(locks);
    for (const std::string& id : locks) add(id);
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<std::size_t>(workers_));
    for (int i = 0; i < workers_; ++i)
      threads.emplace_back([this](std::stop_token s) {
        name_this_thread("worker");
        work(s);
      });
    std::jthread sessions([this](std::stop_token s) {
      name_this_thread("sessions");
      sessions_.run(s);
    });
    std::mutex mutex;
    std::condition_variable_any cv;
    std::unique_lock lock(mutex);
    cv.wait(lock, stop, [] { return false; });
    queue_.shut_down();
    sessions.request_stop();
    for (auto& t : threads) t.request_stop();
  }

 private:
  SessionOptions session_options(const ControllerOptions& options) {
    SessionOptions o;
    o.identity = options.leader_election.identity;
    o.enqueue = [this](const std::string& id) { add(id); };
    o.backend_answered = [this](bool available) { reconciler_.backend_answered(available); };
    return o;
  }

  // controller-runtime's processNextWorkItem: one key per worker at a time; an error is
  // retried with per-key backoff; success forgets the backoff and schedules the next wake-up.
  void work(std::stop_token stop) {
    while (auto key = queue_.get(stop)) {
      const MonoTime started = clock_.monotonic();
      ReconcileOutcome outcome = reconciler_.reconcile(*key, stop);
      const double seconds = std::chrono::duration<double>(clock_.monotonic() - started).count();
      if (!outcome.status.ok()) {
        observer_.reconciled("error", seconds);
        queue_.add_rate_limited(*key);
      } else {
        observer_.reconciled(outcome.requeue_at ? "requeue" : "success", seconds);
        queue_.forget(*key);
        if (outcome.requeue_at) {
          const auto delay =
              std::chrono::duration_cast<Millis>(*outcome.requeue_at - clock_.monotonic()) + Millis(1);
          queue_.add_after(*key, delay);
        }
      }
      queue_.done(*key);
      observer_.queue_depth(queue_.len());
    }
  }

  Clock& clock_;
  Observer& observer_;
  LockTable table_;
  WorkQueue queue_;
  SessionKeeper sessions_;
  Reconciler reconciler_;
  int workers_;
};

Controller::Controller(kube::Api& api, lock::LockStore& store, kube::EventRecorder* events,
                       Observer& observer, Clock& clock, ControllerOptions options)
    : api_(api),
      store_(store),
      events_(events),
      observer_(observer),
      clock_(clock),
      options_(std::move(options)),
      tracker_(clock, options_.node_heartbeat_grace),
      caches_(std::make_unique<Caches>(index_)) {
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  for (const std::string& ns : namespaces) {
    watch_leases(ns);
    watch_pods(ns);
  }
  watch_nodes();
  if (options_.node_heartbeat_grace > Millis(0)) watch_node_heartbeats();
}

kube::InformerOptions Controller::informer_options(const std::string& ns, const char* resource) {
  kube::InformerOptions options;
  options.ns = ns;
  options.on_restart = [this, resource](kube::RestartReason reason) {
    if (options_.on_watch_restart) options_.on_watch_restart(resource, reason);
  };
  return options;
}

void Controller::watch_leases(const std::string& ns) {
  kube::RecordHandlers<LeaseRecord> handlers;
  handlers.on_add = [this, ns](const LeaseRecord& lease) {
    warn_if_too_short(lease);
    // A claim the watch brings arrives now, in the order the API server created it: its
    // place in the queue among claims created in the same second (one a list brings arrived
    // in on_listed, which the index keeps).
    const LeaseInformer& informer = *caches_->leases.at(ns);
    if (informer.has_synced() && lease.status.phase == Phase::kNone && !lease.status.queued_at)
      index_.arrived(lease.meta.uid, clock_.now());
    enqueue(index_.lease_changed(nullptr, &lease));
  };
  handlers.on_listed = [this, ns](const std::vector<const LeaseRecord*>& added) {
    // Claims made while no controller watched (before it started, or while its watch was
    // down) stand in the order they were made, not in the list's.
    std::vector<ClaimIndex::Unqueued> unqueued;
    for (const LeaseRecord* lease : added)
      if (lease->status.phase == Phase::kNone && !lease->status.queued_at && !lease->being_deleted)
        unqueued.push_back({lease->meta.uid, lease->meta.name, lease->creation_time,
                            lease->meta.resource_version, lease->lock_ids()});
    // The informer has synced once its first list is in: any later list is a re-list.
    index_.listed_unqueued(std::move(unqueued), caches_->leases.at(ns)->has_synced());
  };
  handlers.on_update = [this](const LeaseRecord& before, const LeaseRecord& now) {
    {
      std::lock_guard lock(term_mutex_);
      if (term_) term_->reconciler().lease_seen(now.meta.uid, now.meta.resource_version);
    }
    enqueue(index_.lease_changed(&before, &now));
  };
  handlers.on_delete = [this](const LeaseRecord& lease) {
    enqueue(index_.lease_changed(&lease, nullptr));
    std::lock_guard lock(term_mutex_);
    if (term_) term_->reconciler().forget_lease(lease.meta.uid);
  };
  caches_->leases[ns] =
      std::make_unique<LeaseInformer>(api_, clock_, kube::resources::eslease_leases(),
                                      informer_options(ns, "leases"), handlers, decode_lease);
}

// A Lease so short that `eslease run` with its default --grace and --safety-margin would be
// stopped by a renewal pause this controller's settings allow (a failover). Said in the log
// for the first few such Leases only: a namespace full of them is one mistake, not thousands.
void Controller::warn_if_too_short(const LeaseRecord& lease) {
  constexpr int kWarnings = 10;
  const Millis duration = api::lease_duration(lease.spec.lease_duration_seconds);
  const Millis slack = api::default_holder_slack(duration);
  if (slack >= options_.longest_renewal_pause) return;
  const int warned = short_leases_warned_.fetch_add(1);
  if (warned >= kWarnings) return;
  log::warn(
      "Lease too short to ride out a failover: `eslease run` stops its command for nothing when renewals "
      "pause",
      {{"lease", lease.meta.key()},
       {"leaseDurationSeconds", std::to_string(lease.spec.lease_duration_seconds)},
       {"ridesOut", format_duration(slack)},
       {"longestRenewalPause", format_duration(options_.longest_renewal_pause)}});
  if (warned + 1 == kWarnings) log::warn("further Leases too short to ride out a failover are not logged");
}

void Controller::watch_pods(const std::string& ns) {
  kube::RecordHandlers<PodRecord> handlers;
  handlers.on_add = [this](const PodRecord& pod) {
    tracker_.pod_seen(pod);
    enqueue(index_.locks_for_pod(nullptr, &pod));
  };
  handlers.on_update = [this](const PodRecord& before, const PodRecord& now) {
    tracker_.pod_seen(now);
    {
      std::lock_guard lock(term_mutex_);
      if (term_) term_->reconciler().pod_seen(now.meta.uid, now.meta.resource_version);
    }
    enqueue(index_.locks_for_pod(&before, &now));
  };
  handlers.on_delete = [this](const PodRecord& pod) {
    tracker_.pod_gone(pod);
    enqueue(index_.locks_for_pod(&pod, nullptr));
    std::lock_guard lock(term_mutex_);
    if (term_) term_->reconciler().forget_pod(pod.meta.uid);
  };
  caches_->pods[ns] = std::make_unique<PodInformer>(api_, clock_, kube::resources::pods(),
                                                    informer_options(ns, "pods"), handlers, decode_pod);
}

void Controller::watch_nodes() {
  kube::RecordHandlers<NodeRecord> handlers;
  handlers.on_add = [this](const NodeRecord& node) {
    tracker_.node_seen(node);
    if (node.ready != ReadyState::kTrue) node_changed(node.meta.name);
  };
  handlers.on_update = [this](const NodeRecord& before, const NodeRecord& now) {
    tracker_.node_seen(now);
    if (before.ready != now.ready) node_changed(now.meta.name);
  };
  handlers.on_delete = [this](const NodeRecord& node) {
    tracker_.node_gone(node);
    node_changed(node.meta.name);
  };
  caches_->nodes = std::make_unique<NodeInformer>(api_, clock_, kube::resources::nodes(),
                                                  informer_options("", "nodes"), handlers, decode_node);
}

void Controller::watch_node_heartbeats() {
  kube::RecordHandlers<NodeLeaseRecord> handlers;
  handlers.on_add = [this](const NodeLeaseRecord& lease) { tracker_.node_heartbeat(lease); };
  handlers.on_update = [this](const NodeLeaseRecord&, const NodeLeaseRecord& now) {
    tracker_.node_heartbeat(now);
  };
  handlers.on_delete = [this](const NodeLeaseRecord& lease) { tracker_.node_heartbeat_gone(lease); };
  kube::InformerOptions options = informer_options(kNodeLeaseNamespace, "node leases");
  caches_->node_leases = std::make_unique<NodeLeaseInformer>(
      api_, clock_, kube::resources::coordination_leases(), options, handlers, decode_node_lease);
}

// A node that stops heartbeating, or beats again, concerns the locks of the pods on it. Its
// silence is a matter of time passing, not of an event: this looks when the next node may
// turn silent, and at least every second.
void Controller::watch_for_silent_nodes(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::optional<MonoTime> next_check;
    for (const std::string& node : tracker_.nodes_whose_heartbeat_changed(clock_.monotonic(), next_check)) {
      log::info("node heartbeat changed", {{"node", node}});
      node_changed(node);
    }
    Millis wait(1000);
    if (next_check)
      wait = std::clamp(std::chrono::ceil<Millis>(*next_check - clock_.monotonic()), Millis(1), wait);
    clock_.sleep_for(wait, stop);
  }
}

// A node's readiness concerns every lock of the pods on it.
void Controller::node_changed(const std::string& node) {
  std::vector<std::string> locks;
  for (const auto& [ns, informer] : caches_->pods) {
    std::vector<PodRecord> on_node;
    informer->cache().for_each([&](const std::string&, const PodRecord& pod) {
      if (pod.node_name == node) on_node.push_back(pod);
    });
    for (const PodRecord& pod : on_node) {
      auto more = index_.locks_for_pod(nullptr, &pod);
      locks.insert(locks.end(), more.begin(), more.end());
    }
  }
  enqueue(locks);
}

Controller::~Controller() = default;

bool Controller::synced() const {
  return caches_->synced();
}

void Controller::enqueue(const std::vector<std::string>& lock_ids) {
  if (lock_ids.empty()) return;
  std::lock_guard lock(term_mutex_);
  if (!term_) return;  // a standby: the next leader reconciles everything anyway
  for (const std::string& id : lock_ids) term_->add(id);
}

void Controller::backend_returned() {
  enqueue(index_.locks());
}

const ClusterView& Controller::cluster() const {
  return *caches_;
}

void Controller::lead(std::stop_token stop) {
  LeadershipTerm term(*caches_, index_, tracker_, store_, api_, events_, observer_, clock_, options_);
  {
    std::lock_guard lock(term_mutex_);
    term_ = &term;
  }
  leading_.store(true);
  observer_.leading(true);
  // Tokens never go backwards: before the first grant, the lock index is checked against the
  // tokens the Leases show. A failure leaves grants refused until a later check succeeds.
  if (Status checked = store_.check_tokens([this] { return issued_before(*caches_); }); !checked.ok())
    log::warn("fencing tokens unchecked at the start of leadership; grants wait",
              {{"error", checked.error().describe()}});
  log::info("leading: reconciling locks", {{"locks", index_.locks().size()}});
  std::jthread heartbeats;
  if (caches_->node_leases)
    heartbeats = std::jthread([this](std::stop_token s) {
      name_this_thread("heartbeats");
      watch_for_silent_nodes(s);
    });
  term.run(stop, index_.locks());
  heartbeats.request_stop();
  {
    std::lock_guard lock(term_mutex_);
    term_ = nullptr;
  }
  leading_.store(false);
  observer_.leading(false);
  log::info("stopped leading");
}

Status Controller::run(std::stop_token stop) {
  for (auto& [ns, informer] : caches_->leases) informer->start();
  for (auto& [ns, informer] : caches_->pods) informer->start();
  caches_->nodes->start();
  if (caches_->node_leases) caches_->node_leases->start();
  // Reconciling before the caches hold the world would grant locks to the wrong claims.
  if (!caches_->wait_for_sync(stop)) return {};
  log::info("caches synced");

  if (!options_.leader_elect) {
    lead(stop);
    return {};
  }
  kube::LeaderElectionConfig config = options_.leader_election;
  config.release_on_cancel = true;
  config.callbacks.on_started_leading = [this](std::stop_token s) { lead(s); };
  config.callbacks.on_new_leader = [](const std::string& identity) {
    log::info("leader observed", {{"identity", identity}});
  };
  auto elector = kube::LeaderElector::create(api_, clock_, config);
  if (!elector.ok()) return elector.error();
  while (!stop.stop_requested()) (*elector)->run(stop);
  return {};
}

}  // namespace eslease::controller
