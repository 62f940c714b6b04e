// What `eslease sidecar` reports of its pod's grants, rule by rule on fixed clocks: a grant
// is reported while its Lease shows Held for the pod with its token, the session does not list
// it, and the published validity less the safety margin has not ended; once that deadline has
// passed it is never reported again.
#include "cli/holds_book.h"

#include <gtest/gtest.h>

namespace eslease::cli {
namespace {

using std::chrono::seconds;

const WallTime kWall0 = std::chrono::system_clock::from_time_t(1'800'000'000);
const MonoTime kMono0 = MonoTime{} + std::chrono::hours(1);

LeaseView held(const std::string& name, const std::string& pod, const std::string& token,
               std::vector<std::string> locks = {"report"}) {
  LeaseView v;
  v.ns = "batch";
  v.name = name;
  v.uid = "uid-" + name;
  v.spec.lock_name = locks.front();
  if (locks.size() > 1) v.spec.lock_names = locks;
  v.spec.lease_duration_seconds = 30;
  v.phase = "Held";
  v.holder_pod = pod;
  v.holder_uid = "pod-uid-" + pod;
  v.fencing_token = token;
  return v;
}

api::Session session(WallTime renewed, std::set<api::GrantRef> revoked = {}) {
  api::Session s;
  s.ns = "batch";
  s.resource_version = "1";
  s.renew_time = renewed;
  s.revoked = std::move(revoked);
  return s;
}

class HoldsBookTest : public ::testing::Test {
 protected:
  // A margin of 2 s: a grant renewed at kWall0 with 30 s is reported until kWall0 + 28 s.
  HoldsBook book_{"me", "pod-uid-me", Millis(2000)};

  void lease(const LeaseView& v, seconds at = seconds(0)) {
    book_.lease_changed(v, kWall0 + at, kMono0 + at);
  }
  void renewed(seconds renew_time, seconds at, std::set<api::GrantRef> revoked = {}) {
    book_.session_changed(session(kWall0 + renew_time, std::move(revoked)), kWall0 + at, kMono0 + at);
  }
  std::vector<std::string> tokens_at(seconds at) const {
    std::vector<std::string> out;
    for (const PodGrant& g : book_.holds(kMono0 + at)) out.push_back(g.token);
    return out;
  }
};

TEST_F(HoldsBookTest, AHeldGrantIsReportedOnceTheSessionPublishesItsValidity) {
  lease(held("report-me", "me", "41"));
  EXPECT_TRUE(tokens_at(seconds(0)).empty()) << "no session seen yet: no validity";
  renewed(seconds(0), seconds(0));
  const std::vector<PodGrant> holds = book_.holds(kMono0);
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].lease, "report-me");
  EXPECT_EQ(holds[0].locks, std::vector<std::string>{"report"});
  EXPECT_EQ(holds[0].token, "41");
  EXPECT_EQ(holds[0].valid_until, kWall0 + seconds(28));
  EXPECT_TRUE(book_.hold_on("report", kMono0));
  EXPECT_FALSE(book_.hold_on("other", kMono0));
  EXPECT_EQ(book_.next_deadline(kMono0), kMono0 + seconds(28));
}

// A lease duration raised on a Held Lease does not lengthen the grant's validity: its
// documents are renewed with the duration it was granted with, as `eslease run` counts.
TEST_F(HoldsBookTest, ALeaseDurationEditedAfterTheGrantDoesNotLengthenItsValidity) {
  LeaseView v = held("report-me", "me", "41");
  lease(v);
  renewed(seconds(0), seconds(0));
  v.spec.lease_duration_seconds = 120;
  v.resource_version = "2";
  lease(v, seconds(1));
  renewed(seconds(2), seconds(2));
  ASSERT_EQ(book_.holds(kMono0 + seconds(2)).size(), 1u);
  EXPECT_EQ(book_.holds(kMono0 + seconds(2))[0].valid_until, kWall0 + seconds(30))
      << "renewed at 2 s with the 30 s it was granted with, less the 2 s margin";
}

TEST_F(HoldsBookTest, GrantsOfOtherPodsAndClaimsNotHeldAreNotReported) {
  renewed(seconds(0), seconds(0));
  lease(held("report-other", "other", "41"));
  LeaseView waiting = held("weekly-me", "me", "", {"weekly"});
  waiting.phase = "Pending";
  lease(waiting);
  LeaseView replaced = held("daily-me", "me", "43", {"daily"});
  replaced.holder_uid = "uid-of-an-earlier-pod-named-me";
  lease(replaced);
  EXPECT_TRUE(tokens_at(seconds(0)).empty());
}

TEST_F(HoldsBookTest, ADeadlinePassedWithoutARenewalEndsTheGrantForGood) {
  lease(held("report-me", "me", "41"));
  renewed(seconds(0), seconds(0));
  ASSERT_TRUE(book_.take_changes(kMono0).granted.size() == 1);
  EXPECT_EQ(tokens_at(seconds(27)), std::vector<std::string>{"41"});
  EXPECT_TRUE(tokens_at(seconds(28)).empty()) << "the safety margin before the published validity";
  const HoldsBook::Changes changes = book_.take_changes(kMono0 + seconds(28));
  ASSERT_EQ(changes.lost.size(), 1u);
  EXPECT_NE(changes.lost[0].why.find("ended before a renewal was seen"), std::string::npos);
  // A renewal seen late does not bring it back: whatever relied on it was told to stop.
  renewed(seconds(25), seconds(29));
  EXPECT_TRUE(tokens_at(seconds(29)).empty());
  EXPECT_TRUE(book_.take_changes(kMono0 + seconds(29)).granted.empty());
}

TEST_F(HoldsBookTest, RenewalsSeenInTimeKeepTheGrant) {
  lease(held("report-me", "me", "41"));
  renewed(seconds(0), seconds(0));
  renewed(seconds(10), seconds(10));
  renewed(seconds(20), seconds(20));
  EXPECT_EQ(tokens_at(seconds(47)), std::vector<std::string>{"41"});
  EXPECT_EQ(book_.holds(kMono0 + seconds(47))[0].valid_until, kWall0 + seconds(48));
}

TEST_F(HoldsBookTest, ARevokedGrantIsNotReportedFromTheSessionVersionThatListsIt) {
  lease(held("report-me", "me", "41"));
  renewed(seconds(0), seconds(0));
  book_.take_changes(kMono0);
  renewed(seconds(0), seconds(1), {api::GrantRef{"report-me", "41"}});
  EXPECT_TRUE(tokens_at(seconds(1)).empty()) << "the Lease still shows Held: revocation comes first";
  const HoldsBook::Changes changes = book_.take_changes(kMono0 + seconds(1));
  ASSERT_EQ(changes.lost.size(), 1u);
  EXPECT_NE(changes.lost[0].why.find("revoked"), std::string::npos);
  renewed(seconds(5), seconds(5));  // a later version no longer lists it: still over
  EXPECT_TRUE(tokens_at(seconds(5)).empty());
}

TEST_F(HoldsBookTest, ALeaseNoLongerHeldOrGrantedAgainIsToldAsALossThenAGrant) {
  renewed(seconds(0), seconds(0));
  lease(held("report-me", "me", "41"));
  book_.take_changes(kMono0);
  LeaseView pending = held("report-me", "me", "41");
  pending.phase = "Pending";
  pending.held_reason = "PodNotReady";
  lease(pending, seconds(1));
  HoldsBook::Changes changes = book_.take_changes(kMono0 + seconds(1));
  ASSERT_EQ(changes.lost.size(), 1u);
  EXPECT_NE(changes.lost[0].why.find("no longer Held (phase Pending, PodNotReady"), std::string::npos);

  lease(held("report-me", "me", "50"), seconds(2));
  changes = book_.take_changes(kMono0 + seconds(2));
  ASSERT_EQ(changes.granted.size(), 1u);
  EXPECT_EQ(changes.granted[0].token, "50");

  lease(held("report-me", "me", "57"), seconds(3));  // granted again with another token
  changes = book_.take_changes(kMono0 + seconds(3));
  ASSERT_EQ(changes.lost.size(), 1u);
  EXPECT_EQ(changes.lost[0].grant.token, "50");
  ASSERT_EQ(changes.granted.size(), 1u);
  EXPECT_EQ(changes.granted[0].token, "57");

  book_.lease_deleted("report-me");
  changes = book_.take_changes(kMono0 + seconds(4));
  ASSERT_EQ(changes.lost.size(), 1u);
  EXPECT_NE(changes.lost[0].why.find("was deleted"), std::string::npos);
}

TEST_F(HoldsBookTest, ALeaseBeingDeletedIsNotReported) {
  renewed(seconds(0), seconds(0));
  LeaseView deleting = held("report-me", "me", "41");
  deleting.being_deleted = true;
  lease(deleting);
  EXPECT_TRUE(tokens_at(seconds(0)).empty());
}

// A grant the last renewal does not cover yet (its validity ended before the grant was seen)
// waits for the next renewal, which the controller makes right after such a grant.
TEST_F(HoldsBookTest, AGrantTheLastRenewalDoesNotCoverWaitsForTheNext) {
  renewed(seconds(-40), seconds(0));
  lease(held("report-me", "me", "41"));
  EXPECT_TRUE(tokens_at(seconds(0)).empty());
  book_.take_changes(kMono0);
  renewed(seconds(1), seconds(1));
  EXPECT_EQ(tokens_at(seconds(1)), std::vector<std::string>{"41"});
}

TEST_F(HoldsBookTest, ALockSetIsReportedOnEachOfItsLocks) {
  renewed(seconds(0), seconds(0));
  lease(held("pair-me", "me", "41", {"a", "b"}));
  EXPECT_TRUE(book_.hold_on("a", kMono0));
  EXPECT_TRUE(book_.hold_on("b", kMono0));
  const nlohmann::json shown = grant_json(*book_.hold_on("b", kMono0));
  EXPECT_EQ(shown, (nlohmann::json{{"lease", "pair-me"},
                                   {"locks", {"a", "b"}},
                                   {"token", "41"},
                                   {"validUntil", "2027-01-15T08:00:28.000Z"}}));
}

TEST_F(HoldsBookTest, TheJsonOfASingleLockNamesItAsLock) {
  renewed(seconds(0), seconds(0));
  lease(held("report-me", "me", "41"));
  EXPECT_EQ(holds_json(book_.holds(kMono0)),
            (nlohmann::json{{"holds",
                             {{{"lease", "report-me"},
                               {"lock", "report"},
                               {"token", "41"},
                               {"validUntil", "2027-01-15T08:00:28.000Z"}}}}}));
  EXPECT_EQ(holds_json({}), (nlohmann::json{{"holds", nlohmann::json::array()}}));
}

}  // namespace
}  // namespace eslease::cli
