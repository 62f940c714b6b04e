#include "api/lease_api.h"

#include <array>
#include <utility>

namespace eslease::api {
namespace {

template <typename Enum, std::size_t N>
using Names = std::array<std::pair<Enum, std::string_view>, N>;

constexpr Names<Priority, 2> kPriorityNames = {{
    {Priority::kForeground, "Foreground"},
    {Priority::kBackground, "Background"},
}};

constexpr Names<Access, 2> kAccessNames = {{
    {Access::kExclusive, "Exclusive"},
    {Access::kShared, "Shared"},
}};

constexpr Names<Phase, 5> kPhaseNames = {{
    {Phase::kPending, "Pending"},
    {Phase::kHeld, "Held"},
    {Phase::kReleased, "Released"},
    {Phase::kTimedOut, "TimedOut"},
    {Phase::kInvalid, "Invalid"},
}};

constexpr Names<Reason, 21> kReasonNames = {{
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
    {Reason::kBusy, "Busy"},
    {Reason::kInvalidClaim, "InvalidClaim"},
    {Reason::kReleased, "Released"},
    {Reason::kClaimDeleted, "ClaimDeleted"},
    {Reason::kClaimMoved, "ClaimMoved"},
    {Reason::kInvalid, "Invalid"},
    {Reason::kBackendUnavailable, "BackendUnavailable"},
    {Reason::kBackendReachable, "BackendReachable"},
    {Reason::kMalformedLockDocument, "MalformedLockDocument"},
    {Reason::kTokensUnproven, "TokensUnproven"},
}};

template <typename Enum, std::size_t N>
const char* name_in(const Names<Enum, N>& names, Enum value) {
  for (const auto& [each, name] : names)
    if (each == value) return name.data();
  return "";
}

template <typename Enum, std::size_t N>
std::optional<Enum> value_in(const Names<Enum, N>& names, std::string_view text) {
  for (const auto& [value, name] : names)
    if (name == text) return value;
  return std::nullopt;
}

}  // namespace

const char* to_string(Priority priority) {
  return name_in(kPriorityNames, priority);
}

std::optional<Priority> parse_priority(std::string_view text) {
  return value_in(kPriorityNames, text);
}

const char* to_string(Access access) {
  return name_in(kAccessNames, access);
}

std::optional<Access> parse_access(std::string_view text) {
  return value_in(kAccessNames, text);
}

const char* to_string(Phase phase) {
  return name_in(kPhaseNames, phase);
}

Phase parse_phase(std::string_view text) {
  return value_in(kPhaseNames, text).value_or(Phase::kNone);
}

const char* to_string(Reason reason) {
  return name_in(kReasonNames, reason);
}

std::optional<Reason> parse_reason(std::string_view text) {
  return value_in(kReasonNames, text);
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
    case Reason::kClaimDeleted:
    case Reason::kClaimMoved:
      return true;
    case Reason::kWaiting:
    case Reason::kAcquired:
    case Reason::kTakenOver:
    case Reason::kTimedOut:
    case Reason::kBusy:
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
