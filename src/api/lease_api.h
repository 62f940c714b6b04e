// The eslease.io Lease as users and holders read it: its phases, priorities and lock shapes, condition
// types, the reasons that conditions, events, lastTakeover and metrics share, the finalizer
// and annotation names, how a lease duration counts, and the one rule both the controller and
// `eslease status` need to order a queue (when a claim started waiting). Kept apart from
// either program so they cannot disagree.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/clock.h"

namespace eslease::api {

inline constexpr const char* kConditionHeld = "Held";
inline constexpr const char* kConditionBackendAvailable = "BackendAvailable";
inline constexpr const char* kFinalizer = "eslease.io/release";
inline constexpr const char* kHoldsAnnotation = "eslease.io/holds";
// spec.leaseDurationSeconds when a Lease does not say (the CRD's default).
inline constexpr int kDefaultLeaseDurationSeconds = 60;

// A lease duration in seconds (spec.leaseDurationSeconds) as the time it stands for.
inline Millis lease_duration(int seconds) {
  return std::chrono::seconds(seconds);
}

// spec.priority: a waiting Foreground claim goes ahead of every waiting Background claim.
enum class Priority { kForeground, kBackground };
inline constexpr std::array<Priority, 2> kPriorities = {Priority::kForeground, Priority::kBackground};
const char* to_string(Priority priority);
// nullopt for anything but "Foreground" and "Background".
std::optional<Priority> parse_priority(std::string_view text);

// Lock shapes (the design's "Lock shapes"), the same for a Lease and for eslease direct mode.
// spec.access: Shared claims hold a lock side by side, up to its capacity; an Exclusive claim
// holds it alone, all of its capacity.
enum class Access { kExclusive, kShared };
const char* to_string(Access access);
// nullopt for anything but "Exclusive" and "Shared".
std::optional<Access> parse_access(std::string_view text);
// spec.capacity: how many claims hold a lock at once, 1 to kMaxCapacity.
inline constexpr std::int64_t kMaxCapacity = 1000;
// spec.lockNames: a lock set of kMinLockSet to kMaxLockSet distinct lock names.
inline constexpr std::size_t kMinLockSet = 2;
inline constexpr std::size_t kMaxLockSet = 32;

// status.phase. kNone: the controller has not written a phase yet.
enum class Phase { kNone, kPending, kHeld, kReleased, kTimedOut, kInvalid };
// Every phase a status shows, in the order of the CRD's enum.
inline constexpr std::array<Phase, 5> kPhases = {Phase::kPending, Phase::kHeld, Phase::kReleased,
                                                 Phase::kTimedOut, Phase::kInvalid};
const char* to_string(Phase phase);  // "" for kNone
// kNone for anything that is not one of kPhases' names.
Phase parse_phase(std::string_view text);

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
  kBusy,                   // TimedOut: a try-lock (acquireTimeoutSeconds 0) found the lock taken
  kInvalidClaim,           // Held=False: the claim cannot be served as written
  kReleased,               // the holder let go of the lock, or its pod finished after holding
  kClaimDeleted,           // the holder's Lease was deleted by someone else than its holder
  kClaimMoved,             // the claim no longer names its holder pod
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

// Whether a claim's Held condition says it lost the lock (False, with a loss reason): it
// then waits again from that condition's lastTransitionTime.
bool waits_since_loss(std::string_view held_status, std::string_view held_reason);

// When a claim started waiting, which orders the claims of one priority: when it last lost
// the lock (waits_since_loss: its Held condition's `held_since`), else its creation. A
// condition that carries no time counts from the creation too. The controller and
// `eslease status` both order by this one function. `Time` is WallTime, or
// std::optional<WallTime> for a reader whose creation time may be missing.
template <typename Time>
Time waiting_since(std::string_view held_status, std::string_view held_reason,
                   std::optional<WallTime> held_since, Time created) {
  if (held_since && waits_since_loss(held_status, held_reason)) return *held_since;
  return created;
}

}  // namespace eslease::api
