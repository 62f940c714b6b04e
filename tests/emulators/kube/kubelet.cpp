#include "emulators/kube/kubelet.h"

#include <algorithm>
#include <random>

#include "common/log.h"
#include "common/text.h"
#include "emulators/kube/kubelet_detail.h"
#include "emulators/kube/object_meta.h"

namespace eslease::kubeemu {

using nlohmann::json;
using namespace kubelet_detail;

SimulatedKubelet::SimulatedKubelet(KubeletOptions options, std::mutex& api_mutex, ObjectStore& store,
                                   Clock& clock)
    : options_(options),
      api_mutex_(api_mutex),
      store_(store),
      clock_(clock),
      nodes_(simulated_node_names(options_)),
      lifecycle_(options_.node_monitor_grace_period) {}

SimulatedKubelet::~SimulatedKubelet() {
  stop();
}

void SimulatedKubelet::start() {
  {
    std::lock_guard lock(api_mutex_);
    store_.set_observer("kubelet", [this](const EventPtr& event) { observe(event); });
    // Pods stored before the kubelet started are reconciled as if they had just changed.
    std::lock_guard queue(queue_mutex_);
    for (const char* id : {kNodesId, kPodsId}) {
      for (const auto& object : store_.list(id, "")) {
        auto event = std::make_shared<WatchEvent>();
        event->type = "ADDED";
        event->resource_id = id;
        event->ns = string_at(member(*object, "metadata"), "namespace");
        event->object = object;
        events_.push_back(std::move(event));
      }
    }
    // Each kubelet creates its node Lease as it starts, then renews it; the node lifecycle
    // controller starts monitoring. The thread does not run yet, so the timers are ours.
    const MonoTime now = clock_.monotonic();
    for (const auto& node : nodes_) {
      agents_[node].status_posted = now;
      renew_node_lease(store_, node, clock_.now());
      timers_.emplace(now + options_.node_lease_renew_interval, Timer{Step::kHeartbeat, node, ""});
    }
    timers_.emplace(now + options_.node_monitor_period, Timer{Step::kMonitor, "", ""});
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
}

void SimulatedKubelet::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(api_mutex_);
    store_.set_observer("kubelet", nullptr);
  }
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void SimulatedKubelet::observe(const EventPtr& event) {
  if (event->resource_id != kPodsId && event->resource_id != kNodesId) return;
  {
    std::lock_guard lock(queue_mutex_);
    events_.push_back(event);
  }
  wake_.notify_one();
}

void SimulatedKubelet::run(std::stop_token stop) {
  std::unique_lock lock(queue_mutex_);
  while (!stop.stop_requested()) {
    // Bounded so the wait never converts an unrepresentable time point.
    auto until = clock_.monotonic() + std::chrono::hours(1);
    if (!timers_.empty()) until = std::min(until, timers_.begin()->first);
    clock_.wait_until(lock, wake_, until, stop, [&] { return !events_.empty() || !poked_.empty(); });
    if (stop.stop_requested()) break;
    std::vector<EventPtr> events;
    events.swap(events_);
    std::set<std::string> poked;
    poked.swap(poked_);
    lock.unlock();
    std::vector<Timer> due;
    const MonoTime fired = clock_.monotonic();
    while (!timers_.empty() && timers_.begin()->first <= fired) {
      due.push_back(std::move(timers_.begin()->second));
      timers_.erase(timers_.begin());
    }
    if (!events.empty() || !poked.empty() || !due.empty()) {
      std::lock_guard api(api_mutex_);
      process(events, poked, due);
    }
    lock.lock();
  }
}

void SimulatedKubelet::process(const std::vector<EventPtr>& events, const std::set<std::string>& poked,
                               const std::vector<Timer>& due) {
  std::set<std::string> pods;
  std::set<std::string> nodes = poked;
  for (const auto& event : events) {
    const std::string name = meta_string(*event->object, "name");
    if (event->resource_id == kNodesId) {
      nodes.insert(name);
    } else {
      pods.insert(ObjectStore::key_of(event->ns, name));
    }
  }
  // Every step stands alone: odd objects must not stop the kubelet, and a thrown
  // json::exception must not end the thread.
  auto guarded = [](const auto& step) {
    try {
      step();
    } catch (const std::exception& e) {
      log::warn("simulated kubelet skipped a step", {{"error", e.what()}});
    }
  };

  for (const auto& node : nodes) guarded([&] { reconcile_node(node); });
  for (const auto& key : pods) guarded([&] { reconcile_pod(key, false); });
  for (const auto& timer : due) guarded([&] { fire(timer); });
}

ObjectPtr SimulatedKubelet::pod_at(const std::string& key) const {
  auto slash = key.find('/');
  if (slash == std::string::npos) return nullptr;
  return store_.get(kPodsId, key.substr(0, slash), key.substr(slash + 1));
}

bool SimulatedKubelet::simulated(const std::string& node) const {
  return std::find(nodes_.begin(), nodes_.end(), node) != nodes_.end();
}

bool SimulatedKubelet::kubelet_up(const std::string& node) const {
  auto it = agents_.find(node);
  return it != agents_.end() && it->second.connected && it->second.powered;
}

bool SimulatedKubelet::node_is_ready(const std::string& name) const {
  auto node = store_.get(kNodesId, "", name);
  return node && node_ready_status(*node) == "True";
}

void SimulatedKubelet::arm(Step step, const std::string& key, const std::string& uid, MonoTime at) {
  if (step != Step::kKill) {
    auto [it, fresh] = armed_.try_emplace({step, key}, uid);
    if (!fresh && it->second == uid) return;
    it->second = uid;
  }
  timers_.emplace(at, Timer{step, key, uid});
}

void SimulatedKubelet::reconcile_node(const std::string& name) {
  if (!simulated(name)) return;
  const bool ready = node_is_ready(name);
  // Collected first: reconciling writes to the store being scanned.
  std::vector<std::string> keys;
  store_.scan(kPodsId, "", "", [&](const ObjectPtr& pod) {
    const std::string node = node_of(*pod);
    if (node == name || (ready && node.empty())) {
      keys.push_back(ObjectStore::key_of(meta_string(*pod, "namespace"), meta_string(*pod, "name")));
    }
    return true;
  });
  for (const auto& key : keys) reconcile_pod(key, true);
}

void SimulatedKubelet::reconcile_pod(const std::string& key, bool cluster_changed) {
  auto pod = pod_at(key);
  if (!pod) return;
  const json& p = *pod;
  const std::string uid = meta_string(p, "uid");
  const MonoTime now = clock_.monotonic();
  if (deleting(p)) {
    const auto grace = int_at(member(p, "metadata"), "deletionGracePeriodSeconds");
    if (!grace || *grace <= 0) return;  // removed by the API server or held by finalizers
    // Only a kubelet that is there to stop the containers ends a graceful deletion: on a
    // node without one, or one that stopped posting, the pod stays Terminating.
    if (!kubelet_up(node_of(p))) return;
    const auto wait = options_.termination_wait(*grace);
    auto it = terminating_.find(key);
    if (it == terminating_.end() || it->second.uid != uid) {
      terminating_[key] = Termination{uid, now, now + wait};
      arm(Step::kKill, key, uid, now + wait);
    } else if (it->second.started + wait < it->second.due) {
      // The grace period was shortened: the containers stop sooner.
      it->second.due = it->second.started + wait;
      arm(Step::kKill, key, uid, std::max(now, it->second.due));
    }
    return;
  }
  const std::string phase = phase_of(p);
  if (terminal(phase)) return;
  const std::string node = node_of(p);
  const bool pending = phase.empty() || phase == "Pending";
  if (node.empty()) {
    // An Unschedulable pod waits for a node to become Ready, as the scheduler's queue does.
    const bool unschedulable = condition_status(member(p, "status"), "PodScheduled") == "False";
    if (pending && (cluster_changed || !unschedulable))
      arm(Step::kBind, key, uid, now + options_.schedule_delay);
    return;
  }
  if (!simulated(node)) return;  // no kubelet runs there: the pod stays as it is
  const bool node_ready = node_is_ready(node);
  if (!kubelet_up(node)) {
    // Its kubelet cannot report: only the node lifecycle controller's MarkPodsNotReady
    // reaches the pod.
    if (phase == "Running" && !node_ready) sync_ready(p, false);
    return;
  }
  if (pending) {
    if (node_ready) arm(Step::kStart, key, uid, now + options_.start_delay);
    return;
  }
  if (phase == "Running") sync_ready(p, node_ready);
}

void SimulatedKubelet::fire(const Timer& timer) {
  const MonoTime now = clock_.monotonic();
  if (timer.step == Step::kHeartbeat) {
    heartbeat(timer.key);
    timers_.emplace(now + options_.node_lease_renew_interval, timer);
    return;
  }
  if (timer.step == Step::kMonitor) {
    lifecycle_.monitor(store_, now, clock_.now());
    timers_.emplace(now + options_.node_monitor_period, timer);
    return;
  }
  if (timer.step != Step::kKill) {
    auto it = armed_.find({timer.step, timer.key});
    if (it != armed_.end() && it->second == timer.uid) armed_.erase(it);
  }
  auto pod = pod_at(timer.key);
  const bool same = pod && meta_string(*pod, "uid") == timer.uid;
  switch (timer.step) {
    case Step::kBind:
      if (same) bind(*pod);
      break;
    case Step::kStart:
      if (same) start_containers(*pod);
      break;
    case Step::kKill: {
      auto it = terminating_.find(timer.key);
      // A timer of an earlier, longer grace period, or of a pod since replaced.
      if (it == terminating_.end() || it->second.uid != timer.uid || clock_.monotonic() < it->second.due) {
        break;
      }
      terminating_.erase(it);
      // Unreachable since: the kubelet starts over when it is back (reconcile_node).
      if (!same || !deleting(*pod) || !kubelet_up(node_of(*pod))) break;
      const auto grace = int_at(member(*pod, "metadata"), "deletionGracePeriodSeconds");
      // The containers have stopped: the kubelet's final DELETE with grace 0.
      if (grace && *grace > 0) delete_pod(store_, pod, 0, clock_.now());
      break;
    }
    case Step::kHeartbeat:
    case Step::kMonitor:
      break;  // node steps, done above
  }
  reconcile_pod(timer.key, false);
}

void SimulatedKubelet::bind(const json& pod) {
  if (deleting(pod) || !node_of(pod).empty()) return;
  if (const std::string phase = phase_of(pod); !phase.empty() && phase != "Pending") return;
  if (pod.contains("spec") && !pod["spec"].is_object()) return;
  std::string chosen;
  std::size_t ready = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const std::size_t index = (next_node_ + i) % nodes_.size();
    auto node = store_.get(kNodesId, "", nodes_[index]);
    if (!node || node_ready_status(*node) != "True") continue;
    ++ready;
    const json& unschedulable = member(member(*node, "spec"), "unschedulable");
    if (unschedulable.is_boolean() && unschedulable.get<bool>()) continue;
    if (chosen.empty()) {
      chosen = nodes_[index];
      next_node_ = index + 1;
    }
  }
  json next = pod;
  json& status = object_at(next, "status");
  const WallTime now = clock_.now();
  if (chosen.empty()) {
    const std::string total = std::to_string(nodes_.size());
    const std::string message =
        ready == 0 ? "0/" + total + " nodes are available: " + total + " node(s) were not ready."
                   : "0/" + total + " nodes are available: " + std::to_string(ready) +
                         " node(s) were unschedulable.";
    set_condition(status, "PodScheduled", "False", "Unschedulable", message, now);
  } else {
    object_at(next, "spec")["nodeName"] = chosen;
    set_condition(status, "PodScheduled", "True", "", "", now);
  }
  if (next != pod) {
    store_.put(kPodsId, meta_string(pod, "namespace"), meta_string(pod, "name"), std::move(next));
  }
}

