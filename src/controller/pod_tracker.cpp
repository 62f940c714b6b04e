#include "controller/pod_tracker.h"

#include <algorithm>
#include <vector>

namespace eslease::controller {
namespace {

// Deaths are remembered long enough to time the takeover they cause.
constexpr auto kDeathMemory = std::chrono::minutes(5);

bool finished(const PodRecord& pod) {
  return pod.phase == "Failed" || pod.phase == "Succeeded";
}

}  // namespace

void PodTracker::pod_seen(const PodRecord& pod) {
  const MonoTime now = clock_.monotonic();
  std::lock_guard lock(mutex_);
  const std::string key = pod.meta.key();
  PodMemory& memory = pods_[key];
  if (memory.uid != pod.meta.uid) {
    if (!memory.uid.empty()) record_death(key, memory.uid, now);  // replaced under the same name
    memory = PodMemory{};
    memory.uid = pod.meta.uid;
    memory.started_at = now;
  }
  if (!memory.scheduled && !pod.node_name.empty()) {
    memory.scheduled = true;
    memory.started_at = now;  // a pod only starts once it is bound to a node
  }
  if (pod.shows_was_ready || pod.ready == ReadyState::kTrue) memory.was_ready = true;
  const bool unready = memory.was_ready && pod.ready != ReadyState::kTrue;
  if (!unready) {
    memory.unready_since.reset();
  } else if (!memory.unready_since) {
    memory.unready_since = now;
  }
  if (finished(pod) && !memory.finished_at) memory.finished_at = now;
  if (deaths_.size() > 1024) forget_old_deaths(now);
}

void PodTracker::pod_gone(const PodRecord& pod) {
  const MonoTime now = clock_.monotonic();
  std::lock_guard lock(mutex_);
  const std::string key = pod.meta.key();
  auto it = pods_.find(key);
  if (it != pods_.end() && it->second.uid == pod.meta.uid) pods_.erase(it);
  record_death(key, pod.meta.uid, now);
}

void PodTracker::node_seen(const NodeRecord& node) {
  const MonoTime now = clock_.monotonic();
  std::lock_guard lock(mutex_);
  std::optional<MonoTime>& since = nodes_[node.meta.name];
  if (node.ready != ReadyState::kFalse) {
    since.reset();
  } else if (!since) {
    since = now;
  }
}

void PodTracker::node_gone(const NodeRecord& node) {
  std::lock_guard lock(mutex_);
  nodes_.erase(node.meta.name);
}

PodState PodTracker::state_of(const PodRecord& pod) const {
  PodState state = observed(pod);
  state.record = pod;
  return state;
}

bool PodTracker::grantable(const PodRecord& pod) const {
  return controller::grantable(pod, observed(pod));
}

PodState PodTracker::observed(const PodRecord& pod) const {
  PodState state;
  std::lock_guard lock(mutex_);
  auto memory = pods_.find(pod.meta.key());
  const bool remembered = memory != pods_.end() && memory->second.uid == pod.meta.uid;
  state.was_ready =
      pod.shows_was_ready || pod.ready == ReadyState::kTrue || (remembered && memory->second.was_ready);
  if (remembered) {
    state.unready_since = memory->second.unready_since;
    state.finished_seen_at = memory->second.finished_at;
    if (!state.was_ready) state.never_ready_since = memory->second.started_at;
  }
  if (auto beat = heartbeats_.find(pod.node_name); beat != heartbeats_.end())
    state.node_silent_since = silent_since(beat->second);
  if (auto node = nodes_.find(pod.node_name); node != nodes_.end() && node->second) {
    state.node_ready = false;
    if (!state.unready_since || *node->second < *state.unready_since) state.unready_since = node->second;
  }
  return state;
}

void PodTracker::node_heartbeat(const NodeLeaseRecord& lease) {
  const MonoTime now = clock_.monotonic();
  std::lock_guard lock(mutex_);
  Heartbeat& beat = heartbeats_[lease.meta.name];
  // A heartbeat is timed from when we saw it, never from the kubelet's clock.
  if (beat.seen_at == MonoTime{} || beat.renew_time != lease.renew_time) {
    beat.renew_time = lease.renew_time;
    beat.seen_at = now;
  }
}

void PodTracker::node_heartbeat_gone(const NodeLeaseRecord& lease) {
  std::lock_guard lock(mutex_);
  heartbeats_.erase(lease.meta.name);
}

std::optional<MonoTime> PodTracker::silent_since(const Heartbeat& beat) const {
  if (heartbeat_grace_ <= Millis(0)) return std::nullopt;
  const MonoTime silent_at = beat.seen_at + heartbeat_grace_;
  if (clock_.monotonic() < silent_at) return std::nullopt;
  return silent_at;
}

std::vector<std::string> PodTracker::nodes_whose_heartbeat_changed(MonoTime now,
                                                                   std::optional<MonoTime>& next_check) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> changed;
  for (auto& [node, beat] : heartbeats_) {
    const bool silent = heartbeat_grace_ > Millis(0) && now >= beat.seen_at + heartbeat_grace_;
    if (!silent && heartbeat_grace_ > Millis(0)) {
      const MonoTime at = beat.seen_at + heartbeat_grace_;
      if (!next_check || at < *next_check) next_check = at;
    }
    if (silent != beat.reported_silent) changed.push_back(node);
    beat.reported_silent = silent;
  }
  return changed;
}

std::optional<MonoTime> PodTracker::death_seen_at(const std::string& pod_key) const {
  std::lock_guard lock(mutex_);
  if (auto it = deaths_.find(pod_key); it != deaths_.end()) return it->second.at;
  if (auto it = pods_.find(pod_key); it != pods_.end()) return it->second.finished_at;
  return std::nullopt;
}

bool PodTracker::saw_gone(const std::string& pod_key, const std::string& uid) const {
  std::lock_guard lock(mutex_);
  auto it = deaths_.find(pod_key);
  return it != deaths_.end() && (uid.empty() || it->second.uid == uid);
}

void PodTracker::record_death(const std::string& key, const std::string& uid, MonoTime now) {
  deaths_[key] = Death{now, uid};
  death_order_.emplace_back(now, key);
  // A name that dies again and again leaves its earlier deaths in the order: they are
  // dropped once they outnumber the deaths remembered.
  if (death_order_.size() > 2 * deaths_.size() + 1024) {
    std::vector<std::pair<MonoTime, std::string>> order;
    order.reserve(deaths_.size());
    for (const auto& [name, death] : deaths_) order.emplace_back(death.at, name);
    std::sort(order.begin(), order.end());
    death_order_.assign(order.begin(), order.end());
  }
}

// Past 1,024 deaths, those older than kDeathMemory go. The monotonic clock records them in
// order, so they are at the front; a key that died again since keeps its later death.
void PodTracker::forget_old_deaths(MonoTime now) {
  while (!death_order_.empty() && now - death_order_.front().first > kDeathMemory) {
    const auto& [at, key] = death_order_.front();
    if (auto it = deaths_.find(key); it != deaths_.end() && it->second.at == at) deaths_.erase(it);
    death_order_.pop_front();
  }
}

}  // namespace eslease::controller
