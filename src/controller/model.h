// The controller's typed view of the world: compact records of exactly the fields it decides
// on, decoded once from the API's JSON (lease_codec.h) and kept in the informer caches. A
// Lease is a claim on a lock; a pod is a (possible) holder; a node carries the pod's
// reachability.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/lease_api.h"
#include "api/lease_spec.h"
#include "common/clock.h"
#include "common/text.h"
#include "lock/document.h"

namespace eslease::controller {

// Who an object is, as every cache record carries it.
struct ObjectMeta {
  std::string ns;  // empty for cluster-scoped objects
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string key() const { return object_key(ns, name); }
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// The API's names (api/lease_api.h), used unqualified throughout the controller.
using api::Access;
using api::LabelRequirement;
using api::Labels;
using api::LabelSelector;
using api::LeaseSpec;
using api::Phase;
using api::Priority;

struct Condition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::optional<WallTime> last_transition_time;  // nullopt: the object does not say
  std::int64_t observed_generation = 0;
  friend bool operator==(const Condition&, const Condition&) = default;
};

struct HolderRef {
  std::string pod_name;
  std::string pod_uid;
  std::string node_name;
  friend bool operator==(const HolderRef&, const HolderRef&) = default;
};

struct Takeover {
  std::string from_pod;
  std::string reason;
  WallTime time{};
  friend bool operator==(const Takeover&, const Takeover&) = default;
};

struct LeaseStatus {
  Phase phase = Phase::kNone;
  // What kubectl's Lock column shows (status.lock): the lock, or a set's locks joined by '+'.
  // For people only: a status is never written just to change it (LeaseWriter).
  std::string lock;
  // When the claim joined the queue, to the microsecond (status.queuedAt): its place among
  // claims created in the same second, kept across restarts. Written with its first Pending.
  std::optional<WallTime> queued_at;
  std::optional<HolderRef> holder;
  std::string fencing_token;
  std::optional<WallTime> acquire_time;
  std::optional<int> queue_position;
  // The lowest slot of the grant on the claim's (first) lock, for a lock of capacity above 1
  // (nullopt otherwise): which lock document carries it (lock::slot_document_id).
  std::optional<std::int64_t> slot;
  std::int64_t transitions = 0;
  std::optional<Takeover> last_takeover;
  std::int64_t observed_generation = 0;
  std::vector<Condition> conditions;

  const Condition* condition(const std::string& type) const;
  // Shown Held under fencing token `token`.
  bool shows_held(std::int64_t token) const;
  friend bool operator==(const LeaseStatus&, const LeaseStatus&) = default;
};

// A fencing token as a Lease shows it (status.fencingToken, the eslease.io/released
// annotation): nullopt when the text is not a whole decimal number.
std::optional<std::int64_t> parse_fencing_token(std::string_view text);
// `text` is `token` written as the controller writes it (its decimal digits, no sign for a
// positive token, no leading zeros): how a status or a session names a grant. Builds no string.
bool names_fencing_token(std::string_view text, std::int64_t token);

struct LeaseRecord {
  ObjectMeta meta;
  std::int64_t generation = 0;
  WallTime creation_time{};
  bool being_deleted = false;
  std::vector<std::string> finalizers;
  // The eslease.io/released annotation: the fencing token its holder let go of before
  // deleting the Lease (the eslease tool's release). Empty when nobody said so.
  std::string released_token;
  LeaseSpec spec;
  LeaseStatus status;
  // When this controller first saw the Lease arrive through its watch, to the microsecond, in
  // the order the API server created Leases (ClaimIndex::arrival_of); unset for one first seen
  // in a list. What status.queuedAt records.
  std::optional<WallTime> arrived;

  bool has_finalizer() const;
  std::string lock_id() const { return object_key(meta.ns, spec.lock_name); }
  // Ids (ns/name) of every lock the claim needs.
  std::vector<std::string> lock_ids() const {
    std::vector<std::string> ids;
    for (const std::string& name : spec.locks()) ids.push_back(object_key(meta.ns, name));
    return ids;
  }
};

// One slot of one lock (of the lock's namespace): slot k is its k-th document (lock/slots.h).
struct SlotRef {
  std::string lock;
  std::int64_t slot = 0;
  // NOLINTNEXTLINE(modernize-use-nullptr): the defaulted comparison's own 0
  friend auto operator<=>(const SlotRef&, const SlotRef&) = default;
};

enum class ReadyState { kAbsent, kTrue, kFalse };  // Unknown counts as False

struct PodRecord {
  ObjectMeta meta;
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by key
  std::string phase;
  std::string node_name;
  bool being_deleted = false;
  ReadyState ready = ReadyState::kAbsent;
  // Set when the status itself shows the pod was Ready before (Ready now, or a Ready=False
  // transition well after the pod started): readiness counts only once a pod has been Ready.
  bool shows_was_ready = false;
  WallTime creation_time{};
  std::string holds_annotation;  // current eslease.io/holds value
};

struct NodeRecord {
  ObjectMeta meta;
  ReadyState ready = ReadyState::kAbsent;
};

// A node's heartbeat: the kubelet's coordination.k8s.io Lease named after its node in
// kube-node-lease, renewed every 10 s by default.
struct NodeLeaseRecord {
  ObjectMeta meta;  // name: the node's
  std::optional<WallTime> renew_time;
};

}  // namespace eslease::controller
