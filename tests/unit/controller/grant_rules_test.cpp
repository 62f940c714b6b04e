// The grant rules one by one: each row builds the smallest world in which one rule decides on
// the holder's grant, and checks that it is that rule, with the verdict it stands for. Rows
// that show a rule passing (so a later one decides) say so in their name. Who gets the slots
// of a grant that ends is the allocation's (decision_test.cpp).
#include "controller/grant_rules.h"

#include <gtest/gtest.h>

#include <functional>

#include "unit/controller/lock_world.h"

namespace eslease::controller {
namespace {

using api::Reason;
using std::chrono::seconds;
using worlds::kM0;
using worlds::World;

struct RuleCase {
  const char* name;
  std::function<void(World&)> build;
  const char* rule;
  Action action;
  bool ends_now = false;
  std::optional<Reason> reason = std::nullopt;  // the verdict's reason
  std::optional<MonoTime> wake_at = std::nullopt;
};

// A lock held by claim "holder" for pod-h, which this controller renews; "next" waits with pod-n.
void held_with_a_waiter(World& w) {
  w.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  w.claim("next", "pod-n");
  w.pod("pod-h");
  w.pod("pod-n");
  w.held("holder", "pod-h");
  w.status_held("holder", "pod-h");
}

// A lock taken outside Kubernetes (the tool's direct mode); claim "a" waits with pod-a.
void foreign_lock_with_a_waiter(World& w) {
  w.claim("a", "pod-a");
  w.pod("pod-a");
  GrantView& d = w.held("outside", "cron-host", 4294967299, false);
  d.state.doc.lease = "";
  d.state.doc.lease_uid = "cli-1234";
}

// Election claim "leader" held by reporter-1, which was placed on a node that never ran it
// `there_for` ago and has never been Ready; reporter-2 matches too and is Ready.
void election_held_by_a_never_ready_pod(World& w, seconds there_for) {
  w.election("leader", "reporter");
  PodState& stuck = w.pod("reporter-1", "reporter", seconds(300));
  stuck.record.phase = "Pending";
  stuck.record.ready = ReadyState::kAbsent;
  stuck.record.shows_was_ready = false;
  stuck.record.node_name = "node-that-never-ran-it";
  stuck.was_ready = false;
  stuck.never_ready_since = kM0 - there_for;
  w.pod("reporter-2", "reporter", seconds(100));
  w.held("leader", "reporter-1");
  w.status_held("leader", "reporter-1");
}

const std::vector<RuleCase>& cases() {
  static const std::vector<RuleCase> rows = {
      {"ForeignLockIsRespectedUntilItExpires", foreign_lock_with_a_waiter, "respect_a_foreign_lock",
       Action::kNone, false, std::nullopt, kM0 + seconds(25)},
      {"ForeignLockIsTakenOverOnceExpired",
       [](World& w) {
         foreign_lock_with_a_waiter(w);
         w.w.mono = kM0 + seconds(25);
       },
       "respect_a_foreign_lock", Action::kNone, true, Reason::kExpired},
      {"ClaimDeletedByItsHolderReleasesAtOnce",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").being_deleted = true;
         w.find("holder").released_token = "4294967300";
       },
       "release_what_its_holder_let_go", Action::kRelease, true, Reason::kReleased},
      {"ClaimDeletedBySomeoneElseIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").being_deleted = true;
         w.find("holder").released_token = "4294967000";  // an earlier grant's token
       },
       "revoke_when_its_claim_is_gone", Action::kRevoke, false, Reason::kClaimDeleted},
      {"RecordedGrantOfAClaimBeingDeletedIsRevokedAsDeletedByANewLeader",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.find("holder").being_deleted = true;
       },
       "revoke_when_its_claim_is_gone", Action::kRevoke, false, Reason::kClaimDeleted},
      {"VanishedClaimIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         std::erase_if(w.w.claims, [](const LeaseRecord& l) { return l.meta.name == "holder"; });
       },
       "revoke_when_its_claim_is_gone", Action::kRevoke, false, Reason::kClaimDeleted},
      {"VanishedClaimOfAGrantWeDoNotRenewWaitsForItsExpiry",
       [](World& w) {
         held_with_a_waiter(w);
         std::erase_if(w.w.claims, [](const LeaseRecord& l) { return l.meta.name == "holder"; });
         w.grant("holder").renewing = false;
       },
       "end_when_it_expires", Action::kNone, false, std::nullopt, kM0 + seconds(25)},
      // The owning Lease exists but claims another lock now: its pod may still work under
      // this one, so the grant is revoked, not released.
      {"ClaimThatMovedToAnotherLockIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         std::erase_if(w.w.claims, [](const LeaseRecord& l) { return l.meta.name == "holder"; });
         w.grant("holder").owner_moved = true;
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, false, Reason::kClaimMoved},
      {"ClaimThatNamesAnotherPodIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").spec.pod_name = "pod-other";
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, false, Reason::kClaimMoved},
      {"ConfirmedDeathHandsOverInOneWrite",
       [](World& w) {
         held_with_a_waiter(w);
         w.pod_seen_gone("pod-h");
       },
       "end_a_confirmed_death", Action::kRelease, true, Reason::kPodDeleted},
      {"ConfirmedDeathOfAFinishedPod",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods.erase("pod-n");
         w.w.pods["pod-h"].record.phase = "Failed";
       },
       "end_a_confirmed_death", Action::kRelease, true, Reason::kPodFailed},
      {"ConfirmedDeathWithLivenessOffOnlyStopsRenewing",
       [](World& w) {
         held_with_a_waiter(w);
         w.pod_seen_gone("pod-h");
         w.w.liveness_takeover = false;
       },
       "end_a_confirmed_death", Action::kRevoke, false, Reason::kExpired},
      {"NewLeaderWithLivenessOffRevokesARecordedGrantOfAConfirmedDeath",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.pod_seen_gone("pod-h");
         w.w.liveness_takeover = false;
       },
       "end_a_confirmed_death", Action::kRevoke, false, Reason::kExpired},
      {"ConfirmedDeathOfAGrantNeitherRenewedNorRecordedWithLivenessOffExpires",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.status_held("holder", "pod-h", 4294967000);
         w.pod_seen_gone("pod-h");
         w.w.liveness_takeover = false;
       },
       "end_when_it_expires", Action::kNone, false, std::nullopt, kM0 + seconds(25)},
      {"ConfirmedDeathOfARevokedGrantHandsOverAtOnce",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").revoked = Reason::kPodNotReady;
         w.pod_seen_gone("pod-h");
       },
       "end_a_confirmed_death", Action::kRelease, true, Reason::kPodDeleted},
      // A cache may lag behind a grant another replica made (a paused controller, a slow
      // watch): a holder missing from it, or another pod under its name, is only presumed
      // dead until this controller saw it go.
      {"HolderMissingButNeverSeenGoneIsRevokedNotHandedOver",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods.erase("pod-h");
       },
       "revoke_a_presumed_death", Action::kRevoke, false, Reason::kPodDeleted},
      {"AnotherPodUnderTheHoldersNameNeverSeenReplacingIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods["pod-h"].record.meta.uid = "an-older-pod";
       },
       "revoke_a_presumed_death", Action::kRevoke, false, Reason::kPodReplaced},
      // A new leader (it renews nothing yet) meets a recorded grant whose holder is missing:
      // listed at once, so that the session can be renewed for the holders that live.
      {"NewLeaderRevokesARecordedGrantWhoseHolderIsMissing",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.w.pods.erase("pod-h");
       },
       "revoke_a_presumed_death", Action::kRevoke, false, Reason::kPodDeleted},
      {"NewLeaderRevokesARecordedGrantWhoseHolderStayedUnready",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.w.pods["pod-h"].record.ready = ReadyState::kFalse;
         w.w.pods["pod-h"].unready_since = kM0 - seconds(10);
       },
       "revoke_a_presumed_death", Action::kRevoke, false, Reason::kPodNotReady},
      // Not shown Held with its token, the grant is no session's to cover: it just expires.
      {"HolderMissingFromAGrantNeitherRenewedNorRecordedWaitsForItsExpiry",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.status_held("holder", "pod-h", 4294967000);
         w.w.pods.erase("pod-h");
       },
       "end_when_it_expires", Action::kNone, false, std::nullopt, kM0 + seconds(25)},
      {"HolderMissingWithLivenessOffOnlyStopsRenewing",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods.erase("pod-h");
         w.w.liveness_takeover = false;
       },
       "revoke_a_presumed_death", Action::kRevoke, false, Reason::kExpired},
      {"PresumedDeathIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods["pod-h"].record.ready = ReadyState::kFalse;
         w.w.pods["pod-h"].unready_since = kM0 - seconds(10);
       },
       "revoke_a_presumed_death", Action::kRevoke, false, Reason::kPodNotReady},
      // Election prefers Ready pods (livenessGraceSeconds is 10 s).
      {"ElectionHolderNeverReadyPastItsGraceWhileAnotherIsReadyIsRevoked",
       [](World& w) { election_held_by_a_never_ready_pod(w, seconds(10)); }, "revoke_a_presumed_death",
       Action::kRevoke, false, Reason::kPodNotReady},
      {"ElectionHolderNeverReadyIsLookedAtAgainWhenItsGraceEnds",
       [](World& w) { election_held_by_a_never_ready_pod(w, seconds(4)); }, "keep_a_live_holder",
       Action::kNone, false, std::nullopt, kM0 + seconds(6)},
      {"ElectionHolderNeverReadyIsKeptWhileNoOtherPodIsReady",
       [](World& w) {
         election_held_by_a_never_ready_pod(w, seconds(100));
         PodState& other = w.w.pods["reporter-2"];
         other.record.ready = ReadyState::kFalse;
         other.record.shows_was_ready = false;
         other.was_ready = false;
         other.never_ready_since = kM0 - seconds(100);
       },
       "keep_a_live_holder", Action::kNone},
      {"ElectionHolderNeverReadyIsKeptWhenTheGraceIsOff",
       [](World& w) {
         election_held_by_a_never_ready_pod(w, seconds(100));
         w.find("leader").spec.liveness_grace_seconds = 0;
       },
       "keep_a_live_holder", Action::kNone},
      {"ClaimModeHolderNeverReadyIsKept",
       [](World& w) {
         held_with_a_waiter(w);
         PodState& holder = w.w.pods["pod-h"];
         holder.record.ready = ReadyState::kAbsent;
         holder.record.shows_was_ready = false;
         holder.was_ready = false;
         holder.never_ready_since = kM0 - seconds(100);
       },
       "keep_a_live_holder", Action::kNone},
      {"LiveHolderKeepsTheLock", held_with_a_waiter, "keep_a_live_holder", Action::kNone},
      {"UnreadyHolderIsLookedAtAgainWhenItsGraceEnds",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods["pod-h"].record.ready = ReadyState::kFalse;
         w.w.pods["pod-h"].unready_since = kM0 - seconds(4);
       },
       "keep_a_live_holder", Action::kNone, false, std::nullopt, kM0 + seconds(6)},
      {"GrantRecordedInItsStatusIsAdopted",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
       },
       "adopt_a_recorded_grant", Action::kAdopt},
      {"GrantNotRecordedWaitsForItsExpiry",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.status_held("holder", "pod-h", 4294967000);
       },
       "end_when_it_expires", Action::kNone, false, std::nullopt, kM0 + seconds(25)},
      {"RevokedGrantIsHandedOverOnceExpired",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").revoked = Reason::kPodNotReady;
         w.w.pods["pod-h"].record.ready = ReadyState::kFalse;
         w.w.pods["pod-h"].unready_since = kM0 - seconds(40);
         w.w.mono = kM0 + seconds(25);
       },
       "end_when_it_expires", Action::kRelease, true, Reason::kPodNotReady},
      {"GrantWhoseRenewalFailedIsHandedOverAsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").revoked = Reason::kRenewalFailed;
         w.w.mono = kM0 + seconds(25);
       },
       "end_when_it_expires", Action::kRelease, true, Reason::kRevoked},
      {"GrantOfADeletedClaimIsHandedOverAsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").revoked = Reason::kClaimDeleted;
         w.w.mono = kM0 + seconds(25);
       },
       "end_when_it_expires", Action::kRelease, true, Reason::kRevoked},
      {"GrantOfAClaimThatMovedIsHandedOverAsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").revoked = Reason::kClaimMoved;
         w.w.mono = kM0 + seconds(25);
       },
       "end_when_it_expires", Action::kRelease, true, Reason::kRevoked},
      {"ClaimThatAsksForAnotherShapeIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").spec.capacity = 2;
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, false, Reason::kClaimMoved},
      {"RecordedGrantOfAClaimThatAsksForAnotherShapeIsRevokedByANewLeader",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.find("holder").spec.capacity = 2;
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, false, Reason::kClaimMoved},
      {"ClaimThatNamesOtherLocksIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").spec.lock_names = {"report", "audit"};
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, false, Reason::kClaimMoved},
      {"AccessMeansNothingAtCapacityOne",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").spec.access = lock::Access::kExclusive;
       },
       "keep_a_live_holder", Action::kNone},
      {"BrokenGrantIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").broken = true;
       },
       "revoke_a_broken_grant", Action::kRevoke, false, Reason::kRenewalFailed},
      {"PartlyRevokedGrantIsRevokedWhole",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").broken = true;
         w.grant("holder").revoked = Reason::kPodNotReady;
       },
       "revoke_a_broken_grant", Action::kRevoke, false, Reason::kPodNotReady},
      {"BrokenGrantOfADeadHolderEndsAtOnce",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").broken = true;
         w.pod_seen_gone("pod-h");
       },
       "end_a_confirmed_death", Action::kRelease, true, Reason::kPodDeleted},
      // Two controllers that both believed they led each granted "holder" (another slot);
      // its Lease records the other, later grant: ours gives way.
      {"GrantItsLeaseShowsALaterGrantInsteadOfIsGivenUp",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant_on({{"report", 1}}, "holder", "pod-h", 4294967400, 1, Access::kExclusive, false);
         w.status_held("holder", "pod-h", 4294967400);
       },
       "give_way_to_the_recorded_grant", Action::kRevoke, false, Reason::kClaimMoved},
      {"RecordedGrantOlderThanOursIsNoReasonToGiveWay",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant_on({{"report", 1}}, "holder", "pod-h", 4294967200, 1, Access::kExclusive, false);
         w.status_held("holder", "pod-h", 4294967200);
       },
       "keep_a_live_holder", Action::kNone},
      {"RecordedGrantThatIsRevokedIsNoReasonToGiveWay",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant_on({{"report", 1}}, "holder", "pod-h", 4294967400, 1, Access::kExclusive, false).revoked =
             Reason::kPodNotReady;
         w.status_held("holder", "pod-h", 4294967400);
       },
       "keep_a_live_holder", Action::kNone},
      {"GrantNobodyRenewsIsHandedOverAsExpired",
       [](World& w) {
         held_with_a_waiter(w);
         w.grant("holder").renewing = false;
         w.status_held("holder", "pod-h", 4294967000);
         w.w.mono = kM0 + seconds(25);
       },
       "end_when_it_expires", Action::kRelease, true, Reason::kExpired},
  };
  return rows;
}

