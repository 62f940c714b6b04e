// The decision function, row by row of the design's "Claims and phases" and "Liveness",
// on a fixed clock: each test builds a world, decides, and checks the action and the
// statuses a user would read with kubectl. Every row runs on every shape of lock (the
// design's "Lock shapes"): a single lock, a semaphore of capacity 3 full of Shared holders, an
// Exclusive writer on capacity 3, and a set of two locks; one rule holds for all of them.
#include "controller/decision.h"

#include <gtest/gtest.h>

#include <utility>

#include "unit/controller/lock_world.h"

namespace eslease::controller {
namespace {

using api::Reason;
using std::chrono::seconds;
using worlds::held_reason;
using worlds::kM0;
using worlds::kT0;
using worlds::Shape;
using worlds::status_of;
using worlds::World;

class Rows : public ::testing::TestWithParam<Shape> {
 protected:
  World world{GetParam()};
  bool single() const { return GetParam() == Shape::kSingle; }
};

INSTANTIATE_TEST_SUITE_P(Shapes, Rows, ::testing::ValuesIn(worlds::kShapes),
                         [](const auto& info) { return worlds::to_string(info.param); });

// --- granting ---------------------------------------------------------------------------

// The world builder's references stay valid while the world grows.
TEST_P(Rows, ABuiltClaimStaysInPlaceWhileMoreAreAdded) {
  LeaseRecord& first = world.claim("first", "pod-1");
  for (int i = 0; i < 20; ++i) world.claim("more-" + std::to_string(i), "pod-1");
  EXPECT_EQ(&first, &world.find("first"));
  World copy = world;
  LeaseRecord& in_copy = copy.find("first");
  copy.claim("another", "pod-1");
  EXPECT_EQ(&in_copy, &copy.find("first"));
}

TEST_P(Rows, FreeLockIsGrantedToTheOnlyLiveClaim) {
  world.claim("a", "pod-a");
  world.pod("pod-a");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "a");
  EXPECT_EQ(d.grant.pod, "pod-a");
  EXPECT_EQ(d.grant.pod_uid, "pod-uid-pod-a");
  EXPECT_EQ(d.grant.ttl, Millis(16000)) << "the CRD's default lease duration";
  EXPECT_FALSE(d.grant.takeover_reason);
}

TEST_P(Rows, ClaimWhosePodDoesNotExistWaitsWithoutError) {
  world.claim("a", "not-yet-created");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& s = status_of(d, "a");
  EXPECT_EQ(s.phase, Phase::kPending);
  EXPECT_FALSE(s.queue_position);  // no place in line until its pod exists
  EXPECT_EQ(held_reason(s), "False/Waiting");
  EXPECT_NE(s.condition(api::kConditionHeld)->message.find("not-yet-created"), std::string::npos);
}

struct OrderCase {
  const char* name;
  Priority first_priority;
  int first_age;
  Priority second_priority;
  int second_age;
  const char* winner;
};

class GrantOrder : public ::testing::TestWithParam<std::tuple<OrderCase, Shape>> {};

TEST_P(GrantOrder, PicksByPriorityThenWaitingTime) {
  const OrderCase& c = std::get<0>(GetParam());
  World world(std::get<1>(GetParam()));
  world.claim("first", "pod-1", c.first_priority, seconds(c.first_age));
  world.claim("second", "pod-2", c.second_priority, seconds(c.second_age));
  world.pod("pod-1");
  world.pod("pod-2");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, c.winner);
}

INSTANTIATE_TEST_SUITE_P(
    Rows, GrantOrder,
    ::testing::Combine(::testing::Values(OrderCase{"older_foreground", Priority::kForeground, 50,
                                                   Priority::kForeground, 10, "first"},
                                         OrderCase{"newer_foreground", Priority::kForeground, 10,
                                                   Priority::kForeground, 50, "second"},
                                         OrderCase{"foreground_beats_older_background", Priority::kBackground,
                                                   500, Priority::kForeground, 1, "second"},
                                         OrderCase{"background_only_fcfs", Priority::kBackground, 60,
                                                   Priority::kBackground, 30, "first"}),
                       ::testing::ValuesIn(worlds::kShapes)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + worlds::to_string(std::get<1>(info.param));
    });

TEST_P(Rows, ClaimThatLostTheLockWaitsBehindThoseAlreadyWaiting) {
  // "old" was created first but lost the lock 5 s ago; "new" has waited 50 s.
  LeaseRecord& old_claim = world.claim("old", "pod-1", Priority::kForeground, seconds(500));
  old_claim.status.phase = Phase::kPending;
  old_claim.status.conditions = {{api::kConditionHeld, "False", "PodNotReady", "", kT0 - seconds(5), 1}};
  world.claim("new", "pod-2", Priority::kForeground, seconds(50));
  world.pod("pod-1");
  world.pod("pod-2");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "new");
}

