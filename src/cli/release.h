// `eslease release NAME` in Kubernetes mode. NAME is a Lease, or a lock as given to acquire
// (then this pod's claim on it); several names are a lock set as given to acquire. Only the holder releases
// at once: the tool run from the holder's own pod marks the grant released (eslease.io/released) before it
// deletes the Lease, so the controller hands the lock over in the same moment. From anywhere else the Lease
// is deleted without the mark, which the controller treats as a revocation: the lock moves once the validity
// published to the holder has ended, because the holder may still be running. --force writes the mark anyway.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/lease_client.h"
#include "cli/lease_view.h"
#include "cli/pod_identity.h"
#include "common/clock.h"
#include "kube/api.h"

namespace eslease::cli {

struct ReleasePlan {
  bool by_holder = false;          // the pod this tool acts for holds (or would hold) the claim
  bool mark_released = false;      // write eslease.io/released: the controller hands over at once
  std::string notice;              // said on stderr before the Lease is deleted; empty: nothing
  bool wait_for_validity = false;  // the Lease goes only once the holder's validity has ended
};

// Pure: how to release `lease` when this tool acts for `me` (nullopt: no pod identity here).
// The holder is the pod the Lease shows Held (status.holder), else the pod it claims for
// (spec.holder.podName); `me` is that pod when namespace and name match, and the uid too
// where both are known.
ReleasePlan plan_release(const LeaseView& lease, const std::optional<PodIdentity>& me, bool force);

// Pure: this pod's claims on `locks` among `leases` (claim mode, spec.holder.podName is `me`):
// for one lock every claim that includes it, alone or in a set; for several, the claim on
// exactly that set, in any order.
std::vector<LeaseView> own_claims_on(const std::vector<LeaseView>& leases,
                                     const std::vector<std::string>& locks, const PodIdentity& me);

struct ReleaseRequest {
  std::string ns;
  std::string name;                // a Lease, or a lock
  std::vector<std::string> locks;  // every name given: several are a lock set, never a Lease
  std::optional<PodIdentity> me;
  bool force = false;
  std::optional<Millis> wait;
  bool catch_signals = true;
};

// Finds what NAME means, releases it and returns the exit code.
int release_by_name(kube::Api& api, Clock& clock, const ReleaseRequest& request, Messages& messages);

}  // namespace eslease::cli
