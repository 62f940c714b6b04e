// Kubernetes mode's hold for `run`: the controller renews the lock and publishes each
// renewal as the Lease's status.expireTime; this follows the Lease with a watch on its own
// thread and tells the supervisor when the grant has ended (the Lease is no longer Held, was
// granted again with a new token, or is gone) and until when it is confirmed: the last
// expireTime seen, less the safety margin, on this process's monotonic clock. When the
// command has ended the Lease is deleted, so the controller releases the lock at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/lease_client.h"
#include "cli/supervisor.h"
#include "common/clock.h"
#include "kube/api.h"

namespace eslease::cli {

struct LeaseHoldOptions {
  Millis safety_margin{2000};
  Millis release_wait{10000};  // how long to wait for the controller to release at the end
};

// `held` is the Lease as wait_until_held returned it (phase Held).
std::unique_ptr<Hold> make_lease_hold(kube::Api& api, Clock& clock, const nlohmann::json& held,
                                      const std::string& pod_uid, const LeaseHoldOptions& options,
                                      Messages& messages);

}  // namespace eslease::cli