TEST_P(Rows, HeldLockShowsHolderAndQueuePositionsCountOnlyLiveClaims) {
  world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  world.claim("ghost", "pod-missing", Priority::kForeground, seconds(200));
  world.claim("fg", "pod-f", Priority::kForeground, seconds(100));
  world.claim("bg", "pod-b", Priority::kBackground, seconds(400));
  for (const char* p : {"pod-h", "pod-f", "pod-b"}) world.pod(p);
  world.held("holder", "pod-h", 4294967311);
  world.status_held("holder", "pod-h", 4294967311);
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& held = status_of(d, "holder");
  EXPECT_EQ(held.phase, Phase::kHeld);
  EXPECT_EQ(held.fencing_token, "4294967311");
  ASSERT_TRUE(held.holder);
  EXPECT_EQ(held.holder->pod_name, "pod-h");
  EXPECT_EQ(held.acquire_time, kT0 - seconds(20));     // its validity is the session's, not the status's
  EXPECT_FALSE(status_of(d, "ghost").queue_position);  // no live pod: no place in line
  EXPECT_EQ(status_of(d, "fg").queue_position, 0);
  EXPECT_EQ(status_of(d, "bg").queue_position, 1);
  EXPECT_EQ(held_reason(status_of(d, "bg")), "False/Waiting");
}

// Queue positions are exact for the first ten live claims only, and beyond them the
// condition names neither the holder nor a count: a hand-over rewrites at most ten waiters.
TEST_P(Rows, QueuePositionsAreKeptForTheFirstTenClaims) {
  world.claim("holder", "pod-h", Priority::kForeground, seconds(1000));
  world.pod("pod-h");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  for (int i = 0; i < 12; ++i) {
    const std::string n = std::to_string(i);
    world.claim("w-" + n, "pod-" + n, Priority::kForeground, seconds(500 - i));
    world.pod("pod-" + n);
  }
  const Decision d = world.decide();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(status_of(d, "w-" + std::to_string(i)).queue_position, i);
  for (const char* beyond : {"w-10", "w-11"}) {
    const LeaseStatus& s = status_of(d, beyond);
    EXPECT_FALSE(s.queue_position) << beyond;
    EXPECT_EQ(held_reason(s), "False/Waiting");
    const std::string message = s.condition(api::kConditionHeld)->message;
    EXPECT_NE(message.find("more than 10"), std::string::npos) << message;
    EXPECT_EQ(message.find("pod-h"), std::string::npos) << "a new holder must not rewrite it";
  }
}

TEST_P(Rows, DecidingAgainOnItsOwnStatusesChangesNothing) {
  world.claim("holder", "pod-h");
  world.claim("waiter", "pod-w", Priority::kBackground);
  world.pod("pod-h");
  world.pod("pod-w");
  world.held("holder", "pod-h");
  Decision first = world.decide();
  for (auto& [name, status] : first.statuses) world.find(name).status = status;
  world.w.now += seconds(3);
  Decision second = world.decide();
  EXPECT_EQ(second.statuses, first.statuses);
  EXPECT_TRUE(second.events.empty());
  EXPECT_EQ(first.events.size(), 1u);  // Acquired, once
}

// --- confirmed death: immediate takeover --------------------------------------------------

struct DeathCase {
  const char* name;
  std::function<void(World&)> kill;
  Reason reason;
};

class ConfirmedDeath : public ::testing::TestWithParam<std::tuple<DeathCase, Shape>> {};

TEST_P(ConfirmedDeath, HandsTheLockToTheNextClaimInOneStep) {
  const DeathCase& c = std::get<0>(GetParam());
  World world(std::get<1>(GetParam()));
  world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  world.claim("next", "pod-n", Priority::kForeground, seconds(100));
  world.pod("pod-h");
  world.pod("pod-n");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  c.kill(world);
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "next");
  EXPECT_EQ(d.grant.takeover_reason, c.reason);
  EXPECT_EQ(d.grant.from_pod, "pod-h");
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ConfirmedDeath,
    ::testing::Combine(
        ::testing::Values(
            DeathCase{"deleted", [](World& w) { w.pod_seen_gone("pod-h"); }, Reason::kPodDeleted},
            DeathCase{"replaced", [](World& w) { w.pod_replaced("pod-h", "other"); }, Reason::kPodReplaced},
            DeathCase{"failed", [](World& w) { w.w.pods["pod-h"].record.phase = "Failed"; },
                      Reason::kPodFailed},
            DeathCase{"succeeded", [](World& w) { w.w.pods["pod-h"].record.phase = "Succeeded"; },
                      Reason::kPodSucceeded}),
        ::testing::ValuesIn(worlds::kShapes)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) + "_" + worlds::to_string(std::get<1>(info.param));
    });

TEST_P(Rows, TerminatingHolderKeepsTheLockUntilItsObjectIsGone) {
  world.claim("holder", "pod-h");
  world.claim("next", "pod-n");
  world.pod("pod-h").record.being_deleted = true;
  world.pod("pod-n");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  EXPECT_EQ(world.decide().action, Action::kNone);
  EXPECT_EQ(status_of(world.decide(), "holder").phase, Phase::kHeld);
}

TEST_P(Rows, ReplacedPodInClaimModeGetsTheLockBackOnlyWhenNobodyWaits) {
  world.claim("holder", "pod-h");
  world.pod("pod-h");
  world.pod_replaced("pod-h", "new-uid");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "holder");
  EXPECT_EQ(d.grant.pod_uid, "new-uid");
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodReplaced);

  world.claim("waiting", "pod-w", Priority::kForeground, seconds(1));
  world.pod("pod-w");
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "waiting");
}

