// The rule "refuse to grant when the next token cannot be proven larger than every token
// issued before", as the guard decides it: on what it finds in the lock index, on what it was
// told was issued, and on the tokens grants come back with.
#include "lock/token_guard.h"

#include <gtest/gtest.h>

#include "lock/document.h"
#include "support/fake_clock.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;

constexpr std::int64_t kToken = (std::int64_t{1} << 32) | 40;  // term 1, seq_no 40, epoch 0

IndexTokens recorded(std::int64_t epoch, const std::string& uuid = "u1") {
  return IndexTokens{true, true, false, epoch, uuid, uuid};
}

class TokenGuardTest : public ::testing::Test {
 protected:
  void tell(std::int64_t largest, Millis longest = Millis(30000)) {
    guard_.set_source([largest, longest] { return IssuedBefore{largest, longest}; });
  }
  EpochPlan plan(const IndexTokens& index) {
    auto p = guard_.plan(index);
    EXPECT_TRUE(p.ok()) << p.error().describe();
    return p.ok() ? *p : EpochPlan{};
  }

  FakeClock clock_;
  TokenGuard guard_{clock_};
};

TEST_F(TokenGuardTest, AFreshIndexWithNothingIssuedStaysInEpochZero) {
  EpochPlan p = plan(IndexTokens{});
  EXPECT_EQ(p.epoch, 0);
  EXPECT_TRUE(p.record);
  EXPECT_FALSE(p.pause_until);
}

TEST_F(TokenGuardTest, TheIndexTheTokensCameFromIsTrustedWithoutAWrite) {
  tell(kToken);
  EpochPlan p = plan(recorded(0));
  EXPECT_EQ(p.epoch, 0);
  EXPECT_FALSE(p.record);
  EXPECT_FALSE(p.raised);
  EXPECT_FALSE(p.pause_until);
}

TEST_F(TokenGuardTest, AMissingIndexWhileLeasesShowTokensStartsAboveThemAndPauses) {
  tell(kToken, Millis(30000));
  EpochPlan p = plan(IndexTokens{});
  EXPECT_EQ(p.epoch, 1);
  EXPECT_TRUE(p.raised);
  ASSERT_TRUE(p.pause_until);
  EXPECT_EQ(*p.pause_until, clock_.monotonic() + Millis(30000));
}

TEST_F(TokenGuardTest, AnIndexRestoredIntoANewUuidMovesPastItsRecordedEpochEvenWhenNothingIsKnown) {
  // Tokens of epoch 2 may have been issued after the snapshot, with no Lease left to show them.
  IndexTokens restored = recorded(2, "old");
  restored.uuid = "new";
  EpochPlan p = plan(restored);
  EXPECT_EQ(p.epoch, 3);
  EXPECT_TRUE(p.record);
  EXPECT_TRUE(p.pause_until);
}

TEST_F(TokenGuardTest, AnEpochBelowATokenIssuedIsRaisedAboveIt) {
  tell(epoch_base(4) | kToken);
  EpochPlan p = plan(recorded(2));
  EXPECT_EQ(p.epoch, 5);
  EXPECT_TRUE(p.pause_until) << "an index behind the tokens issued is an older state: its grants may be lost";
}

TEST_F(TokenGuardTest, AnIndexCreatedWithoutTheHistoryIsRaisedOnlyWhenTokensWereIssued) {
  IndexTokens created = recorded(0, "");
  created.uuid = "u1";
  EpochPlan nothing_issued = plan(created);
  EXPECT_EQ(nothing_issued.epoch, 0);
  EXPECT_TRUE(nothing_issued.record) << "its UUID is recorded";
  EXPECT_FALSE(nothing_issued.pause_until);

  tell(kToken);
  EpochPlan issued = plan(created);
  EXPECT_EQ(issued.epoch, 1);
  EXPECT_TRUE(issued.pause_until);
}

TEST_F(TokenGuardTest, AnIndexWithoutARecordIsRaisedAndPausesOnlyWhenAWriteCreatedIt) {
  tell(kToken);
  IndexTokens upgraded{true, false, false, 0, "", "u1"};  // eslease's mapping, no epoch yet
  EpochPlan p = plan(upgraded);
  EXPECT_EQ(p.epoch, 1);
  EXPECT_FALSE(p.pause_until);
  IndexTokens auto_created = upgraded;
  auto_created.foreign = true;
  EXPECT_TRUE(plan(auto_created).pause_until);
}

TEST_F(TokenGuardTest, NoEpochLeftRefusesTheCheck) {
  tell(epoch_base(kMaxEpoch) | kToken);
  auto p = guard_.plan(recorded(kMaxEpoch - 1));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kTokensExhausted);
  guard_.check_failed(p.error());
  ASSERT_TRUE(guard_.refusal());
  EXPECT_NE(guard_.refusal()->find("no fencing token epoch is left"), std::string::npos) << *guard_.refusal();
}

TEST_F(TokenGuardTest, AnUnreachableIndexIsNotReportedAsUnprovenTokens) {
  guard_.check_failed(make_error(ErrorCode::kUnavailable, "connection refused"));
  EXPECT_FALSE(guard_.refusal());
}

TEST_F(TokenGuardTest, ATokenNotLargerThanTheFloorPausesAndRaisesAtTheNextCheck) {
  tell(0, Millis(20000));
  guard_.checked(plan(recorded(0)));
  guard_.handed_out(clock_.monotonic() + Millis(25000));
  const std::int64_t floor = guard_.floor();
  ASSERT_TRUE(guard_.accept(kToken, floor));
  EXPECT_EQ(guard_.floor(), kToken);

  // The index went back: the same pair again.
  EXPECT_FALSE(guard_.accept(kToken, guard_.floor()));
  EXPECT_TRUE(guard_.needs_check());
  Status refused = guard_.may_grant();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kGrantsPaused);
  ASSERT_TRUE(guard_.refusal());

  EpochPlan p = plan(recorded(0));
  EXPECT_EQ(p.epoch, 1);
  EXPECT_TRUE(p.record);
  guard_.checked(p);
  // Still paused: the validity handed out (25 s) is the longest.
  clock_.advance(Millis(24000));
  EXPECT_FALSE(guard_.may_grant().ok());
  clock_.advance(Millis(1000));
  EXPECT_TRUE(guard_.may_grant().ok());
  EXPECT_FALSE(guard_.refusal());
  EXPECT_TRUE(guard_.accept(epoch_base(1) | (std::int64_t{1} << 32), guard_.floor()));
}

TEST_F(TokenGuardTest, AVanishedGrantPausesUntilEveryValidityHandedOutHasEnded) {
  guard_.checked(plan(recorded(0)));
  guard_.handed_out(clock_.monotonic() + Millis(10000));
  guard_.grant_vanished();
  EXPECT_TRUE(guard_.needs_check());
  EXPECT_FALSE(guard_.may_grant().ok());
  clock_.advance(Millis(10000));
  EXPECT_TRUE(guard_.may_grant().ok());
}

TEST_F(TokenGuardTest, TokensReadCountAmongThoseIssued) {
  guard_.saw(epoch_base(2) | kToken);
  EpochPlan p = plan(recorded(1));
  EXPECT_EQ(p.epoch, 3);
}

}  // namespace
}  // namespace eslease::lock
