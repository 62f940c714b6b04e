// A node's status and the two halves of Kubernetes' node heartbeat, as the simulated kubelet
// plays them.
//
// The status rules: a node as its kubelet registers it, the Ready status it posts, and what the
// node lifecycle controller writes of a node it stopped hearing from, with the taints.
//
// The kubelet's side: each node's `coordination.k8s.io/v1` Lease in `kube-node-lease`, named
// after the node and renewed every renew interval (the kubelet's nodelease controller, from
// k8s.io/component-helpers/apimachinery/lease, with the owner reference
// pkg/kubelet/util/nodelease.go sets).
//
// The control plane's side: kube-controller-manager's node lifecycle controller
// (pkg/controller/nodelifecycle), which every monitor period notes, on its own clock, when it
// last saw a node's Ready heartbeat or its Lease's renewTime move, and marks a node it has
// not heard from for the grace period Unknown.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "emulators/kube/object_store.h"

namespace eslease::kubeemu {

inline constexpr const char* kLeasesId = "coordination.k8s.io/leases";
inline constexpr const char* kNodeLeaseNamespace = "kube-node-lease";
// The kubelet's nodeLeaseDurationSeconds default; it renews every quarter of it.
inline constexpr int kNodeLeaseDurationSeconds = 40;

// A Ready node as a kubelet registers it.
nlohmann::json make_node(const std::string& name, int index, WallTime now);
// The status of a node's Ready condition; "Unknown" when absent.
std::string node_ready_status(const nlohmann::json& node);
// `status` is "True" or "False" (the kubelet posts it, with fresh heartbeats) or "Unknown"
// (mark_node_status_unknown); the taints follow as the node lifecycle controller sets them.
void set_node_ready(nlohmann::json& node, const std::string& status, WallTime now);
// What the node lifecycle controller writes of a node it stopped hearing from: Ready and the
// pressure conditions Unknown (heartbeats kept), the unreachable taints.
void mark_node_status_unknown(nlohmann::json& node, WallTime now);
// The kubelet's renewal of `node`'s Lease at `now`: created when missing (holderIdentity the
// node's name, leaseDurationSeconds 40, an ownerReference to the Node), else renewTime moved
// to `now`. Nothing when the Node object is gone (the kubelet's lease controller needs it).
void renew_node_lease(ObjectStore& store, const std::string& node, WallTime now);

// The node lifecycle controller's health monitoring (monitorNodeHealth / tryUpdateNodeHealth).
class NodeLifecycleController {
 public:
  explicit NodeLifecycleController(std::chrono::milliseconds grace_period) : grace_period_(grace_period) {}

  // One monitor pass over every Node at `now`: a node whose Ready heartbeat and Lease have not
  // moved for the grace period (since this controller saw them move) gets its kubelet-posted
  // conditions Unknown and the unreachable taints. Call with the API mutex held.
  void monitor(ObjectStore& store, MonoTime now, WallTime wall);

 private:
  struct Health {
    MonoTime probe;                   // when a heartbeat or renewal was last seen to move
    std::string heartbeat;            // the Ready condition's lastHeartbeatTime then
    std::optional<WallTime> renewed;  // the node Lease's renewTime then
  };

  const std::chrono::milliseconds grace_period_;
  std::map<std::string, Health> health_;  // by node name
};

}  // namespace eslease::kubeemu