TEST_P(Rows, DeadHolderWithNobodyWaitingReleasesAndFinishedClaimIsReleased) {
  world.claim("holder", "pod-h");
  world.pod("pod-h").record.phase = "Succeeded";
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRelease);
  EXPECT_EQ(d.action_reason, Reason::kPodSucceeded);

  world.drop_grant("holder");  // the release went through
  d = world.decide();
  const LeaseStatus& s = status_of(d, "holder");
  EXPECT_EQ(s.phase, Phase::kReleased);
  EXPECT_EQ(held_reason(s), "False/PodSucceeded");
  // Terminal for that pod: deciding again keeps it Released, a new pod of the name waits.
  world.find("holder").status = s;
  EXPECT_EQ(status_of(world.decide(), "holder").phase, Phase::kReleased);
  world.pod("pod-h").record.meta.uid = "second-pod";
  d = world.decide();
  EXPECT_EQ(d.action, Action::kGrant);
}

TEST_P(Rows, SuccessorStatusRecordsTheTakeoverAndTheLoserWaitsAgain) {
  world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  world.claim("next", "pod-n", Priority::kForeground, seconds(100));
  world.pod("pod-n");
  world.held("next", "pod-n", 4294967320);
  world.grant("next").state.doc.transitions = 2;
  world.status_held("holder", "pod-h");
  world.w.recent_grants = {RecentGrant{"next", Reason::kPodDeleted, "pod-h", kT0}};
  Decision d = world.decide();
  const LeaseStatus& next = status_of(d, "next");
  EXPECT_EQ(next.phase, Phase::kHeld);
  ASSERT_TRUE(next.last_takeover);
  EXPECT_EQ(next.last_takeover->from_pod, "pod-h");
  EXPECT_EQ(next.last_takeover->reason, "PodDeleted");
  EXPECT_EQ(next.transitions, 1);
  EXPECT_EQ(held_reason(next), "True/TakenOver");
  const LeaseStatus& loser = status_of(d, "holder");
  EXPECT_EQ(loser.phase, Phase::kPending);
  EXPECT_EQ(held_reason(loser), "False/PodDeleted");
  EXPECT_FALSE(loser.holder);
  EXPECT_TRUE(loser.fencing_token.empty());
  // One event tells the hand-over: the dead holder's loss is named in the successor's.
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].lease, "next");
  EXPECT_EQ(d.events[0].reason, Reason::kTakenOver);
  EXPECT_NE(d.events[0].message.find("pod-h"), std::string::npos) << d.events[0].message;
}

// The capacity raised on every claim of a lock while it is held. A grant of the whole lock
// (Exclusive, or any grant at capacity 1) no longer matches its claim: it is revoked, and its
// claim is granted again at once in its new shape, to the same pod, in both modes. Its holder
// may act alone until the old grant's validity ends, so nobody else is served on the lock
// before: the old grant keeps a document there (or, granted again Exclusive, the new grant
// has every slot). Shared holders of a semaphore never were alone: they keep their grants,
// and the new slot is served at once. The same holds for a new leader that finds the grant
// recorded in its Lease (the capacity raised while no controller ran): it adopts or revokes it.
TEST_P(Rows, ARaisedCapacityReshapesAGrantOfTheWholeLockAtOnceAndSharesItOnlyOnceTheOldOneEnds) {
  const bool alone =
      api::effective_access(world.shape_capacity(), world.shape_access()) == Access::kExclusive;
  for (const auto& [election, new_leader] :
       {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
    SCOPED_TRACE(election ? "election mode" : "claim mode");
    SCOPED_TRACE(new_leader ? "a new leader" : "the leader that granted it");
    World w(GetParam());
    if (election)
      w.election("holder", "leaders", seconds(300));
    else
      w.claim("holder", "pod-h", Priority::kForeground, seconds(300));
    w.claim("waiting", "pod-w", Priority::kForeground, seconds(200));
    w.pod("pod-h", "leaders");
    w.pod("pod-w");
    w.held("holder", "pod-h");
    w.status_held("holder", "pod-h");
    if (new_leader) w.grant("holder").renewing = false;
    for (LeaseRecord& c : w.w.claims) c.spec.capacity = w.shape_capacity() + 1;  // kubectl patch
    Decision d = w.decide();
    int revoked = 0;
    for (int step = 0; d.action == Action::kRevoke || d.action == Action::kAdopt; ++step, d = w.decide()) {
      ASSERT_LT(step, 2) << "only the holder's grant is revoked or adopted";
      for (GrantView& g : w.w.grants) {
        if (g.slots != d.subject) continue;
        if (d.action == Action::kAdopt) {
          g.renewing = true;
        } else {
          g.revoked = Reason::kClaimMoved;
          ++revoked;
        }
      }
    }
    if (!alone) {
      EXPECT_EQ(revoked, 0) << "a Shared holder keeps its slot";
      ASSERT_EQ(d.action, Action::kGrant);
      EXPECT_EQ(d.grant.lease, "waiting") << "the slot the raise added";
      continue;
    }
    EXPECT_EQ(revoked, 1);
    ASSERT_EQ(d.action, Action::kGrant);
    EXPECT_EQ(d.grant.lease, "holder") << "granted again at once, in its new shape";
    EXPECT_EQ(d.grant.pod, "pod-h");
    EXPECT_FALSE(d.grant.takes_over());
    const bool whole_lock = d.grant.access == Access::kExclusive;
    EXPECT_EQ(d.grant.slots.size(), whole_lock ? 4u : w.shape_locks().size());
    w.write(d.grant, 4294967301);
    d = w.decide();
    EXPECT_EQ(d.action, Action::kNone) << "not shared before the old grant ends";
    EXPECT_EQ(status_of(d, "holder").phase, Phase::kHeld);
    EXPECT_EQ(status_of(d, "holder").fencing_token, "4294967301");
    EXPECT_EQ(status_of(d, "waiting").phase, Phase::kPending);

    w.w.mono = kM0 + seconds(25);
    d = w.decide();
    if (whole_lock) {
      EXPECT_EQ(d.action, Action::kNone) << "the new grant has every slot";
      continue;
    }
    ASSERT_EQ(d.action, Action::kGrant);
    EXPECT_EQ(d.grant.lease, "waiting") << "the slot the old grant kept";
    EXPECT_FALSE(d.grant.takes_over()) << "its holder lost nothing";
  }
}

// --- presumed death: revoke, then wait for the published expiry ------------------------------

TEST_P(Rows, NotReadyHolderIsRevokedAfterGraceAndHandedOverOnlyAfterExpiry) {
  LeaseRecord& holder = world.claim("holder", "pod-h");
  holder.spec.liveness_grace_seconds = 10;
  world.claim("next", "pod-n");
  PodState& h = world.pod("pod-h");
  h.record.ready = ReadyState::kFalse;
  h.unready_since = kM0 - seconds(4);
  world.pod("pod-n");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");

  Decision d = world.decide();  // 4 s of 10 s grace
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(d.requeue_at, kM0 + seconds(6));

  world.w.mono += seconds(6);
  world.w.now += seconds(6);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.action_reason, Reason::kPodNotReady);

  world.grant("holder").revoked = Reason::kPodNotReady;
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);  // the old holder may still run until its expiry
  EXPECT_EQ(d.requeue_at, kM0 + seconds(25));
  EXPECT_EQ(status_of(d, "holder").phase, Phase::kPending);
  EXPECT_EQ(held_reason(status_of(d, "holder")), "False/PodNotReady");
  ASSERT_EQ(d.events.size(), 1u) << "a holder that may still run is told on its own Lease";
  EXPECT_EQ(d.events[0].lease, "holder");
  EXPECT_EQ(d.events[0].reason, Reason::kPodNotReady);

  world.w.mono = kM0 + seconds(25);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "next");
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodNotReady);
}

