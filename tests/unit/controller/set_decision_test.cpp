// The decision for lock sets (the design's "Lock shapes"), rule by rule on a fixed clock: the
// locks "report", "archive" and "ledger" of namespace "batch" decided together, as the sets
// among their claims link them. Each test checks the write the controller makes and what
// kubectl would show.
#include <gtest/gtest.h>

#include "controller/decision.h"
#include "unit/controller/lock_world.h"

namespace eslease::controller {
namespace {

using api::Reason;
using std::chrono::seconds;
using worlds::status_of;
using worlds::World;

std::vector<SlotRef> slot_zero_of(const std::vector<std::string>& locks) {
  std::vector<SlotRef> refs;
  for (const std::string& lock : locks) refs.push_back(SlotRef{lock, 0});
  return refs;
}

World report_and_archive() {
  World world;
  world.linked_locks({"report", "archive"});
  return world;
}

// Two sets naming the same locks in opposite orders: the older takes both at once, the other
// waits first in line holding nothing, so neither can wait for the other.
TEST(SetDecision, OverlappingSetsInOppositeOrdersAreServedWholeOneAfterTheOther) {
  World world = report_and_archive();
  world.set_claim("forward", "pod-f", {"report", "archive"}, api::Priority::kForeground, seconds(100));
  world.set_claim("backward", "pod-b", {"archive", "report"}, api::Priority::kForeground, seconds(50));
  world.pod("pod-f");
  world.pod("pod-b");
  const Decision first = world.decide();
  ASSERT_EQ(first.action, Action::kAcquire);
  EXPECT_EQ(first.grant.lease, "forward");
  EXPECT_EQ(first.grant.slots, slot_zero_of({"report", "archive"}));

  world.grant_on({"report", "archive"}, "forward", "pod-f", 101);
  world.status_held("forward", "pod-f", 101);
  const Decision then = world.decide();
  EXPECT_EQ(then.action, Action::kNone);
  EXPECT_EQ(status_of(then, "forward").phase, Phase::kHeld);
  EXPECT_EQ(status_of(then, "backward").phase, Phase::kPending);
  EXPECT_EQ(status_of(then, "backward").queue_position, 0);
}

// A set behind a single holder of one of its locks keeps its other lock: a younger single
// claim there waits rather than take it, so the set cannot starve.
TEST(SetDecision, ASetBehindASingleHolderKeepsItsOtherLocksFromYoungerClaims) {
  World world = report_and_archive();
  world.claim_on("archive", "single", "pod-s", api::Priority::kForeground, seconds(200));
  world.set_claim("set", "pod-set", {"report", "archive"}, api::Priority::kForeground, seconds(100));
  world.claim_on("report", "younger", "pod-y", api::Priority::kForeground, seconds(50));
  for (const char* pod : {"pod-s", "pod-set", "pod-y"}) world.pod(pod);
  world.grant_on({"archive"}, "single", "pod-s", 101);
  world.status_held("single", "pod-s", 101);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "set").phase, Phase::kPending);
  EXPECT_EQ(status_of(d, "set").queue_position, 0);
  EXPECT_EQ(status_of(d, "younger").phase, Phase::kPending);
}

// A single claim ranked ahead of a waiting set is served at once: the set keeps nothing from
// the claims before it.
TEST(SetDecision, ASingleClaimAheadOfAWaitingSetIsServed) {
  World world = report_and_archive();
  world.claim_on("archive", "single", "pod-s", api::Priority::kForeground, seconds(300));
  world.claim_on("report", "older", "pod-o", api::Priority::kForeground, seconds(200));
  world.set_claim("set", "pod-set", {"report", "archive"}, api::Priority::kForeground, seconds(100));
  for (const char* pod : {"pod-s", "pod-set", "pod-o"}) world.pod(pod);
  world.grant_on({"archive"}, "single", "pod-s", 101);
  world.status_held("single", "pod-s", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kAcquire);
  EXPECT_EQ(d.grant.lease, "older");
  EXPECT_EQ(d.grant.slots, slot_zero_of({"report"}));
}

// A holder the controller did not grant (direct mode) on one lock of the set: the set waits,
// and nothing of it is written.
TEST(SetDecision, ASetWaitsForADirectModeHolderOnOneOfItsLocks) {
  World world = report_and_archive();
  world.set_claim("set", "pod-set", {"report", "archive"});
  world.pod("pod-set");
  DocumentView& direct = world.grant_on({"archive"}, "direct", "job-host", 77);
  direct.state.doc.lease.clear();
  direct.state.doc.lease_uid = "random-uid-of-a-direct-holder";
  direct.state.doc.holder = "job-host";
  direct.renewing = false;
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "set").phase, Phase::kPending);
  ASSERT_TRUE(d.requeue_at) << "looked at again when the direct holder's document expires";
}

