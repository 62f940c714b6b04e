// A Lease's spec as both programs read it: the controller decides on it, the eslease tool
// shows and follows it. One decoder, so the two cannot read one Lease differently. Decoding
// never fails: what the schema let through but cannot be served is recorded in
// LeaseSpec::problem (the controller makes the claim Invalid with it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/label_selector.h"
#include "api/lease_api.h"
#include "common/result.h"

namespace eslease::api {

// Kubernetes limits, shared with the Lease CRD: spec.lockName maxLength 253, namespace a
// DNS label of at most 63 bytes.
inline constexpr std::size_t kMaxLockNameBytes = 253;
inline constexpr std::size_t kMaxNamespaceBytes = 63;

// The Lease CRD's rule for spec.lockName, the same in both modes so that any lock one mode
// takes the other can contend for: 1-253 lower-case letters, digits, '-', '_' and '.',
// starting and ending with a letter or digit. It leaves out '/' (the separator of a document
// id) and '#' (reserved for a lock's slot documents). kInvalidArgument quoting the name.
Status validate_lock_name(std::string_view name);
// A namespace is a DNS label, as in Kubernetes: at most 63 lower-case letters, digits and
// '-', starting and ending with a letter or digit.
Status validate_namespace(std::string_view ns);

struct LeaseSpec {
  // spec.lockName, or the first lock of spec.lockNames: the lock a set's status.slot and holds
  // annotation refer to.
  std::string lock_name;
  std::vector<std::string> lock_names;  // spec.lockNames; empty for a claim on one lock
  std::int64_t capacity = 1;
  Access access = kDefaultAccess;
  std::string pod_name;                   // claim mode
  std::optional<LabelSelector> selector;  // election mode
  Priority priority = Priority::kForeground;
  int lease_duration_seconds = kDefaultLeaseDurationSeconds;
  std::optional<int> acquire_timeout_seconds;
  int liveness_grace_seconds = 10;
  // A label key the holder pod carries ("true") while it holds the grant; empty: none.
  std::string holder_label;
  // Set when the spec passed the API's schema (or predates it) but cannot be served: the
  // claim is Invalid with this message.
  std::string problem;

  bool election_mode() const { return selector.has_value(); }
  bool is_set() const { return !lock_names.empty(); }
  // Every lock the claim needs, in its order: its set, or its one lock.
  std::vector<std::string> locks() const {
    return is_set() ? lock_names : std::vector<std::string>{lock_name};
  }
  bool claims_lock(const std::string& name) const {
    return is_set() ? std::find(lock_names.begin(), lock_names.end(), name) != lock_names.end()
                    : lock_name == name;
  }
  // The access a grant of this claim has: Exclusive at capacity 1, whatever spec.access says.
  Access effective_access() const { return api::effective_access(capacity, access); }
  // Who may hold the claim, for people: its pod's name, or its selector as kubectl writes it.
  std::string holders() const;
  // The same in a sentence: "pod p-1", or "pods app=web".
  std::string describe_holder() const;
};

// The spec of a Lease object (its "spec" field).
LeaseSpec decode_lease_spec(const nlohmann::json& object);

}  // namespace eslease::api