// A revoked holder's pod that then dies is proof it let go: handed over at once. Its Lease
// deleted by someone else is not: the hand-over still waits for the validity it was shown,
// unless the holder marked the token it let go of before deleting its Lease (the tool).
TEST_P(Rows, RevokedHolderIsHandedOverAtOnceOnlyOnProofItLetGo) {
  for (const char* change : {"pod deleted", "claim deleted", "claim released by its holder"}) {
    World world(GetParam());
    world.claim("holder", "pod-h");
    world.claim("next", "pod-n");
    world.pod("pod-h").record.ready = ReadyState::kFalse;
    world.pod("pod-n");
    world.held("holder", "pod-h").revoked = Reason::kPodNotReady;
    const std::string what = change;
    if (what == "pod deleted") world.pod_seen_gone("pod-h");
    if (what != "pod deleted") world.find("holder").being_deleted = true;
    if (what == "claim released by its holder") world.find("holder").released_token = "4294967300";
    Decision d = world.decide();
    if (what == "pod deleted") {
      ASSERT_EQ(d.action, Action::kGrant) << change;
      EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);
    } else if (what == "claim deleted") {
      EXPECT_EQ(d.action, Action::kNone) << change;
      EXPECT_EQ(d.requeue_at, kM0 + seconds(25));
      world.w.mono = kM0 + seconds(25);
      ASSERT_EQ(world.decide().action, Action::kGrant) << change;
      EXPECT_EQ(world.decide().grant.lease, "next");
    } else {
      // Written over for the next claim in the same write, which is no takeover.
      ASSERT_EQ(d.action, Action::kGrant) << change;
      EXPECT_EQ(d.grant.lease, "next");
      EXPECT_FALSE(d.grant.takeover_reason);
    }
  }
}

TEST_P(Rows, PodNeverReadyYetIsAliveAndGrantable) {
  world.claim("a", "pod-a");
  PodState& p = world.pod("pod-a");
  p.record.ready = ReadyState::kFalse;
  p.record.shows_was_ready = false;
  p.was_ready = false;
  EXPECT_EQ(world.decide().action, Action::kGrant);
  world.held("a", "pod-a");
  world.status_held("a", "pod-a");
  EXPECT_EQ(world.decide().action, Action::kNone);
}

TEST_P(Rows, PodUnreadyAfterBeingReadyOrOnUnreadyNodeIsNotGranted) {
  world.claim("a", "pod-a");
  world.pod("pod-a").record.ready = ReadyState::kFalse;
  EXPECT_EQ(world.decide().action, Action::kNone);
  world.pod("pod-a").node_ready = false;
  EXPECT_EQ(world.decide().action, Action::kNone);
}

TEST_P(Rows, UnreadyNodeMakesTheHolderPresumedDead) {
  world.claim("holder", "pod-h");
  world.claim("next", "pod-n");
  PodState& h = world.pod("pod-h");
  h.node_ready = false;
  h.unready_since = kM0 - seconds(11);
  world.pod("pod-n");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.action_reason, Reason::kPodNotReady);
}

