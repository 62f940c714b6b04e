// What this controller has observed about pods and nodes over time, on its own monotonic
// clock: when a pod (or its node) went unready, whether a pod has ever been Ready and since
// when it has been there without, and when a pod was seen gone or finished. Liveness is
// judged from these observations, never from another machine's timestamps, and a restart
// only makes the controller wait longer.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "controller/liveness.h"
#include "controller/model.h"

namespace eslease::controller {

class PodTracker {
 public:
  // A node whose heartbeat has not been seen renewed for `heartbeat_grace` counts as silent
  // (0: heartbeats are not judged).
  explicit PodTracker(Clock& clock, Millis heartbeat_grace = Millis(0))
      : clock_(clock), heartbeat_grace_(heartbeat_grace) {}

  // Informer events.
  void pod_seen(const PodRecord& pod);
  void pod_gone(const PodRecord& pod);
  void node_seen(const NodeRecord& node);
  void node_gone(const NodeRecord& node);
  // The node's kubelet renewed its node Lease (a change of renewTime is a heartbeat), or the
  // Lease went (its node was removed).
  void node_heartbeat(const NodeLeaseRecord& lease);
  void node_heartbeat_gone(const NodeLeaseRecord& lease);

  // Nodes that turned silent, or began beating again, since the last call: the locks of the
  // pods on them need a look. When the next node may turn silent: `next_check`.
  std::vector<std::string> nodes_whose_heartbeat_changed(MonoTime now, std::optional<MonoTime>& next_check);

  // The pod joined with what was observed about it and its node.
  PodState state_of(const PodRecord& pod) const;
  // Whether a lock may be granted to the pod now (liveness' `grantable`), judged without
  // copying its record: a metrics scrape asks this of every waiting claim's pod.
  bool grantable(const PodRecord& pod) const;
  // When the pod named ns/name was seen gone, replaced or finished (for takeover latency).
  std::optional<MonoTime> death_seen_at(const std::string& pod_key) const;
  // This controller saw the pod ns/name with this UID go (deleted, or replaced under its
  // name); an empty UID asks about any pod of that name. Only such a sighting proves a pod
  // gone: a pod missing from the cache may be one the cache has not caught up with (a
  // paused process, a lagging watch), granted by another replica.
  bool saw_gone(const std::string& pod_key, const std::string& uid) const;

 private:
  struct PodMemory {
    std::string uid;
    bool was_ready = false;
    std::optional<MonoTime> unready_since;
    std::optional<MonoTime> finished_at;
    MonoTime started_at{};   // first seen, or seen bound to its node
    bool scheduled = false;  // seen with a node
  };
  // state_of without the record.
  PodState observed(const PodRecord& pod) const;
  struct Death {
    MonoTime at{};
    std::string uid;
  };
  void record_death(const std::string& key, const std::string& uid, MonoTime now);
  void forget_old_deaths(MonoTime now);

  // A node's heartbeat as seen: the renewTime last seen, when it was first seen (our clock),
  // and whether the node was last reported silent.
  struct Heartbeat {
    std::optional<WallTime> renew_time;
    MonoTime seen_at{};
    bool reported_silent = false;
  };
  std::optional<MonoTime> silent_since(const Heartbeat& beat) const;

  Clock& clock_;
  const Millis heartbeat_grace_;
  mutable std::mutex mutex_;
  std::map<std::string, Heartbeat> heartbeats_;           // by node name
  std::unordered_map<std::string, PodMemory> pods_;       // by ns/name
  std::map<std::string, std::optional<MonoTime>> nodes_;  // unready since, by node name
  std::unordered_map<std::string, Death> deaths_;         // pod key -> its last pod seen gone or replaced
  // Every death recorded, oldest first, so forgetting the old ones never scans the young.
  std::deque<std::pair<MonoTime, std::string>> death_order_;
};

}  // namespace eslease::controller
