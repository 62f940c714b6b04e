#include "api/lease_api.h"

#include <array>
#include <utility>

namespace eslease::api {
namespace {

constexpr std::array<std::pair<Reason, std::string_view>, 18> kNames = {{
    {Reason::kWaiting, "Waiting"},
    {Reason::kAcquired, "Acquired"},
    {Reason::kTakenOver, "TakenOver"},
    {Reason::kPodDeleted, "PodDeleted"},
    {Reason::kPodReplaced, "PodReplaced"},
    {Reason::kPodFailed, "PodFailed"},
    {Reason::kPodSucceeded, "PodSucceeded"},
    {Reason::kPodNotReady, "PodNotReady"},
    {Reason::kExpired, "Expired"},
    {Reason::kRenewalFailed, "RenewalFailed"},
    {Reason::kTimedOut, "TimedOut"},
    {Reason::kInvalidClaim, "InvalidClaim"},
    {Reason::kReleased, "Released"},
    {Reason::kInvalid, "Invalid"},
    {Reason::kBackendUnavailable, "BackendUnavailable"},
    {Reason::kBackendReachable, "BackendReachable"},
    {Reason::kMalformedLockDocument, "MalformedLockDocument"},
    {Reason::kTokensUnproven, "TokensUnproven"},
}};

}  // namespace

const char* to_string(Reason reason) {
  for (const auto& [value, name] : kNames)
    if (value == reason) return name.data();
  return "";
}

std::optional<Reason> parse_reason(std::string_view text) {
  for (const auto& [value, name] : kNames)
    if (name == text) return value;
  return std::nullopt;
}

bool is_loss(Reason reason) {
  switch (reason) {
    case Reason::kPodDeleted:
    case Reason::kPodReplaced:
    case Reason::kPodFailed:
    case Reason::kPodSucceeded:
    case Reason::kPodNotReady:
    case Reason::kExpired:
    case Reason::kRenewalFailed:
    case Reason::kReleased:
      return true;
    case Reason::kWaiting:
    case Reason::kAcquired:
    case Reason::kTakenOver:
    case Reason::kTimedOut:
    case Reason::kInvalidClaim:
    case Reason::kInvalid:
    case Reason::kBackendUnavailable:
    case Reason::kBackendReachable:
    case Reason::kMalformedLockDocument:
    case Reason::kTokensUnproven:
      return false;
  }
  return false;
}

bool waits_since_loss(std::string_view held_status, std::string_view held_reason) {
  const std::optional<Reason> reason = parse_reason(held_reason);
  return held_status == "False" && reason && is_loss(*reason);
}

}  // namespace eslease::api