// A holder whose node stopped heartbeating may still run (a partition): presumed dead, its
// grant revoked at once and handed over only after the validity published to it, never to a
// pod on a silent node.
TEST_P(Rows, AHolderOnASilentNodeIsRevokedAndHandedOverAfterItsValidity) {
  world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  world.claim("on-silent-node", "pod-s", Priority::kForeground, seconds(200));
  world.claim("next", "pod-n", Priority::kForeground, seconds(100));
  world.pod("pod-h").node_silent_since = kM0 - seconds(1);
  world.pod("pod-s").node_silent_since = kM0 - seconds(1);
  world.pod("pod-n");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.action_reason, Reason::kNodeLost);

  world.grant("holder").revoked = Reason::kNodeLost;
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(held_reason(status_of(d, "holder")), "False/NodeLost");
  EXPECT_FALSE(status_of(d, "on-silent-node").queue_position) << "no place in line on a silent node";

  world.w.mono = kM0 + seconds(25);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "next");
  EXPECT_EQ(d.grant.takeover_reason, Reason::kNodeLost);
}

TEST_P(Rows, GraceZeroTurnsTheReadinessCheckOff) {
  world.claim("holder", "pod-h").spec.liveness_grace_seconds = 0;
  PodState& h = world.pod("pod-h");
  h.record.ready = ReadyState::kFalse;
  h.unready_since = kM0 - seconds(3600);
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_FALSE(d.requeue_at);
}

// --- documents this controller did not grant ---------------------------------------------

TEST_P(Rows, DirectModeDocumentIsRespectedUntilItExpiresOnOurClock) {
  world.claim("a", "pod-a");
  world.pod("pod-a");
  GrantView& doc = world.held("outside", "cron-host", 4294967299, false);
  doc.state.doc.lease = "";
  doc.state.doc.lease_uid = "cli-1234";
  doc.state.doc.holder = "cron-host";
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(d.requeue_at, kM0 + seconds(25));
  EXPECT_EQ(held_reason(status_of(d, "a")), "False/Waiting");
  if (single()) {  // a slot of several, or a set, is waited for as a whole
    EXPECT_NE(status_of(d, "a").condition(api::kConditionHeld)->message.find("cron-host"), std::string::npos);
  }

  world.w.mono = kM0 + seconds(25);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.takeover_reason, Reason::kExpired);
  EXPECT_EQ(d.grant.from_pod, "cron-host");
}

TEST_P(Rows, GrantFoundAtStartUpIsAdoptedWhenTheStatusRecordsIt) {
  world.claim("holder", "pod-h");
  world.pod("pod-h");
  world.held("holder", "pod-h", 4294967300, false);
  world.status_held("holder", "pod-h", 4294967300);
  EXPECT_EQ(world.decide().action, Action::kAdopt);

  // A status that does not record this grant: it is not renewed, and after it expires it
  // is decided afresh.
  world.status_held("holder", "pod-h", 4294967000);
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(d.requeue_at, kM0 + seconds(25));
}

// The claim "holder" in claim mode (pod-h) or in election mode (one pod, reporter-1, of
// app=reporter), with its pod; returns the pod's name.
std::string holder_claim(World& w, bool election) {
  if (!election) {
    w.claim("holder", "pod-h");
    w.pod("pod-h");
    return "pod-h";
  }
  w.election("holder", "reporter");
  w.pod("reporter-1", "reporter");
  return "reporter-1";
}

// Two controllers that both believed they led each granted the claim; its Lease records the
// later grant. Ours gives way (revoked, to end after its validity) and the recorded one is
// adopted, in claim and in election mode. The other grant is placed on slots beside ours,
// above the capacity, so that the rule is judged alone whatever the shape.
TEST_P(Rows, AGrantItsLeaseDoesNotRecordGivesWayToTheLaterOneItDoes) {
  for (const bool election : {false, true}) {
    World w{GetParam()};
    const std::string pod = holder_claim(w, election);
    GrantView& ours = w.held("holder", pod, 4294967300);
    std::vector<SlotRef> beside = ours.slots;
    for (SlotRef& ref : beside) ref.slot += w.shape_capacity();
    const std::vector<SlotRef> our_slots = ours.slots;
    w.grant_on(beside, "holder", pod, 4294967400, w.shape_capacity(), w.shape_access(), false);
    w.status_held("holder", pod, 4294967400);
    const Decision d = w.decide();
    ASSERT_EQ(d.action, Action::kRevoke) << election;
    EXPECT_STREQ(d.rule, "give_way_to_the_recorded_grant") << election;
    EXPECT_EQ(d.subject, our_slots) << election;

    w.grant("holder").revoked = Reason::kClaimMoved;  // ours, the first of its grants
    const Decision next = w.decide();
    EXPECT_EQ(next.action, Action::kAdopt) << election;
    EXPECT_EQ(next.subject, beside) << election;
  }
}

TEST_P(Rows, MalformedDocumentBlocksGrantsWithAClearCondition) {
  world.claim("a", "pod-a");
  world.pod("pod-a");
  world.w.malformed_document = "lock batch/report: the document is not a lock document: missing field holder";
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(held_reason(status_of(d, "a")), "False/MalformedLockDocument");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_TRUE(d.events[0].warning);
}

// --- election mode ------------------------------------------------------------------------

TEST_P(Rows, ElectionFailsOverToAnotherMatchingPodInTheSameWrite) {
  world.election("leader", "reporter");
  world.claim("other-claim", "pod-x", Priority::kForeground, seconds(5000));
  world.pod("pod-x");
  world.pod("reporter-1", "reporter", seconds(300));
  world.pod("reporter-2", "reporter", seconds(200));
  world.held("leader", "reporter-1");
  world.status_held("leader", "reporter-1");
  world.pod_seen_gone("reporter-1");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "leader");
  EXPECT_EQ(d.grant.pod, "reporter-2");
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);
}