// Another writer replaced one document of a set grant (a partly applied hand-over, a
// direct-mode holder): the rest of the grant is revoked, so nobody is told Held on part of it.
TEST(SetDecision, ASetGrantMissingADocumentIsRevoked) {
  World world = report_and_archive();
  world.set_claim("set", "pod-set", {"report", "archive"});
  world.pod("pod-set");
  DocumentView& grant = world.grant_on({"report", "archive"}, "set", "pod-set", 101);
  grant.slots = slot_zero_of({"report"});  // archive's document is someone else's now
  grant.broken = true;
  world.status_held("set", "pod-set", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.slots, slot_zero_of({"report"}));
  EXPECT_EQ(d.action_reason, Reason::kRenewalFailed);
}

// The set's holder died: its locks go to the claims waiting on each, first in rank order, as
// takeovers of the dead grant.
TEST(SetDecision, ADeadSetHoldersLocksGoToTheClaimsWaitingOnEach) {
  World world = report_and_archive();
  world.set_claim("set", "pod-set", {"report", "archive"}, api::Priority::kForeground, seconds(300));
  world.claim_on("report", "on-report", "pod-r", api::Priority::kForeground, seconds(50));
  world.claim_on("archive", "on-archive", "pod-a", api::Priority::kForeground, seconds(40));
  world.pod("pod-r");
  world.pod("pod-a");
  world.pod_seen_gone("pod-set");
  world.grant_on({"report", "archive"}, "set", "pod-set", 101);
  world.status_held("set", "pod-set", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kTakeOver);
  EXPECT_EQ(d.grant.lease, "on-report");
  EXPECT_EQ(d.grant.slots, slot_zero_of({"report"}));
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);

  // The next step: the dead grant's other document is handed over too, not revoked.
  DocumentView& rest = world.grant_on({"archive"}, "set", "pod-set", 101);
  rest.state.doc.grant = "grant-set";
  rest.state.doc.grant_docs = {"batch/report", "batch/archive"};
  rest.broken = true;
  world.remove_grant(0);
  world.grant_on({"report"}, "on-report", "pod-r", 102);
  const Decision next = world.decide();
  ASSERT_EQ(next.action, Action::kTakeOver);
  EXPECT_EQ(next.grant.lease, "on-archive");
  EXPECT_EQ(next.grant.slots, slot_zero_of({"archive"}));
}

// A dead set holder with a set waiting on the same locks: the whole set is handed over in
// one write, with one fencing token.
TEST(SetDecision, ADeadSetHolderHandsTheWholeSetToTheNextSetInOneWrite) {
  World world;
  world.linked_locks({"report", "archive", "ledger"});
  world.set_claim("set", "pod-set", {"report", "archive", "ledger"}, api::Priority::kForeground,
                  seconds(300));
  world.set_claim("next", "pod-n", {"ledger", "report", "archive"}, api::Priority::kForeground, seconds(50));
  world.pod("pod-n");
  world.pod_seen_gone("pod-set");
  world.grant_on({"report", "archive", "ledger"}, "set", "pod-set", 101);
  world.status_held("set", "pod-set", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kTakeOver);
  EXPECT_EQ(d.grant.lease, "next");
  EXPECT_EQ(d.grant.slots, slot_zero_of({"ledger", "report", "archive"}));
}

// A grant made to the set but never confirmed to it (the controller that made it stopped
// before writing the status) is not adopted: it runs out first. Meanwhile the claim says so,
// with no place in line, the same in every reconcile of the linked locks.
TEST(SetDecision, ASetWhoseUnconfirmedGrantIsStillOnItsLocksWaitsForItToEnd) {
  World world = report_and_archive();
  world.set_claim("set", "pod-set", {"report", "archive"});
  world.pod("pod-set");
  DocumentView& unconfirmed = world.grant_on({"report", "archive"}, "set", "pod-set", 101);
  unconfirmed.renewing = false;
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& status = status_of(d, "set");
  EXPECT_EQ(status.phase, Phase::kPending);
  EXPECT_EQ(status.queue_position, std::nullopt);
  EXPECT_EQ(status.conditions.front().message,
            "waiting for its earlier grant of lock set report+archive to end");
  ASSERT_TRUE(d.requeue_at) << "looked at again when the grant runs out";
}

// Capacity and the one-claim-per-pod rule hold lock by lock: a set that states another
// capacity than one of its locks has is Invalid, naming that lock.
TEST(SetDecision, ASetStatingAnotherCapacityThanOneOfItsLocksIsInvalid) {
  World world;
  world.linked_locks({"report", "archive"});
  LeaseRecord& single =
      world.claim_on("archive", "single", "pod-s", api::Priority::kForeground, seconds(300));
  single.spec.capacity = 3;
  world.set_claim("set", "pod-set", {"report", "archive"});
  world.pod("pod-s");
  world.pod("pod-set");
  world.grant_on({"archive"}, "single", "pod-s", 101);
  world.status_held("single", "pod-s", 101);
  const Decision d = world.decide();
  EXPECT_EQ(status_of(d, "set").phase, Phase::kInvalid);
  const std::string message = status_of(d, "set").conditions.front().message;
  EXPECT_NE(message.find("lock archive has capacity 3"), std::string::npos) << message;
}

}  // namespace
}  // namespace eslease::controller
