// Kubernetes mode's hold for `run`: the controller renews every grant of a namespace with
// one heartbeat, the namespace's session (api/session.h), and no longer writes the Lease on
// renewal. This follows the Lease and the session with two watches on their own threads and
// tells the supervisor when the grant has ended (the Lease is no longer Held with our token,
// was replaced or is gone, or the session lists the grant as revoked) and until when it is
// confirmed: the validity the latest session version publishes, less the safety margin, on
// this process's monotonic clock. When the command has ended the tool marks the Lease as
// released by its holder and deletes it, so the controller hands the lock over at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/lease_client.h"
#include "cli/supervisor.h"
#include "common/clock.h"
#include "kube/api.h"

namespace eslease::cli {

class LeaseHold : public Hold {
 public:
  // Waits until a session version gives the grant a validity that ends later than `needed`
  // from now. An error says why not: the grant ended first, the session cannot be read (403:
  // the workload lacks the rights), or none came within `limit`.
  virtual Status wait_until_confirmed(Millis needed, Millis limit) = 0;
};

// `held` is the Lease as wait_until_held returned it (phase Held); the grant is confirmed
// until `safety_margin` before the validity the session publishes ends.
std::unique_ptr<LeaseHold> make_lease_hold(kube::Api& api, Clock& clock, const nlohmann::json& held,
                                           const std::string& pod_uid, Millis safety_margin,
                                           Messages& messages);

}  // namespace eslease::cli
