// The simulated kubelet (--simulate-kubelet): what a real cluster's scheduler, kubelets and
// node lifecycle controller do to pods and nodes, as seen through the API. A created pod is
// bound to a node, then becomes Running and Ready; a gracefully deleted pod is removed once
// its (optionally scaled) grace period has run out; a node that is not Ready takes the Ready
// condition of its pods with it.
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
#include <vector>

#include "common/clock.h"
#include "emulators/kube/api_status.h"
#include "emulators/kube/object_store.h"

namespace eslease::kubeemu {

struct KubeletOptions {
  int nodes = 3;                                       // node-1 .. node-N, created Ready at start
  std::chrono::milliseconds schedule_delay{2};         // created -> bound to a node (PodScheduled)
  std::chrono::milliseconds start_delay{5};            // bound -> Running and Ready
  double grace_scale = 1.0;                            // multiplies the grace period the kubelet waits
  std::optional<std::chrono::milliseconds> max_grace;  // and caps it
  // How long the simulated containers take to stop after a graceful delete of `seconds`.
  std::chrono::milliseconds termination_wait(std::int64_t seconds) const;
};

// The names of the simulated nodes: node-1 .. node-N.
std::vector<std::string> simulated_node_names(const KubeletOptions& options);
// A Ready node as a kubelet registers it.
nlohmann::json make_node(const std::string& name, int index, WallTime now);

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
// `status` is "True", "False" or "Unknown"; the taints follow as the node lifecycle
// controller sets them.
void set_node_ready(nlohmann::json& node, const std::string& status, WallTime now);
// The status of a node's Ready condition; "Unknown" when absent.
std::string node_ready_status(const nlohmann::json& node);

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

 private:
  enum class Step { kBind, kStart, kKill };
  struct Timer {
    Step step;
    std::string key;  // "<namespace>/<name>"
    std::string uid;
  };
  struct Termination {
    std::string uid;
    MonoTime started;
    MonoTime due;
  };

  void observe(const EventPtr& event);
  void run(std::stop_token stop);
  // The work of one wake-up, with api_mutex held.
  void process(const std::vector<EventPtr>& events, const std::vector<Timer>& due);
  void reconcile_pod(const std::string& key, bool cluster_changed);
  void reconcile_node(const std::string& name);
  void fire(const Timer& timer);
  void arm(Step step, const std::string& key, const std::string& uid, MonoTime at);

  void bind(const nlohmann::json& pod);
  void start_containers(const nlohmann::json& pod);
  void sync_ready(const nlohmann::json& pod, bool node_ready);
  bool node_is_ready(const std::string& name) const;
  // A simulated node whose kubelet still posts status (Ready True or False, not Unknown).
  bool node_is_reachable(const std::string& name) const;
  bool simulated(const std::string& node) const;
  ObjectPtr pod_at(const std::string& key) const;

  const KubeletOptions options_;
  std::mutex& api_mutex_;
  ObjectStore& store_;
  Clock& clock_;
  const std::vector<std::string> nodes_;

  // Guards events_ and wakes the thread: the observer runs on writer threads.
  std::mutex queue_mutex_;
  std::condition_variable_any wake_;
  std::vector<EventPtr> events_;

  // Owned by the kubelet thread alone.
  std::multimap<MonoTime, Timer> timers_;
  std::map<std::pair<Step, std::string>, std::string> armed_;  // (step, key) -> uid
  std::map<std::string, Termination> terminating_;             // key -> the pending kill
  std::size_t next_node_ = 0;                                  // round-robin scheduling
  std::map<std::string, int> pod_ips_;                         // node -> pods started there

  std::jthread thread_;
};

}  // namespace eslease::kubeemu
