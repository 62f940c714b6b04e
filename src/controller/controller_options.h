// What the running controller is told at start: which namespaces it watches, how many locks
// it reconciles at once, which behaviours are on, and how it elects a leader. Its defaults
// are the command line's defaults (config/controller_config.h takes them from here).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "api/session.h"
#include "kube/informer.h"
#include "kube/leader_election.h"

namespace eslease::controller {

struct ControllerOptions {
  std::vector<std::string> namespaces;  // empty: all
  int workers = 4;                      // locks reconciled at once
  bool liveness_takeover = true;        // a dead holder's lock moves at once, not at expiry
  bool holds_annotation = true;         // keep the eslease.io/holds annotation of holder pods
  bool leader_elect = false;
  // A holder whose node's heartbeat (its kubelet's node Lease) has not been seen renewed this
  // long is presumed dead (NodeLost). 0: heartbeats are not judged.
  Millis node_heartbeat_grace{std::chrono::seconds(12)};
  // How long session renewals may pause (config::longest_renewal_pause): a Lease whose
  // holder would not ride that out with `eslease run`'s defaults gets a warning in the log.
  Millis longest_renewal_pause = api::kDefaultRenewalPause;
  kube::LeaderElectionConfig leader_election;  // the controller sets the callbacks; its clock times it
  std::function<void(const std::string& resource, kube::RestartReason)> on_watch_restart;
};

}  // namespace eslease::controller