TEST_P(Rows, ElectionWithNoLiveMatchingPodReleasesAndWaits) {
  world.election("leader", "reporter");
  world.pod("reporter-1", "reporter");
  world.held("leader", "reporter-1");
  world.status_held("leader", "reporter-1");
  world.w.pods["reporter-1"].record.phase = "Failed";
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRelease);
  world.drop_grant("leader");
  d = world.decide();
  EXPECT_EQ(status_of(d, "leader").phase, Phase::kPending);  // election claims are never Released
  EXPECT_EQ(d.action, Action::kNone);
}

TEST_P(Rows, ElectionPrefersReadyPodsThenTheOldest) {
  world.election("leader", "reporter");
  PodState& young_ready = world.pod("reporter-young", "reporter", seconds(10));
  PodState& old_starting = world.pod("reporter-old", "reporter", seconds(900));
  old_starting.record.ready = ReadyState::kFalse;
  old_starting.was_ready = false;
  (void)young_ready;
  world.pod("unrelated", "web", seconds(5000));
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.pod, "reporter-young");
}

// A pod stuck Pending on a node that never ran it (no Ready condition at all) waits behind a
// Ready pod, however old it is.
TEST_P(Rows, ElectionGrantsAReadyPodBeforeOneThatWasNeverReady) {
  world.election("leader", "reporter");
  PodState& stuck = world.pod("reporter-stuck", "reporter", seconds(5000));
  stuck.record.phase = "Pending";
  stuck.record.ready = ReadyState::kAbsent;
  stuck.record.shows_was_ready = false;
  stuck.was_ready = false;
  world.pod("reporter-ready", "reporter", seconds(10));
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.pod, "reporter-ready");
}

// The case: the stuck pod was granted while it was the only one; a Ready pod appears.
// The grant is revoked once the stuck pod has had its grace, and handed to the Ready pod
// only when the validity published to the stuck one has ended.
TEST_P(Rows, ElectionHolderThatNeverBecameReadyYieldsToAReadyPodAfterItsValidity) {
  world.election("leader", "reporter");
  PodState& stuck = world.pod("reporter-stuck", "reporter", seconds(300));
  stuck.record.phase = "Pending";
  stuck.record.ready = ReadyState::kAbsent;
  stuck.record.shows_was_ready = false;
  stuck.was_ready = false;
  stuck.never_ready_since = kM0 - seconds(300);
  world.held("leader", "reporter-stuck");
  world.status_held("leader", "reporter-stuck");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone) << "no other pod is Ready: it keeps the lock";
  EXPECT_FALSE(d.requeue_at);

  world.pod("reporter-ready", "reporter", seconds(5));
  d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.action_reason, Reason::kPodNotReady);

  world.grant("leader").renewing = false;
  world.grant("leader").revoked = Reason::kPodNotReady;
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone) << "not before its validity ends";
  EXPECT_EQ(status_of(d, "leader").phase, Phase::kPending);
  EXPECT_EQ(held_reason(status_of(d, "leader")), "False/PodNotReady");
  EXPECT_EQ(d.requeue_at, kM0 + seconds(25));

  world.w.mono = kM0 + seconds(25);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.pod, "reporter-ready");
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodNotReady);
}

// --- timeouts, invalid claims, deletion ------------------------------------------------------

TEST_P(Rows, AcquireTimeoutEndsTheWaitAsTimedOut) {
  world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  world.claim("impatient", "pod-i", Priority::kForeground, seconds(50)).spec.acquire_timeout_seconds = 60;
  world.pod("pod-h");
  world.pod("pod-i");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();
  EXPECT_EQ(status_of(d, "impatient").phase, Phase::kPending);
  EXPECT_EQ(d.requeue_at, kM0 + seconds(10));

  world.w.now += seconds(10);
  world.w.mono += seconds(10);
  d = world.decide();
  const LeaseStatus& s = status_of(d, "impatient");
  EXPECT_EQ(s.phase, Phase::kTimedOut);
  EXPECT_EQ(held_reason(s), "False/TimedOut");
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, Reason::kTimedOut);
  EXPECT_TRUE(d.events[0].warning);

  // Terminal: once recorded, the lock being free does not revive it.
  world.find("impatient").status = s;
  world.drop_grant("holder");
  world.w.pods.erase("pod-h");
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "impatient").phase, Phase::kTimedOut);
}

// A try-lock (acquireTimeoutSeconds 0) is decided in the first decision that sees it: granted
// there, or TimedOut at once, saying why, never left waiting and never timed out before the
// grant was considered.
struct TryLockCase {
  const char* name;
  bool held_by_another;
  bool pod_live;
  bool write_failed;  // the decision could not act (an Elasticsearch write failed)
  Action action;
  Phase phase;  // kNone: no status is written yet
  const char* held;
  const char* message_names;
};

class TryLock : public ::testing::TestWithParam<TryLockCase> {};

