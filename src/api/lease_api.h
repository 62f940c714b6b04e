// The eslease.io Lease as users and holders read it: condition types, the reasons that
// conditions, events, lastTakeover and metrics share, the finalizer and annotation names,
// and the one rule both the controller and `eslease status` need to order a queue (when a
// claim started waiting). Kept apart from either program so they cannot disagree.
#pragma once

#include <optional>
#include <string_view>

#include "common/clock.h"

namespace eslease::api {

inline constexpr const char* kConditionHeld = "Held";
inline constexpr const char* kConditionBackendAvailable = "BackendAvailable";
inline constexpr const char* kFinalizer = "eslease.io/release";
inline constexpr const char* kHoldsAnnotation = "eslease.io/holds";

// Every reason eslease writes. A switch over it without a default is checked by -Wswitch,
// so adding a reason shows every place that must handle it.
enum class Reason {
  kWaiting,                // Held=False: in the queue
  kAcquired,               // Held=True: granted a free lock
  kTakenOver,              // Held=True: granted after the previous holder's grant ended
  kPodDeleted,             // the holder's pod object is gone
  kPodReplaced,            // a pod of the holder's name has another UID
  kPodFailed,              // the holder's pod ended as Failed
  kPodSucceeded,           // the holder's pod ended as Succeeded
  kPodNotReady,            // the holder (or its node) stayed not Ready past the grace
  kExpired,                // the grant ran out (TTL)
  kRenewalFailed,          // the grant could not be renewed in Elasticsearch in time
  kTimedOut,               // waited acquireTimeoutSeconds without a grant
  kInvalidClaim,           // Held=False: the claim cannot be served as written
  kReleased,               // the claim let go of the lock, or its pod finished after holding
  kInvalid,                // the event of an invalid claim
  kBackendUnavailable,     // BackendAvailable=False
  kBackendReachable,       // BackendAvailable=True
  kMalformedLockDocument,  // the lock document is not one eslease can read
  kTokensUnproven,         // BackendAvailable=False: grants refused, the next fencing token not proven larger
};

const char* to_string(Reason reason);
std::optional<Reason> parse_reason(std::string_view text);

// Reasons a claim's Held condition carries after it lost the lock: the claim waits again,
// counted from the condition's lastTransitionTime.
bool is_loss(Reason reason);

// When a claim started waiting orders the claims of one priority: its creation, or, when
// its Held condition is False with a loss reason, the moment it lost the lock (that
// condition's lastTransitionTime). True in the second case.
bool waits_since_loss(std::string_view held_status, std::string_view held_reason);

}  // namespace eslease::api
