// The simulated kubelet (--simulate-kubelet): what a real cluster's scheduler, kubelets and
// node lifecycle controller do to pods and nodes, as seen through the API. A created pod is
// bound to a node, then becomes Running and Ready; a gracefully deleted pod is removed once
// its (optionally scaled) grace period has run out; each node's kubelet renews its node Lease,
// and a node not heard from for the grace period is marked Unknown; a node that is not Ready
// takes the Ready condition of its pods with it. A node can be partitioned from the API server
// or powered off (see NodeChange).
//
// The API server's own part of the pod lifecycle (status reset on create, graceful
// deletion) is here too as plain functions, so the HTTP handlers and the kubelet share one
// implementation of it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "emulators/kube/api_status.h"
#include "emulators/kube/node_health.h"
#include "emulators/kube/object_store.h"

namespace eslease::kubeemu {

struct KubeletOptions {
  int nodes = 3;                                       // node-1 .. node-N, created Ready at start
  std::chrono::milliseconds schedule_delay{2};         // created -> bound to a node (PodScheduled)
  std::chrono::milliseconds start_delay{5};            // bound -> Running and Ready
  double grace_scale = 1.0;                            // multiplies the grace period the kubelet waits
  std::optional<std::chrono::milliseconds> max_grace;  // and caps it
  // The kubelet's node Lease renewal (nodeLeaseDurationSeconds 40 x 0.25), also how often it
  // checks its node status (nodeStatusUpdateFrequency).
  std::chrono::milliseconds node_lease_renew_interval{10'000};
  // kube-controller-manager's --node-monitor-grace-period and --node-monitor-period.
  std::chrono::milliseconds node_monitor_grace_period{50'000};
  std::chrono::milliseconds node_monitor_period{5'000};
  // How long the simulated containers take to stop after a graceful delete of `seconds`.
  std::chrono::milliseconds termination_wait(std::int64_t seconds) const;
};

// The names of the simulated nodes: node-1 .. node-N.
std::vector<std::string> simulated_node_names(const KubeletOptions& options);

// What the pod strategy does to a created pod's status: phase Pending and the QoS class.
void reset_created_pod_status(nlohmann::json& pod);

// The pod registry's DELETE once preconditions passed (rest.BeforeDelete with the pod
// strategy's CheckGracefulDelete, then the generic store): sets deletionTimestamp and
// deletionGracePeriodSeconds, shortens a pending grace period, or removes the pod when the
// grace period is zero and no finalizer is left. `grace` is DeleteOptions.gracePeriodSeconds.
struct PodDeletion {
  ObjectPtr object;  // the pod as stored, or its last state when removed
  bool removed = false;
};
PodDeletion delete_pod(ObjectStore& store, const ObjectPtr& current, std::optional<std::int64_t> grace,
                       WallTime now);

// The pod and node changes behind the /_emulator/kubelet/ admin endpoints. Each answers a
// 409 Conflict for a change the kubelet would never make (e.g. readiness of a pod that is not
// Running); the object is left as it was then.
std::optional<ApiError> set_pod_ready(nlohmann::json& pod, bool ready, bool node_ready, WallTime now);
std::optional<ApiError> end_pod(nlohmann::json& pod, const std::string& phase, const std::string& reason,
                                const std::string& message, std::optional<int> exit_code, WallTime now);
// A powered-on node's kubelet finds its pod's containers gone: it starts them again
// (restartCount + 1), or, with restartPolicy Never, the pod has Failed.
void restart_after_power_on(nlohmann::json& pod, bool node_ready, WallTime now);

// A change to a simulated node (POST /_emulator/kubelet/nodes/{name}), exactly one of:
// - ready "True" | "False": its kubelet posts that Ready status (and so is connected again);
//   "Unknown": as if the node lifecycle controller had already given up on a partitioned node;
// - network "partitioned" | "connected": its kubelet's heartbeats and status updates stop
//   reaching the API server (its containers keep running), or reach it again;
// - power "off" | "on": heartbeats stop and its containers stop (nothing of it reaches the
//   API); on again, its kubelet posts Ready, renews its Lease and restarts the containers.
struct NodeChange {
  std::string field;  // "ready", "network" or "power"
  std::string value;
};

// The scheduler, kubelets and node lifecycle controller as one background thread. It sees
// every pod and node change through a store observer and reconciles the objects it is
// responsible for; every change it makes is an ordinary store write under the API mutex, so
// watchers see MODIFIED and DELETED events with growing resourceVersions.
class SimulatedKubelet {
 public:
  // `api_mutex` guards `store`, as in ApiServer. Neither may be used by the kubelet after
  // stop() returned.
  SimulatedKubelet(KubeletOptions options, std::mutex& api_mutex, ObjectStore& store, Clock& clock);
  ~SimulatedKubelet();
  SimulatedKubelet(const SimulatedKubelet&) = delete;
  SimulatedKubelet& operator=(const SimulatedKubelet&) = delete;

  // Registers the store observer and starts the thread. Call without api_mutex held.
  void start();
  // Unregisters the observer and joins the thread; pending steps are dropped. Call without
  // api_mutex held (the thread may be waiting for it). Safe to call twice.
  void stop();

  const std::vector<std::string>& nodes() const { return nodes_; }
  // Whether the kubelet of `node` can reach the API server: a simulated node that is powered
  // and not partitioned. Call with api_mutex held.
  bool kubelet_up(const std::string& node) const;
  // Applies a NodeChange; answers the node as stored, 404 for a node that is not simulated,
  // 409 for a status from a node that is powered off. Call with api_mutex held.
  std::variant<nlohmann::json, ApiError> change_node(const std::string& name, const NodeChange& change);

 private:
  enum class Step { kBind, kStart, kKill, kHeartbeat, kMonitor };
  struct Timer {
    Step step;
    std::string key;  // "<namespace>/<name>" of a pod; a node's name for kHeartbeat
    std::string uid;
  };
  // The kubelet of one simulated node, as far as the API server can tell. Guarded by api_mutex.
  struct NodeAgent {
    bool connected = true;
    bool powered = true;
    bool rebooted = false;         // powered off since it last reached the API server
    std::string reports = "True";  // the Ready status it posts
    MonoTime status_posted{};      // when it last posted its node status
  };
  struct Termination {
    std::string uid;
    MonoTime started;
    MonoTime due;
  };

  void observe(const EventPtr& event);
  void run(std::stop_token stop);
  // The work of one wake-up, with api_mutex held.
  void process(const std::vector<EventPtr>& events, const std::set<std::string>& poked,
               const std::vector<Timer>& due);
  void reconcile_pod(const std::string& key, bool cluster_changed);
  void reconcile_node(const std::string& name);
  void fire(const Timer& timer);
  void arm(Step step, const std::string& key, const std::string& uid, MonoTime at);

  // The node side (kubelet_nodes.cpp): a kubelet's heartbeat tick, its status post, and what a
  // node coming back does.
  void heartbeat(const std::string& node);
  void post_node_status(const std::string& node, NodeAgent& agent);
  void come_back(const std::string& node, NodeAgent& agent);
  void restart_containers(const std::string& node);
  // Asks the kubelet thread to reconcile a node's pods (it wakes for store events only).
  void poke(const std::string& node);

  void bind(const nlohmann::json& pod);
  void start_containers(const nlohmann::json& pod);
  void sync_ready(const nlohmann::json& pod, bool node_ready);
  bool node_is_ready(const std::string& name) const;
  bool simulated(const std::string& node) const;
  ObjectPtr pod_at(const std::string& key) const;

  const KubeletOptions options_;
  std::mutex& api_mutex_;
  ObjectStore& store_;
  Clock& clock_;
  const std::vector<std::string> nodes_;

  std::map<std::string, NodeAgent> agents_;  // by node name; guarded by api_mutex_

  // Guards events_ and poked_, and wakes the thread: the observer runs on writer threads.
  std::mutex queue_mutex_;
  std::condition_variable_any wake_;
  std::vector<EventPtr> events_;
  std::set<std::string> poked_;  // nodes whose pods to reconcile

  // Owned by the kubelet thread alone.
  std::multimap<MonoTime, Timer> timers_;
  std::map<std::pair<Step, std::string>, std::string> armed_;  // (step, key) -> uid
  std::map<std::string, Termination> terminating_;             // key -> the pending kill
  std::size_t next_node_ = 0;                                  // round-robin scheduling
  std::map<std::string, int> pod_ips_;                         // node -> pods started there
  NodeLifecycleController lifecycle_;

  std::jthread thread_;
};

}  // namespace eslease::kubeemu