TEST_P(TryLock, IsGrantedOrTimedOutInTheFirstDecision) {
  const TryLockCase& c = GetParam();
  World world;
  if (c.held_by_another) {
    world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
    world.pod("pod-h");
    world.held("holder", "pod-h");
    world.status_held("holder", "pod-h");
  }
  // Created long before now: a timeout counted from its creation would have run out already.
  world.claim("try", "pod-t", Priority::kForeground, seconds(30)).spec.acquire_timeout_seconds = 0;
  if (c.pod_live) world.pod("pod-t");
  world.w.act = !c.write_failed;
  Decision d = world.decide();
  EXPECT_EQ(d.action, c.action);
  if (c.action == Action::kGrant) {
    EXPECT_EQ(d.grant.lease, "try");
    return;
  }
  if (c.phase == Phase::kNone) {
    EXPECT_EQ(d.statuses.count("try"), 0u) << "no verdict before the grant could be tried";
    EXPECT_TRUE(d.events.empty());
    return;
  }
  const LeaseStatus& s = status_of(d, "try");
  EXPECT_EQ(s.phase, c.phase);
  EXPECT_EQ(held_reason(s), c.held);
  EXPECT_NE(s.condition(api::kConditionHeld)->message.find(c.message_names), std::string::npos)
      << s.condition(api::kConditionHeld)->message;
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_TRUE(d.events[0].warning);
  EXPECT_EQ(api::to_string(d.events[0].reason), std::string(c.held).substr(6));
}

INSTANTIATE_TEST_SUITE_P(Rows, TryLock,
                         ::testing::Values(TryLockCase{"free_lock_is_granted", false, true, false,
                                                       Action::kGrant, Phase::kNone, "", ""},
                                           TryLockCase{"held_lock_is_busy", true, true, false, Action::kNone,
                                                       Phase::kTimedOut, "False/Busy", "held by pod-h"},
                                           TryLockCase{"pod_not_live_times_out", false, false, false,
                                                       Action::kNone, Phase::kTimedOut, "False/TimedOut",
                                                       "pod-t"},
                                           TryLockCase{"no_verdict_when_the_write_failed", false, true, true,
                                                       Action::kNone, Phase::kNone, "", ""}),
                         [](const auto& info) { return std::string(info.param.name); });

// Granted in an earlier step of the same reconcile (its status not yet written), a try-lock
// shows Held; one whose grant was lost does not wait again.
TEST(TryLockDecision, ATryLockGrantedThisReconcileIsHeldAndOneThatLostItEnds) {
  World world;
  world.claim("try", "pod-t").spec.acquire_timeout_seconds = 0;
  world.pod("pod-t");
  world.held("try", "pod-t");
  Decision d = world.decide();
  EXPECT_EQ(status_of(d, "try").phase, Phase::kHeld);

  world.status_held("try", "pod-t");
  world.find("try").status.phase = Phase::kPending;  // lost it a moment ago, waited again
  world.find("try").status.conditions = {{api::kConditionHeld, "False", "PodNotReady", "", kT0, 1}};
  world.drop_grant("try");
  world.claim("other", "pod-o");
  world.pod("pod-o");
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "other");
  world.held("other", "pod-o");
  d = world.decide();
  EXPECT_EQ(status_of(d, "try").phase, Phase::kTimedOut);
}

// Two try-locks on a free lock: the first in line is granted, the other finds it busy.
TEST(TryLockDecision, OfTwoTryLocksOnAFreeLockOneIsGrantedAndTheOtherIsBusy) {
  World world;
  world.claim("first", "pod-1", Priority::kForeground, seconds(20)).spec.acquire_timeout_seconds = 0;
  world.claim("second", "pod-2", Priority::kForeground, seconds(10)).spec.acquire_timeout_seconds = 0;
  world.pod("pod-1");
  world.pod("pod-2");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "first");
  world.held("first", "pod-1");
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "first").phase, Phase::kHeld);
  EXPECT_EQ(held_reason(status_of(d, "second")), "False/Busy");
}

// A try-lock ranked ahead of a waiting claim ends in this decision: it is not counted ahead.
TEST(TryLockDecision, ATryLockThatEndsIsNotCountedAheadOfWaitingClaims) {
  World world;
  world.claim("holder", "pod-h", Priority::kForeground, seconds(300));
  world.claim("try", "pod-t", Priority::kForeground, seconds(20)).spec.acquire_timeout_seconds = 0;
  world.claim("background", "pod-b", Priority::kBackground, seconds(200));
  for (const char* pod : {"pod-h", "pod-t", "pod-b"}) world.pod(pod);
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  const Decision d = world.decide();
  EXPECT_EQ(status_of(d, "try").phase, Phase::kTimedOut);
  EXPECT_EQ(status_of(d, "background").queue_position, 0);
}

TEST_P(Rows, SpecProblemsAndDuplicatePodClaimsAreInvalid) {
  world.claim("first", "pod-a", Priority::kForeground, seconds(100));
  world.claim("duplicate", "pod-a", Priority::kForeground, seconds(50));
  world.claim("broken", "pod-b").spec.problem = "spec.holder.podSelector: invalid label key \"-x\"";
  world.pod("pod-a");
  world.pod("pod-b");
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "first");
  world.held("first", "pod-a");
  d = world.decide();
  EXPECT_EQ(status_of(d, "duplicate").phase, Phase::kInvalid);
  EXPECT_EQ(held_reason(status_of(d, "duplicate")), "False/InvalidClaim");
  EXPECT_NE(status_of(d, "duplicate").condition(api::kConditionHeld)->message.find("first"),
            std::string::npos);
  EXPECT_EQ(status_of(d, "broken").phase, Phase::kInvalid);
  int warnings = 0;
  for (const auto& e : d.events) warnings += e.warning && e.reason == Reason::kInvalid;
  EXPECT_EQ(warnings, 2);
}