class GrantRules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(GrantRules, TheRuleThatAppliesDecides) {
  const RuleCase& c = GetParam();
  World world;
  c.build(world);
  world.decide();  // works out the locks' shapes
  const ClaimQueue queue = classify_claims(world.w);
  const GrantView& grant = world.w.grants.front();
  const GrantVerdict verdict = judge_grant(world.w, grant, queue.owner_of(world.w, grant));
  EXPECT_STREQ(verdict.rule, c.rule);
  EXPECT_EQ(to_string(verdict.action), std::string(to_string(c.action)));
  EXPECT_EQ(verdict.ends_now, c.ends_now);
  if (c.reason) {
    ASSERT_TRUE(verdict.reason);
    EXPECT_EQ(api::to_string(*verdict.reason), std::string(api::to_string(*c.reason)));
  }
  EXPECT_EQ(verdict.wake_at, c.wake_at);
}

INSTANTIATE_TEST_SUITE_P(EachRule, GrantRules, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<RuleCase>& info) { return info.param.name; });

// A reconcile whose write failed projects statuses only: no rule acts.
TEST(Decision, AfterAFailedWriteOnlyStatusesAreProjected) {
  World world;
  held_with_a_waiter(world);
  world.w.pods.erase("pod-h");
  world.w.act = false;
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_STREQ(d.rule, "");
  EXPECT_EQ(worlds::held_reason(worlds::status_of(d, "next")), "False/Waiting");
  EXPECT_EQ(worlds::status_of(d, "next").queue_position, 0);
}

}  // namespace
}  // namespace eslease::controller
