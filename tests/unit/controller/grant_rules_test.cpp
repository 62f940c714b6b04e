// The grant rules one by one: each row builds the smallest world in which one rule decides,
// and checks that it is that rule, with the action and reason it stands for. Rows that show
// a rule passing (so a later one decides) say so in their name.
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
  std::optional<Reason> reason = std::nullopt;  // the plan's reason
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
  DocumentView& d = w.held("outside", "cron-host", 4294967299, false);
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
      {"FreeLockGoesToTheNextClaim",
       [](World& w) {
         w.claim("a", "pod-a");
         w.pod("pod-a");
       },
       "grant_a_free_lock", Action::kAcquire},
      {"FreeLockWithNobodyLiveStaysFree", [](World& w) { w.claim("a", "pod-not-yet-created"); },
       "grant_a_free_lock", Action::kNone},
      {"ForeignLockIsRespectedUntilItExpires", foreign_lock_with_a_waiter, "respect_a_foreign_lock",
       Action::kNone, std::nullopt, kM0 + seconds(25)},
      {"ForeignLockIsTakenOverOnceExpired",
       [](World& w) {
         foreign_lock_with_a_waiter(w);
         w.w.mono = kM0 + seconds(25);
       },
       "respect_a_foreign_lock", Action::kTakeOver, Reason::kExpired},
      {"ClaimDeletedByItsHolderReleasesAtOnce",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").being_deleted = true;
         w.find("holder").released_token = "4294967300";
       },
       "release_what_its_holder_let_go", Action::kRelease, Reason::kReleased},
      {"ClaimDeletedBySomeoneElseIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").being_deleted = true;
         w.find("holder").released_token = "4294967000";  // an earlier grant's token
       },
       "revoke_when_its_claim_is_gone", Action::kRevoke, Reason::kClaimDeleted},
      {"VanishedClaimIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         std::erase_if(w.w.claims, [](const LeaseRecord& l) { return l.meta.name == "holder"; });
       },
       "revoke_when_its_claim_is_gone", Action::kRevoke, Reason::kClaimDeleted},
      {"VanishedClaimOfAGrantWeDoNotRenewWaitsForItsExpiry",
       [](World& w) {
         held_with_a_waiter(w);
         std::erase_if(w.w.claims, [](const LeaseRecord& l) { return l.meta.name == "holder"; });
         w.w.document->renewing = false;
       },
       "hand_over_when_it_expires", Action::kNone, std::nullopt, kM0 + seconds(25)},
      // The owning Lease exists but claims another lock now: its pod may still work under
      // this one, so the grant is revoked, not released.
      {"ClaimThatMovedToAnotherLockIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         std::erase_if(w.w.claims, [](const LeaseRecord& l) { return l.meta.name == "holder"; });
         w.w.document->owner_moved = true;
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, Reason::kClaimMoved},
      {"ClaimThatNamesAnotherPodIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.find("holder").spec.pod_name = "pod-other";
       },
       "revoke_when_its_claim_moved_on", Action::kRevoke, Reason::kClaimMoved},
      {"ConfirmedDeathHandsOverInOneWrite",
       [](World& w) {
         held_with_a_waiter(w);
         w.pod_seen_gone("pod-h");
       },
       "hand_over_from_a_confirmed_death", Action::kTakeOver, Reason::kPodDeleted},
      {"ConfirmedDeathWithNobodyWaitingReleases",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods.erase("pod-n");
         w.w.pods["pod-h"].record.phase = "Failed";
       },
       "hand_over_from_a_confirmed_death", Action::kRelease, Reason::kPodFailed},
      {"ConfirmedDeathWithLivenessOffOnlyStopsRenewing",
       [](World& w) {
         held_with_a_waiter(w);
         w.pod_seen_gone("pod-h");
         w.w.liveness_takeover = false;
       },
       "hand_over_from_a_confirmed_death", Action::kRevoke, Reason::kExpired},
      {"ConfirmedDeathOfARevokedGrantHandsOverAtOnce",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->revoked = Reason::kPodNotReady;
         w.pod_seen_gone("pod-h");
       },
       "hand_over_from_a_confirmed_death", Action::kTakeOver, Reason::kPodDeleted},
      // A cache may lag behind a grant another replica made (a paused controller, a slow
      // watch): a holder missing from it, or another pod under its name, is only presumed
      // dead until this controller saw it go.
      {"HolderMissingButNeverSeenGoneIsRevokedNotHandedOver",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods.erase("pod-h");
       },
       "revoke_a_presumed_death", Action::kRevoke, Reason::kPodDeleted},
      {"AnotherPodUnderTheHoldersNameNeverSeenReplacingIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods["pod-h"].record.meta.uid = "an-older-pod";
       },
       "revoke_a_presumed_death", Action::kRevoke, Reason::kPodReplaced},
      {"HolderMissingFromAGrantWeDoNotRenewWaitsForItsExpiry",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->renewing = false;
         w.w.pods.erase("pod-h");
       },
       "hand_over_when_it_expires", Action::kNone, std::nullopt, kM0 + seconds(25)},
      {"HolderMissingWithLivenessOffOnlyStopsRenewing",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods.erase("pod-h");
         w.w.liveness_takeover = false;
       },
       "revoke_a_presumed_death", Action::kRevoke, Reason::kExpired},
      {"PresumedDeathIsRevoked",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.pods["pod-h"].record.ready = ReadyState::kFalse;
         w.w.pods["pod-h"].unready_since = kM0 - seconds(10);
       },
       "revoke_a_presumed_death", Action::kRevoke, Reason::kPodNotReady},
      // Election prefers Ready pods (livenessGraceSeconds is 10 s).
      {"ElectionHolderNeverReadyPastItsGraceWhileAnotherIsReadyIsRevoked",
       [](World& w) { election_held_by_a_never_ready_pod(w, seconds(10)); }, "revoke_a_presumed_death",
       Action::kRevoke, Reason::kPodNotReady},
      {"ElectionHolderNeverReadyIsLookedAtAgainWhenItsGraceEnds",
       [](World& w) { election_held_by_a_never_ready_pod(w, seconds(4)); }, "keep_a_live_holder",
       Action::kNone, std::nullopt, kM0 + seconds(6)},
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
       "keep_a_live_holder", Action::kNone, std::nullopt, kM0 + seconds(6)},
      {"GrantRecordedInItsStatusIsAdopted",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->renewing = false;
       },
       "adopt_a_recorded_grant", Action::kAdopt},
      {"GrantNotRecordedWaitsForItsExpiry",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->renewing = false;
         w.status_held("holder", "pod-h", 4294967000);
       },
       "hand_over_when_it_expires", Action::kNone, std::nullopt, kM0 + seconds(25)},
      {"RevokedGrantIsHandedOverOnceExpired",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->revoked = Reason::kPodNotReady;
         w.w.pods["pod-h"].record.ready = ReadyState::kFalse;
         w.w.pods["pod-h"].unready_since = kM0 - seconds(40);
         w.w.mono = kM0 + seconds(25);
       },
       "hand_over_when_it_expires", Action::kTakeOver, Reason::kPodNotReady},
      {"GrantWhoseRenewalFailedIsHandedOverAsExpired",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->revoked = Reason::kRenewalFailed;
         w.w.mono = kM0 + seconds(25);
       },
       "hand_over_when_it_expires", Action::kTakeOver, Reason::kExpired},
      {"GrantOfADeletedClaimIsHandedOverAsExpired",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->revoked = Reason::kClaimDeleted;
         w.w.mono = kM0 + seconds(25);
       },
       "hand_over_when_it_expires", Action::kTakeOver, Reason::kExpired},
      {"GrantOfAClaimThatMovedIsHandedOverAsExpired",
       [](World& w) {
         held_with_a_waiter(w);
         w.w.document->revoked = Reason::kClaimMoved;
         w.w.mono = kM0 + seconds(25);
       },
       "hand_over_when_it_expires", Action::kTakeOver, Reason::kExpired},
  };
  return rows;
}

