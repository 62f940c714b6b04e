// The eslease tool's view of a Lease object: the few spec and status fields it acts on,
// decoded from the API's JSON without ever failing (a missing or mistyped field reads as
// absent), and the claim it creates for a pod. Pure, so the rules are unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/lease_api.h"
#include "api/lease_spec.h"
#include "common/clock.h"
#include "common/result.h"

namespace eslease::cli {

struct LeaseView {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::optional<WallTime> created;
  bool being_deleted = false;  // deletionTimestamp set: the controller is releasing it

  // Decoded as the controller decodes it: spec.problem says what makes the claim Invalid.
  api::LeaseSpec spec;
  std::optional<std::int64_t> slot;  // status.slot: which slot a Held claim of a lock of capacity > 1 has

  std::string phase;  // "" until the controller has written a status
  std::string holder_pod;
  std::string holder_uid;
  std::string fencing_token;
  std::optional<WallTime> acquire_time;
  // Not in the Lease: the validity its namespace's session publishes to a Held claim
  // (api::published_validity), filled in by whoever read the session.
  std::optional<WallTime> valid_until;
  std::optional<int> queue_position;
  // status.queuedAt: when the controller queued the claim, to the microsecond (creationTimestamp
  // is whole seconds).
  std::optional<WallTime> queued_at;
  // The Held condition: whether and why the claim is (not) held, and since when.
  std::string held_status;
  std::string held_reason;
  std::string held_message;
  std::optional<WallTime> held_since;
  // The BackendAvailable condition: "False" while the controller cannot reach Elasticsearch.
  std::string backend_status;
  std::string backend_message;

  bool held() const { return phase == api::to_string(api::Phase::kHeld); }
  // The locks the claim is on: its set (spec.lockNames, in the Lease's order), else its one lock.
  std::vector<std::string> locks() const { return spec.locks(); }
  bool claims(const std::string& lock) const { return spec.claims_lock(lock); }
  // "lock a", or "lock set a+b" for a set: how messages name what the claim is on.
  std::string describe_locks() const;
  // When this claim started waiting, by the controller's rule (api::waits_since_loss): when
  // it last lost the lock, else when it was queued, else its creation.
  std::optional<WallTime> waiting_since() const;
};

LeaseView decode_lease_view(const nlohmann::json& object);

// "lock a", or "lock set a+b" for several locks (lock names never hold '+').
std::string describe_locks(const std::vector<std::string>& locks);
// "batch/a", or for a set "batch/a<separator>batch/b" in the Lease's order: ESLEASE_LOCK (with
// ",") as direct mode gives it, and how messages name the locks.
std::string lock_ids(const std::string& ns, const std::vector<std::string>& locks, const char* separator);
// Whether two lists name the same locks, in any order (spec.lockNames is a set).
bool same_locks(std::vector<std::string> a, std::vector<std::string> b);

// What `acquire` and `run` ask for.
struct ClaimRequest {
  std::string ns;
  std::string name;                // the Lease's name
  std::vector<std::string> locks;  // one lock (spec.lockName) or a lock set (spec.lockNames)
  std::string pod;
  std::string pod_uid;
  std::optional<std::string> priority;
  std::optional<int> lease_duration_seconds;
  std::optional<int> acquire_timeout_seconds;
  std::optional<int> liveness_grace_seconds;
  // The lock's shape: spec.capacity, written when not 1, and spec.access, written wherever it
  // matters (capacity above 1) or is Exclusive, whatever the CRD's default.
  std::int64_t capacity = 1;
  api::Access access = api::kDefaultAccess;
};

// acquireTimeoutSeconds for a tool that waits `wait`: the whole seconds of it rounded up,
// plus one. The controller counts from when it queued the claim, or from the Lease's
// creationTimestamp when it has not recorded that (status.queuedAt), which the API server
// cuts to whole seconds: without the extra second it gave up on a `--wait 3s` after 2 to
// 3 s, before the tool itself did.
int acquire_timeout_for_wait(Millis wait);

// The Lease for a pod's claim, owned by the pod (an ownerReference with its uid) so that the
// garbage collector deletes it with the pod.
nlohmann::json make_claim(const ClaimRequest& request);

// The default Lease name of a pod's claim: "<lock>-<pod>" for one lock, and for a lock set
// "<first>-set-<hash>-<pod>", <first> being the set's first lock in sorted order and <hash> 8
// hex digits of the whole set, so the name does not depend on the order the locks were given.
// When that is not a valid object name, "eslease-" + a hash of the locks and the pod (lock
// names may hold '_', which object names may not). Deterministic, so a second claim by one pod
// on the same locks is refused by the API (AlreadyExists) instead of queueing behind the first.
std::string default_lease_name(const std::vector<std::string>& locks, const std::string& pod);

// Checked before anything is contacted, with a message naming the flag or argument: a DNS
// subdomain. Lock names and namespaces follow lock/names.h.
Status validate_object_name(const std::string& what, const std::string& name);

}  // namespace eslease::cli