void SimulatedKubelet::start_containers(const json& pod) {
  if (deleting(pod)) return;
  if (const std::string phase = phase_of(pod); !phase.empty() && phase != "Pending") return;
  const std::string node = node_of(pod);
  if (!simulated(node) || !node_is_ready(node) || !kubelet_up(node)) return;
  const WallTime now = clock_.now();
  const std::string t = now_text(now);
  const int index = node_index(node);
  const int serial = pod_ips_[node]++;
  const std::string pod_ip = "10.244." + std::to_string(index) + "." + std::to_string(2 + serial % 250);
  json next = pod;
  json& status = object_at(next, "status");
  status["phase"] = "Running";
  set_condition(status, "PodReadyToStartContainers", "True", "", "", now);
  set_condition(status, "Initialized", "True", "", "", now);
  set_condition(status, "ContainersReady", "True", "", "", now);
  set_condition(status, "Ready", node_is_ready(node) ? "True" : "False", "", "", now);
  set_condition(status, "PodScheduled", "True", "", "", now);
  order_pod_conditions(status);
  status["hostIP"] = node_ip(index);
  status["hostIPs"] = {{{"ip", node_ip(index)}}};
  status["podIP"] = pod_ip;
  status["podIPs"] = {{{"ip", pod_ip}}};
  status["startTime"] = t;
  json statuses = json::array();
  const json& containers = member(member(pod, "spec"), "containers");
  if (containers.is_array()) {
    for (const auto& c : containers) {
      const std::string name = string_at(c, "name");
      if (name.empty()) continue;
      const std::string image = string_at(c, "image");
      statuses.push_back({{"name", name},
                          {"image", image},
                          {"imageID", image},
                          {"containerID", "containerd://" + random_hex(64)},
                          {"ready", true},
                          {"started", true},
                          {"restartCount", 0},
                          {"state", {{"running", {{"startedAt", t}}}}},
                          {"lastState", json::object()}});
    }
  }
  if (!statuses.empty()) status["containerStatuses"] = std::move(statuses);
  store_.put(kPodsId, meta_string(pod, "namespace"), meta_string(pod, "name"), std::move(next));
}

void SimulatedKubelet::sync_ready(const json& pod, bool node_ready) {
  const json& status = member(pod, "status");
  const bool containers_ready = condition_status(status, "ContainersReady") != "False";
  const std::string want = node_ready && containers_ready ? "True" : "False";
  if (condition_status(status, "Ready") == want) return;
  json next = pod;
  json& next_status = object_at(next, "status");
  if (want == "True") {
    set_condition(next_status, "Ready", "True", "", "", clock_.now());
  } else if (!containers_ready) {
    set_condition(next_status, "Ready", "False", "ContainersNotReady", unready_message(pod), clock_.now());
  } else {
    // MarkPodsNotReady: only the status flips, the reason stays.
    set_condition(next_status, "Ready", "False", std::nullopt, std::nullopt, clock_.now());
  }
  store_.put(kPodsId, meta_string(pod, "namespace"), meta_string(pod, "name"), std::move(next));
}

}  // namespace eslease::kubeemu