class GrantRules : public ::testing::TestWithParam<RuleCase> {};

TEST_P(GrantRules, TheRuleThatAppliesDecides) {
  const RuleCase& c = GetParam();
  World world;
  c.build(world);
  const ActionPlan plan = decide_action(world.w, classify_claims(world.w));
  EXPECT_STREQ(plan.rule, c.rule);
  EXPECT_EQ(to_string(plan.action), std::string(to_string(c.action)));
  if (c.reason) {
    ASSERT_TRUE(plan.reason);
    EXPECT_EQ(api::to_string(*plan.reason), std::string(api::to_string(*c.reason)));
  }
  EXPECT_EQ(plan.wake_at, c.wake_at);
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

// The election owner fails over to another of its pods before anyone else is served; a
// claim-mode owner that loses its pod queues again behind those already waiting.
TEST(NextClaim, AnElectionOwnerFailsOverFirstAClaimModeOwnerQueuesAgain) {
  World world;
  world.election("leader", "reporter", seconds(10));
  world.claim("other", "pod-x", Priority::kForeground, seconds(5000));
  world.pod("pod-x");
  world.pod("reporter-1", "reporter", seconds(300));
  world.pod("reporter-2", "reporter", seconds(200));
  world.held("leader", "reporter-1");
  ClaimQueue queue = classify_claims(world.w);
  std::optional<NextGrant> next = next_claim(world.w, queue, queue.owner);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->claim->lease->meta.name, "leader");
  EXPECT_EQ(next->pod->record.meta.name, "reporter-2");

  World claims;
  claims.claim("holder", "pod-h", Priority::kForeground, seconds(5000));
  claims.claim("next", "pod-n", Priority::kForeground, seconds(100));
  claims.pod("pod-h");
  claims.pod("pod-n");
  claims.held("holder", "pod-h");
  queue = classify_claims(claims.w);
  next = next_claim(claims.w, queue, queue.owner);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->claim->lease->meta.name, "next") << "the owner waits again from now, behind 'next'";
  EXPECT_EQ(queue.owner->waiting_since, claims.w.now - seconds(5000)) << "next_claim changes nothing";
}

}  // namespace
}  // namespace eslease::controller
