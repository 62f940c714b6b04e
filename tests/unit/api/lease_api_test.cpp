// The Lease's phases, priorities and reasons, and the waiting rule both programs share.
#include "api/lease_api.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace eslease::api {
namespace {

TEST(Reasons, EveryReasonRoundTripsItsName) {
  for (Reason r : {Reason::kWaiting,          Reason::kAcquired,
                   Reason::kTakenOver,        Reason::kPodDeleted,
                   Reason::kPodReplaced,      Reason::kPodFailed,
                   Reason::kPodSucceeded,     Reason::kPodNotReady,
                   Reason::kExpired,          Reason::kRenewalFailed,
                   Reason::kTimedOut,         Reason::kBusy,
                   Reason::kInvalidClaim,     Reason::kReleased,
                   Reason::kClaimDeleted,     Reason::kClaimMoved,
                   Reason::kInvalid,          Reason::kBackendUnavailable,
                   Reason::kBackendReachable, Reason::kMalformedLockDocument,
                   Reason::kTokensUnproven}) {
    EXPECT_NE(std::string(to_string(r)), "");
    EXPECT_EQ(parse_reason(to_string(r)), r) << to_string(r);
  }
  EXPECT_EQ(parse_reason("SomethingElse"), std::nullopt);
}

TEST(Phases, EveryPhaseRoundTripsItsName) {
  std::vector<std::string> names;
  for (Phase p : kPhases) {
    names.emplace_back(to_string(p));
    EXPECT_EQ(parse_phase(to_string(p)), p) << to_string(p);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Pending", "Held", "Released", "TimedOut", "Invalid"}))
      << "the CRD's enum";
  EXPECT_STREQ(to_string(Phase::kNone), "");
  EXPECT_EQ(parse_phase(""), Phase::kNone);
  EXPECT_EQ(parse_phase("held"), Phase::kNone);
}

TEST(Priorities, ParseOnlyTheirOwnNames) {
  EXPECT_EQ(parse_priority("Foreground"), Priority::kForeground);
  EXPECT_EQ(parse_priority("Background"), Priority::kBackground);
  EXPECT_EQ(parse_priority("background"), std::nullopt);
  EXPECT_EQ(parse_priority(""), std::nullopt);
  for (Priority p : kPriorities) EXPECT_EQ(parse_priority(to_string(p)), p);
}

TEST(Access, ParsesOnlyItsOwnNames) {
  EXPECT_EQ(parse_access("Exclusive"), Access::kExclusive);
  EXPECT_EQ(parse_access("Shared"), Access::kShared);
  EXPECT_STREQ(to_string(Access::kShared), "Shared");
  EXPECT_STREQ(to_string(Access::kExclusive), "Exclusive");
  EXPECT_EQ(parse_access("shared"), std::nullopt);
  EXPECT_EQ(parse_access(""), std::nullopt);
}

TEST(LeaseDuration, CountsWholeSeconds) {
  EXPECT_EQ(lease_duration(30), Millis(30000));
  EXPECT_EQ(lease_duration(kDefaultLeaseDurationSeconds), Millis(16000));
}

TEST(Reasons, OnlyALossRestartsTheWait) {
  EXPECT_TRUE(waits_since_loss("False", "PodDeleted"));
  EXPECT_TRUE(waits_since_loss("False", "ClaimMoved"));
  EXPECT_TRUE(waits_since_loss("False", "Expired"));
  EXPECT_FALSE(waits_since_loss("False", "Waiting"));
  EXPECT_FALSE(waits_since_loss("False", "MalformedLockDocument"));
  EXPECT_FALSE(waits_since_loss("True", "PodDeleted"));
  EXPECT_FALSE(waits_since_loss("", ""));
}

TEST(Reasons, AClaimWaitsFromItsLossWhenItsConditionSaysWhen) {
  const WallTime created = std::chrono::system_clock::from_time_t(1'800'000'000);
  const WallTime lost_at = created + std::chrono::minutes(5);
  EXPECT_EQ(waiting_since("False", "PodDeleted", lost_at, created), lost_at);
  EXPECT_EQ(waiting_since("False", "PodDeleted", std::nullopt, created), created);
  EXPECT_EQ(waiting_since("False", "Waiting", lost_at, created), created);
  EXPECT_EQ(waiting_since("", "", std::nullopt, std::optional<WallTime>()), std::nullopt);
}

}  // namespace
}  // namespace eslease::api