// A Lease deleted with kubectl while its holder runs is revoked, not released: its grant is
// listed, waits for the holder's validity, and only then goes, and the object with it.
TEST_P(Rows, DeletedHolderLeaseIsRevokedThenReleasedThenLetGo) {
  world.claim("holder", "pod-h").being_deleted = true;
  world.pod("pod-h");
  world.held("holder", "pod-h");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kRevoke);
  EXPECT_STREQ(d.rule, "revoke_when_its_claim_is_gone");
  world.grant("holder").revoked = Reason::kClaimDeleted;
  world.grant("holder").renewing = false;
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_TRUE(d.remove_finalizer.empty()) << "the object stays until the lock is free";
  world.w.mono = kM0 + seconds(25);
  EXPECT_EQ(world.decide().action, Action::kRelease);
  world.drop_grant("holder");
  d = world.decide();
  EXPECT_EQ(d.remove_finalizer, std::vector<std::string>{"holder"});
  EXPECT_FALSE(d.statuses.count("holder"));

  // Deleted by its holder, who marked the token it let go of: released at once.
  World released(GetParam());
  LeaseRecord& lease = released.claim("holder", "pod-h");
  lease.being_deleted = true;
  lease.released_token = "4294967300";
  released.pod("pod-h");
  released.held("holder", "pod-h");
  EXPECT_EQ(released.decide().action, Action::kRelease);
}

// A new leader finds a grant its Lease records, renewed by nobody since, and the Lease being
// deleted by someone else: revoked as deleted, in claim and in election mode.
TEST_P(Rows, ANewLeaderRevokesARecordedGrantOfALeaseBeingDeletedAsDeleted) {
  for (const bool election : {false, true}) {
    World w{GetParam()};
    const std::string pod = holder_claim(w, election);
    w.held("holder", pod, 4294967300, false);
    w.status_held("holder", pod, 4294967300);
    w.find("holder").being_deleted = true;
    const Decision d = w.decide();
    ASSERT_EQ(d.action, Action::kRevoke) << election;
    EXPECT_STREQ(d.rule, "revoke_when_its_claim_is_gone") << election;
    EXPECT_EQ(d.action_reason, Reason::kClaimDeleted) << election;
  }
}

TEST_P(Rows, TheFinalizerGoesOnWithTheGrant) {
  world.claim("a", "pod-a").finalizers.clear();
  world.claim("b", "pod-b").finalizers.clear();
  world.pod("pod-a");
  world.pod("pod-b");
  EXPECT_TRUE(world.decide().add_finalizer.empty());  // waiting claims hold nothing to release
  world.held("a", "pod-a");
  EXPECT_EQ(world.decide().add_finalizer, std::vector<std::string>{"a"});
}

// --- liveness off and backend outages -----------------------------------------------------

TEST_P(Rows, WithLivenessOffADeadHolderIsOnlyHandedOverAtExpiry) {
  world.w.liveness_takeover = false;
  world.claim("holder", "pod-h");
  world.claim("next", "pod-n");
  world.pod("pod-n");
  world.held("holder", "pod-h");
  world.status_held("holder", "pod-h");
  Decision d = world.decide();  // pod-h is gone
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.action_reason, Reason::kExpired);
  world.grant("holder").revoked = Reason::kExpired;
  EXPECT_EQ(world.decide().action, Action::kNone);
  world.w.mono = kM0 + seconds(25);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.takeover_reason, Reason::kExpired);
}

TEST_P(Rows, UnreadableBackendKeepsStatusesAndMarksBackendUnavailable) {
  world.claim("holder", "pod-h");
  world.pod("pod-h");
  world.status_held("holder", "pod-h");
  world.w.documents_known = false;
  world.w.backend_available = false;
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& s = status_of(d, "holder");
  EXPECT_EQ(s.phase, Phase::kHeld);
  const Condition* backend = s.condition(api::kConditionBackendAvailable);
  ASSERT_TRUE(backend);
  EXPECT_EQ(backend->status, "False");
  EXPECT_TRUE(d.remove_finalizer.empty());
  ASSERT_EQ(d.events.size(), 1u);
  EXPECT_EQ(d.events[0].reason, Reason::kBackendUnavailable);
}

// A claim that arrives while Elasticsearch cannot be read shows that it waits, and for what.
TEST_P(Rows, AClaimMadeWhileTheBackendIsAwayShowsPendingAndWhy) {
  world.claim("new", "pod-n");
  world.pod("pod-n");
  world.w.documents_known = false;
  world.w.backend_available = false;
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& s = status_of(d, "new");
  EXPECT_EQ(s.phase, Phase::kPending);
  EXPECT_EQ(held_reason(s), "False/Waiting");
  EXPECT_NE(s.condition(api::kConditionHeld)->message.find("Elasticsearch"), std::string::npos);
  EXPECT_EQ(s.condition(api::kConditionBackendAvailable)->status, "False");
}

TEST_P(Rows, RenewalFailureIsReportedAndTheLockDecidedAfreshWithANewGrant) {
  world.claim("holder", "pod-h");
  world.pod("pod-h");
  world.held("holder", "pod-h").revoked = Reason::kRenewalFailed;
  world.status_held("holder", "pod-h");
  world.grant("holder").expires_at = kM0 - seconds(1);  // its grant ran out while Elasticsearch was away
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);  // the same claim, a new token
  EXPECT_EQ(d.grant.lease, "holder");
  world.grant("holder").expires_at = kM0 + seconds(1);
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(held_reason(status_of(d, "holder")), "False/RenewalFailed");
  ASSERT_FALSE(d.events.empty());
  EXPECT_TRUE(d.events[0].warning);
}

}  // namespace
}  // namespace eslease::controller
