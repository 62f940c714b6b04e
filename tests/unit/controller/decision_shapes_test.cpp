// The decision on what only some shapes have (the design's "Lock shapes"), rule by rule on a
// fixed clock: several holders of one lock, Shared beside Exclusive claims, and lock sets that
// overlap. The rows every shape shares run in decision_test.cpp. Each test checks the write
// the controller makes and what kubectl would show.
#include <gtest/gtest.h>

#include "controller/decision.h"
#include "unit/controller/lock_world.h"

namespace eslease::controller {
namespace {

using api::Reason;
using lock::Access;
using std::chrono::seconds;
using worlds::held_reason;
using worlds::kM0;
using worlds::slot_numbers;
using worlds::status_of;
using worlds::World;

constexpr auto kForeground = api::Priority::kForeground;

std::vector<SlotRef> slot_zero_of(const std::vector<std::string>& locks) {
  std::vector<SlotRef> refs;
  for (const std::string& lock : locks) refs.push_back(SlotRef{lock, 0});
  return refs;
}

std::vector<SlotRef> report_slots(const std::vector<std::int64_t>& slots) {
  std::vector<SlotRef> refs;
  for (const std::int64_t k : slots) refs.push_back(SlotRef{"report", k});
  return refs;
}

// A claim on the lock "report" of `capacity`.
LeaseRecord& claim(World& world, const std::string& name, std::int64_t capacity, Access access,
                   api::Priority priority = kForeground, seconds age = seconds(100)) {
  return world.claim_on({"report"}, name, "pod-" + name, capacity, access, priority, age);
}

// Three Shared holders on a semaphore of capacity 3, each on its slot.
World full_semaphore() {
  World world;
  for (const char* name : {"a", "b", "c"}) {
    claim(world, name, 3, Access::kShared);
    world.pod(std::string("pod-") + name);
  }
  for (std::int64_t k = 0; k < 3; ++k) {
    const std::string name(1, static_cast<char>('a' + k));
    world.grant_on(report_slots({k}), name, "pod-" + name, 101 + k, 3, Access::kShared);
    world.status_held(name, "pod-" + name, 101 + k);
    world.find(name).status.slot = k;
  }
  return world;
}

// --- several holders of one lock --------------------------------------------------------

// `capacity: 3` alone is a counting semaphore: Shared is the default access.
TEST(ShapeDecision, ACapacityAloneAdmitsThatManyHoldersAtOnce) {
  World world;
  for (const char* name : {"a", "b", "c", "d"}) {
    LeaseSpec& spec =
        claim(world, name, 3, api::kDefaultAccess, kForeground, seconds(100 - (name[0] - 'a'))).spec;
    EXPECT_EQ(spec.access, Access::kShared);
    world.pod(std::string("pod-") + name);
  }
  for (std::int64_t k = 0; k < 3; ++k) {
    const Decision d = world.decide();
    ASSERT_EQ(d.action, Action::kGrant) << k;
    EXPECT_EQ(d.grant.lease, std::string(1, static_cast<char>('a' + k)));
    EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({k}));
    world.grant_on(d.grant.slots, d.grant.lease, d.grant.pod, 101 + k, 3, Access::kShared);
  }
  const Decision full = world.decide();
  EXPECT_EQ(full.action, Action::kNone);
  for (const char* held : {"a", "b", "c"}) EXPECT_EQ(status_of(full, held).phase, Phase::kHeld) << held;
  EXPECT_EQ(status_of(full, "d").queue_position, 0);
}

TEST(ShapeDecision, AClaimBeyondTheCapacityWaitsFirstInLine) {
  World world = full_semaphore();
  claim(world, "d", 3, Access::kShared, kForeground, seconds(10));
  world.pod("pod-d");
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "d").phase, Phase::kPending);
  EXPECT_EQ(status_of(d, "d").queue_position, 0);
  for (const char* held : {"a", "b", "c"}) {
    EXPECT_EQ(status_of(d, held).phase, Phase::kHeld) << held;
    EXPECT_EQ(status_of(d, held).slot, held[0] - 'a') << held;
  }
  EXPECT_EQ(status_of(d, "b").fencing_token, "102");
}

TEST(ShapeDecision, AFreeSlotGoesToTheFirstWaitingClaim) {
  World world;
  claim(world, "a", 3, Access::kShared);
  claim(world, "late", 3, Access::kShared, kForeground, seconds(5));
  claim(world, "early", 3, Access::kShared, kForeground, seconds(50));
  for (const char* pod : {"pod-a", "pod-late", "pod-early"}) world.pod(pod);
  world.grant_on(report_slots({0}), "a", "pod-a", 101, 3, Access::kShared);
  world.status_held("a", "pod-a", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "early");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({1}));
  EXPECT_EQ(d.grant.access, Access::kShared);
}

TEST(ShapeDecision, AnExclusiveClaimTakesEverySlotOfAFreeLock) {
  World world;
  claim(world, "writer", 3, Access::kExclusive);
  world.pod("pod-writer");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({0, 1, 2}));
  EXPECT_EQ(d.grant.access, Access::kExclusive);
}

// At capacity 1 Shared and Exclusive are the same: the grant is written as it always was.
TEST(ShapeDecision, ASharedClaimOnCapacityOneIsGrantedAsTheLocksOneHolder) {
  World world;
  claim(world, "a", 1, Access::kShared);
  world.pod("pod-a");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.access, Access::kExclusive);
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({0}));
}

// A reader holding slot 0 of a lock of `capacity`, then a waiting writer, then a later reader.
World writer_between_readers(std::int64_t capacity) {
  World world;
  claim(world, "reader", capacity, Access::kShared, kForeground, seconds(100));
  claim(world, "writer", capacity, Access::kExclusive, kForeground, seconds(50));
  claim(world, "reader-2", capacity, Access::kShared, kForeground, seconds(10));
  for (const char* pod : {"pod-reader", "pod-writer", "pod-reader-2"}) world.pod(pod);
  world.grant_on(report_slots({0}), "reader", "pod-reader", 101, capacity, Access::kShared);
  world.status_held("reader", "pod-reader", 101);
  return world;
}

// The writer waits for the reader to leave and keeps the free slot: the later reader does not
// get it, so a stream of readers never starves the writer.
TEST(ShapeDecision, AnExclusiveClaimBehindSharedHoldersKeepsTheFreeSlots) {
  for (const std::int64_t capacity : {2, 3}) {
    World world = writer_between_readers(capacity);
    const Decision d = world.decide();
    EXPECT_EQ(d.action, Action::kNone) << capacity;
    EXPECT_EQ(status_of(d, "writer").queue_position, 0);
    EXPECT_EQ(status_of(d, "reader-2").queue_position, 1);
    EXPECT_EQ(held_reason(status_of(d, "reader-2")), "False/Waiting");
  }
}

// Claims created within one second are served in the order they came, to the microsecond:
// a writer is never passed by a reader created after it, however close in time.
TEST(ShapeDecision, AWriterIsNeverPassedByAReaderThatCameAfterItInTheSameSecond) {
  World world;
  claim(world, "r-1", 2, Access::kShared, kForeground, seconds(1)).arrived = worlds::kT0 - Millis(800);
  claim(world, "w-0", 2, Access::kExclusive, kForeground, seconds(1)).arrived = worlds::kT0 - Millis(500);
  claim(world, "r-2", 2, Access::kShared, kForeground, seconds(1)).arrived = worlds::kT0 - Millis(499);
  for (const char* pod : {"pod-r-1", "pod-w-0", "pod-r-2"}) world.pod(pod);
  // A reader holds; the writer is next, though "r-2" sorts before "w-0" by name and all three
  // were created in the same second.
  world.grant_on(report_slots({1}), "r-1", "pod-r-1", 102, 2, Access::kShared);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone) << "the writer keeps the free slot until the reader leaves";
  EXPECT_EQ(status_of(d, "w-0").queue_position, 0);
  EXPECT_EQ(status_of(d, "r-2").queue_position, 1);
  EXPECT_EQ(status_of(d, "w-0").queued_at, worlds::kT0 - Millis(500));
  world.drop_grant("r-1");  // the reader leaves
  world.find("r-1").being_deleted = true;
  const Decision next = world.decide();
  ASSERT_EQ(next.action, Action::kGrant);
  EXPECT_EQ(next.grant.lease, "w-0");
}

// The first Pending status records when the claim came, so its place survives a restart.
TEST(ShapeDecision, TheFirstPendingStatusRecordsWhenTheClaimCame) {
  World world;
  claim(world, "holder", 1, Access::kShared);
  LeaseRecord& waiter = claim(world, "waiter", 1, Access::kShared, kForeground, seconds(1));
  waiter.arrived = worlds::kT0 - Millis(250);
  world.pod("pod-holder");
  world.pod("pod-waiter");
  world.held("holder", "pod-holder");
  const Decision d = world.decide();
  EXPECT_EQ(status_of(d, "waiter").queued_at, worlds::kT0 - Millis(250));
  waiter.status = status_of(d, "waiter");
  waiter.arrived.reset();  // a restart: only the status remembers
  EXPECT_EQ(waiting_since(waiter), worlds::kT0 - Millis(250));
  EXPECT_EQ(status_of(world.decide(), "waiter"), waiter.status) << "deciding again writes nothing";
}

TEST(ShapeDecision, AForegroundSharedClaimGoesBeforeABackgroundExclusiveOne) {
  World world;
  claim(world, "batch-writer", 2, Access::kExclusive, api::Priority::kBackground, seconds(100));
  claim(world, "reader", 2, Access::kShared, kForeground, seconds(10));
  world.pod("pod-batch-writer");
  world.pod("pod-reader");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "reader");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({0}));
}

// A dead holder's slot goes to the next claim in the same write; the others keep theirs.
TEST(ShapeDecision, AHolderSeenGoneHandsItsSlotOverAndTheOthersStay) {
  World world = full_semaphore();
  claim(world, "d", 3, Access::kShared, kForeground, seconds(10));
  world.pod("pod-d");
  world.pod_seen_gone("pod-b");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "d");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({1}));
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);
  EXPECT_EQ(d.grant.from_pod, "pod-b");
}

TEST(ShapeDecision, AHolderSeenGoneWithNobodyWaitingReleasesOnlyItsSlot) {
  World world = full_semaphore();
  world.pod_seen_gone("pod-c");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRelease);
  EXPECT_EQ(slot_numbers(d.subject), std::vector<std::int64_t>({2}));
  EXPECT_EQ(d.action_reason, Reason::kPodDeleted);
}

// A slot its holder let go of goes to the next claim in the same write, and that is no
// takeover: status.lastTakeover names only why a holder lost its grant (the CRD refuses
// "Released" there, so the new holder's status could never be written).
TEST(ShapeDecision, ASlotItsHolderLetGoOfIsGrantedWithoutATakeoverReason) {
  World world = full_semaphore();
  claim(world, "d", 3, Access::kShared, kForeground, seconds(10));
  world.pod("pod-d");
  world.find("b").being_deleted = true;
  world.find("b").released_token = "102";
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "d");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({1}));
  EXPECT_EQ(d.grant.takeover_reason, std::nullopt);
}

TEST(ShapeDecision, AClaimStatingAnotherCapacityIsInvalidNamingBoth) {
  World world;
  claim(world, "first", 3, Access::kShared, kForeground, seconds(100));
  claim(world, "other", 5, Access::kShared, kForeground, seconds(10));
  world.pod("pod-first");
  world.pod("pod-other");
  world.grant_on(report_slots({0}), "first", "pod-first", 101, 3, Access::kShared);
  world.status_held("first", "pod-first", 101);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& s = status_of(d, "other");
  EXPECT_EQ(s.phase, Phase::kInvalid);
  const std::string message = s.condition(api::kConditionHeld)->message;
  EXPECT_NE(message.find("capacity 3"), std::string::npos) << message;
  EXPECT_NE(message.find("states 5"), std::string::npos) << message;
}

// Another writer replaced one document of an Exclusive grant of several: the grant is over.
TEST(ShapeDecision, AGrantMissingPartOfItsDocumentsIsRevoked) {
  World world;
  claim(world, "writer", 2, Access::kExclusive);
  world.pod("pod-writer");
  GrantView& grant = world.grant_on(report_slots({0, 1}), "writer", "pod-writer", 101, 2, Access::kExclusive);
  grant.slots = report_slots({0});
  grant.broken = true;
  world.status_held("writer", "pod-writer", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(slot_numbers(d.subject), std::vector<std::int64_t>({0}));
  EXPECT_EQ(d.action_reason, Reason::kRenewalFailed);
}

// The lock's capacity went down (its old claims are gone) while a revoked grant of the old
// capacity still runs on a slot above it: nobody is granted until that grant has ended.
TEST(ShapeDecision, NothingIsGrantedWhileAGrantBeyondTheCapacityRuns) {
  World world;
  claim(world, "new", 1, Access::kExclusive);
  world.pod("pod-new");
  world.pod("pod-old");
  GrantView& old = world.grant_on(report_slots({2}), "old", "pod-old", 101, 3, Access::kShared);
  old.revoked = Reason::kClaimDeleted;
  old.renewing = false;
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "new").phase, Phase::kPending);
}

// A writer holding every slot of a capacity-3 lock, and a reader that has waited longer.
World writer_and_reader() {
  World world;
  claim(world, "holder", 3, Access::kExclusive, kForeground, seconds(100));
  claim(world, "reader", 3, Access::kShared, kForeground, seconds(50));
  world.pod("pod-holder");
  world.pod("pod-reader");
  world.grant_on(report_slots({0, 1, 2}), "holder", "pod-holder", 101, 3, Access::kExclusive);
  world.status_held("holder", "pod-holder", 101);
  return world;
}

// `lease`'s claim was patched: its grant is revoked (and recorded so), then decided on again
// once the validity published to its holder has ended.
Decision decide_once_the_revoked_grant_ends(World& world, const std::string& lease) {
  EXPECT_EQ(world.decide().action, Action::kRevoke);
  world.grant(lease).revoked = Reason::kClaimMoved;
  world.w.mono = kM0 + seconds(25);
  return world.decide();
}

// A holder whose claim now asks for another shape (access or capacity patched) no longer
// holds what its claim says: the grant is revoked, and its claim granted again at once in its
// new shape, to the same pod, before the reader that waited. The old grant was Exclusive and
// its holder may act alone until the validity published to it ends: it keeps its other
// documents until then, so the lock is shared only once it has ended.
TEST(ShapeDecision, AGrantWhoseClaimChangedShapeIsGrantedAgainAtOnceAndSharedOnlyAfterItsValidity) {
  World world = writer_and_reader();
  LeaseRecord& holder = world.find("holder");
  EXPECT_EQ(world.decide().action, Action::kNone);

  holder.spec.access = Access::kShared;  // kubectl patch
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.action_reason, Reason::kClaimMoved);
  EXPECT_NE(d.action_message.find("Shared"), std::string::npos) << d.action_message;

  world.grant("holder").revoked = Reason::kClaimMoved;
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "holder") << "granted again in its new shape before the reader that waited";
  EXPECT_EQ(d.grant.pod, "pod-holder");
  EXPECT_EQ(d.grant.access, Access::kShared);
  EXPECT_EQ(slot_numbers(d.grant.slots), (std::vector<std::int64_t>{0}));
  EXPECT_FALSE(d.grant.takes_over());
  EXPECT_EQ(d.grant.waiting_since, world.w.now) << "it never waited";

  world.write(d.grant, 102);
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone) << "not shared before the old grant ends";
  EXPECT_EQ(status_of(d, "holder").phase, Phase::kHeld);
  EXPECT_EQ(status_of(d, "holder").fencing_token, "102");
  EXPECT_EQ(status_of(d, "reader").phase, Phase::kPending);

  world.w.mono = kM0 + seconds(25);
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "reader");
  EXPECT_EQ(slot_numbers(d.grant.slots), (std::vector<std::int64_t>{1}));
  EXPECT_FALSE(d.grant.takes_over()) << "the holder lost nothing: no takeover";
}

// The same patch made while no controller ran: the new leader finds the old grant recorded in
// the Lease, not renewed by it. It revokes the grant (listing it, so its validity stops growing)
// and grants the claim again in its new shape at once, as the controller that made it would.
TEST(ShapeDecision, ANewLeaderGrantsAClaimPatchedWhileNoControllerRanAgainAtOnce) {
  World world = writer_and_reader();
  world.grant("holder").renewing = false;              // found on the locks, recorded in the Lease's status
  world.find("holder").spec.access = Access::kShared;  // kubectl patch
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.rule, std::string("revoke_when_its_claim_moved_on"));
  world.grant("holder").revoked = Reason::kClaimMoved;
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "holder");
  EXPECT_EQ(slot_numbers(d.grant.slots), (std::vector<std::int64_t>{0}));
}

// A reader patched to a writer while others read beside it: its grant is revoked, and it waits
// first in line; once the others are gone it is granted every slot at once, its own old one
// included, without waiting for its old grant to end.
TEST(ShapeDecision, AReaderPatchedToAWriterIsGrantedTheWholeLockOnceTheOthersAreGone) {
  World world;
  claim(world, "a", 2, Access::kShared, kForeground, seconds(100));
  claim(world, "b", 2, Access::kShared, kForeground, seconds(90));
  claim(world, "c", 2, Access::kExclusive, kForeground, seconds(80));
  for (const char* pod : {"pod-a", "pod-b", "pod-c"}) world.pod(pod);
  world.grant_on(report_slots({0}), "a", "pod-a", 101, 2, Access::kShared);
  world.grant_on(report_slots({1}), "b", "pod-b", 102, 2, Access::kShared);
  world.find("a").spec.access = Access::kExclusive;  // kubectl patch
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  world.grant("a").revoked = Reason::kClaimMoved;
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone) << "b still reads";

  world.drop_grant("b");
  world.find("b").status.phase = Phase::kReleased;
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "a") << "before c, which came later";
  EXPECT_EQ(slot_numbers(d.grant.slots), (std::vector<std::int64_t>{0, 1}));
}

// An election claim whose shape changed stays with the pod that held it: its pod is alive, so
// there is nothing to fail over from, even when it is the claim's only pod.
TEST(ShapeDecision, AnElectionWhoseShapeChangedIsGrantedAgainToItsPod) {
  World world;
  LeaseRecord& leader = world.election("leader", "reporter");
  leader.spec.capacity = 3;
  leader.spec.access = Access::kExclusive;
  claim(world, "reader", 3, Access::kShared, kForeground, seconds(50));
  world.pod("pod-r0", "reporter");
  world.pod("pod-reader");
  world.grant_on(report_slots({0, 1, 2}), "leader", "pod-r0", 101, 3, Access::kExclusive);
  world.status_held("leader", "pod-r0", 101);
  leader.spec.access = Access::kShared;  // kubectl patch
  ASSERT_EQ(world.decide().action, Action::kRevoke);
  world.grant("leader").revoked = Reason::kClaimMoved;
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "leader");
  EXPECT_EQ(d.grant.pod, "pod-r0");
}

// The capacity of a semaphore lowered on every claim: the Shared holders whose slots are still
// within it keep their grants; one beyond it is revoked, and nobody is granted until it ends.
TEST(ShapeDecision, ALoweredCapacityKeepsTheSharedHoldersWithinItAndRevokesThoseBeyond) {
  World world = full_semaphore();
  claim(world, "d", 2, Access::kShared, kForeground, seconds(10));
  world.pod("pod-d");
  for (LeaseRecord& c : world.w.claims) c.spec.capacity = 2;  // kubectl patch
  Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(slot_numbers(d.subject), std::vector<std::int64_t>({2}));
  EXPECT_EQ(d.action_reason, Reason::kClaimMoved);
  world.grant("c").revoked = Reason::kClaimMoved;
  d = world.decide();
  EXPECT_EQ(d.action, Action::kNone) << "a and b keep theirs; c's slot is beyond the capacity";
  EXPECT_EQ(status_of(d, "a").phase, Phase::kHeld);
  EXPECT_EQ(status_of(d, "b").phase, Phase::kHeld);
  EXPECT_EQ(status_of(d, "d").phase, Phase::kPending);
}

// A claim patched to other locks, or to another pod, is a claim made anew: once its old grant
// has ended it queues from then, behind the claims already waiting. Only a claim whose shape
// alone changed keeps its place.
TEST(ShapeDecision, AClaimMovedToAnotherPodQueuesAgainOnceItsOldGrantHasEnded) {
  World world = writer_and_reader();
  world.pod("pod-other");
  LeaseRecord& holder = world.find("holder");
  holder.spec.pod_name = "pod-other";  // kubectl patch
  holder.spec.access = Access::kShared;
  const Decision d = decide_once_the_revoked_grant_ends(world, "holder");
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "reader");
}

// A try-lock (acquireTimeoutSeconds 0) on a full semaphore is busy at once, naming the holders;
// with a slot free it is granted.
TEST(ShapeDecision, ATryLockGetsAFreeSlotOrIsBusyAtOnce) {
  World world = full_semaphore();
  claim(world, "try", 3, Access::kShared).spec.acquire_timeout_seconds = 0;
  world.pod("pod-try");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "try").phase, Phase::kTimedOut);
  EXPECT_EQ(held_reason(status_of(d, "try")), "False/Busy");
  const std::string message = status_of(d, "try").condition(api::kConditionHeld)->message;
  for (const char* holder : {"pod-a", "pod-b", "pod-c"})
    EXPECT_NE(message.find(holder), std::string::npos) << message;

  world.drop_grant("b");
  world.find("b").status.phase = Phase::kReleased;
  d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "try");
  EXPECT_EQ(slot_numbers(d.grant.slots), (std::vector<std::int64_t>{1}));
}

// --- lock sets ---------------------------------------------------------------------------

// Two sets naming the same locks in opposite orders: the older takes both at once, the other
// waits first in line holding nothing, so neither can wait for the other.
TEST(ShapeDecision, OverlappingSetsInOppositeOrdersAreServedWholeOneAfterTheOther) {
  World world;
  world.claim_on({"report", "archive"}, "forward", "pod-f", 1, Access::kShared, kForeground, seconds(100));
  world.claim_on({"archive", "report"}, "backward", "pod-b", 1, Access::kShared, kForeground, seconds(50));
  world.pod("pod-f");
  world.pod("pod-b");
  const Decision first = world.decide();
  ASSERT_EQ(first.action, Action::kGrant);
  EXPECT_EQ(first.grant.lease, "forward");
  EXPECT_EQ(first.grant.slots, slot_zero_of({"report", "archive"}));

  world.grant_on(slot_zero_of({"report", "archive"}), "forward", "pod-f", 101);
  world.status_held("forward", "pod-f", 101);
  const Decision then = world.decide();
  EXPECT_EQ(then.action, Action::kNone);
  EXPECT_EQ(status_of(then, "forward").phase, Phase::kHeld);
  EXPECT_EQ(status_of(then, "backward").phase, Phase::kPending);
  EXPECT_EQ(status_of(then, "backward").queue_position, 0);
}

// A set's holder seen gone: a claim waiting on one of its locks takes it over, whichever lock
// of the set is reconciled.
TEST(ShapeDecision, ASetWhoseHolderIsGoneIsTakenOverByAClaimOnOneOfItsLocks) {
  World world;
  world.claim_on({"orders", "customers"}, "merger", "pod-m", 1, Access::kShared, kForeground, seconds(100));
  world.claim_on({"customers"}, "single", "pod-s", 1, Access::kShared, kForeground, seconds(50));
  world.pod("pod-s");
  world.grant_on(slot_zero_of({"orders", "customers"}), "merger", "pod-m", 101);
  world.status_held("merger", "pod-m", 101);
  world.pod_seen_gone("pod-m");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "single");
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);
  EXPECT_EQ(d.grant.from_pod, "pod-m");
}

// kubectl's Lock column reads status.lock: a set's locks joined by '+', as the claim names them.
TEST(ShapeDecision, TheStatusNamesTheLockOrTheSetForKubectlsLockColumn) {
  World world;
  world.claim_on({"report", "archive"}, "set", "pod-s", 1, Access::kShared, kForeground, seconds(100));
  world.claim_on({"report"}, "single", "pod-1", 1, Access::kShared, kForeground, seconds(50));
  world.pod("pod-s");
  world.pod("pod-1");
  world.grant_on(slot_zero_of({"report", "archive"}), "set", "pod-s", 101);
  world.status_held("set", "pod-s", 101);
  const Decision d = world.decide();
  EXPECT_EQ(status_of(d, "set").lock, "report+archive");
  EXPECT_EQ(status_of(d, "single").lock, "report");
}

// A set behind a single holder of one of its locks keeps its other lock: a younger single
// claim there waits rather than take it, so the set cannot starve.
TEST(ShapeDecision, ASetBehindASingleHolderKeepsItsOtherLocksFromYoungerClaims) {
  World world;
  world.claim_on({"archive"}, "single", "pod-s", 1, Access::kShared, kForeground, seconds(200));
  world.claim_on({"report", "archive"}, "set", "pod-set", 1, Access::kShared, kForeground, seconds(100));
  world.claim_on({"report"}, "younger", "pod-y", 1, Access::kShared, kForeground, seconds(50));
  for (const char* pod : {"pod-s", "pod-set", "pod-y"}) world.pod(pod);
  world.grant_on(slot_zero_of({"archive"}), "single", "pod-s", 101);
  world.status_held("single", "pod-s", 101);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "set").phase, Phase::kPending);
  EXPECT_EQ(status_of(d, "set").queue_position, 0);
  EXPECT_EQ(status_of(d, "younger").phase, Phase::kPending);
}

// A single claim ranked ahead of a waiting set is served at once: the set keeps nothing from
// the claims before it.
TEST(ShapeDecision, ASingleClaimAheadOfAWaitingSetIsServed) {
  World world;
  world.claim_on({"archive"}, "single", "pod-s", 1, Access::kShared, kForeground, seconds(300));
  world.claim_on({"report"}, "older", "pod-o", 1, Access::kShared, kForeground, seconds(200));
  world.claim_on({"report", "archive"}, "set", "pod-set", 1, Access::kShared, kForeground, seconds(100));
  for (const char* pod : {"pod-s", "pod-set", "pod-o"}) world.pod(pod);
  world.grant_on(slot_zero_of({"archive"}), "single", "pod-s", 101);
  world.status_held("single", "pod-s", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "older");
  EXPECT_EQ(d.grant.slots, slot_zero_of({"report"}));
}

// A holder the controller did not grant (direct mode) on one lock of the set: the set waits,
// and nothing of it is written.
TEST(ShapeDecision, ASetWaitsForADirectModeHolderOnOneOfItsLocks) {
  World world;
  world.claim_on({"report", "archive"}, "set", "pod-set");
  world.pod("pod-set");
  GrantView& direct = world.grant_on(slot_zero_of({"archive"}), "direct", "job-host", 77);
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
TEST(ShapeDecision, ASetGrantMissingADocumentIsRevoked) {
  World world;
  world.claim_on({"report", "archive"}, "set", "pod-set");
  world.pod("pod-set");
  GrantView& grant = world.grant_on(slot_zero_of({"report", "archive"}), "set", "pod-set", 101);
  grant.slots = slot_zero_of({"report"});  // archive's document is someone else's now
  grant.broken = true;
  world.status_held("set", "pod-set", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(d.subject, slot_zero_of({"report"}));
  EXPECT_EQ(d.action_reason, Reason::kRenewalFailed);
}

// The set's holder died: its locks go to the claims waiting on each, first in rank order, as
// takeovers of the dead grant.
TEST(ShapeDecision, ADeadSetHoldersLocksGoToTheClaimsWaitingOnEach) {
  World world;
  world.claim_on({"report", "archive"}, "set", "pod-set", 1, Access::kShared, kForeground, seconds(300));
  world.claim_on({"report"}, "on-report", "pod-r", 1, Access::kShared, kForeground, seconds(50));
  world.claim_on({"archive"}, "on-archive", "pod-a", 1, Access::kShared, kForeground, seconds(40));
  world.pod("pod-r");
  world.pod("pod-a");
  world.pod_seen_gone("pod-set");
  world.grant_on(slot_zero_of({"report", "archive"}), "set", "pod-set", 101);
  world.status_held("set", "pod-set", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "on-report");
  EXPECT_EQ(d.grant.slots, slot_zero_of({"report"}));
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);

  // The next step: the dead grant's other document (no longer renewed) is handed over too.
  world.grant("set").slots = slot_zero_of({"archive"});
  world.grant("set").renewing = false;
  world.grant_on(slot_zero_of({"report"}), "on-report", "pod-r", 102);
  const Decision next = world.decide();
  ASSERT_EQ(next.action, Action::kGrant);
  EXPECT_EQ(next.grant.lease, "on-archive");
  EXPECT_EQ(next.grant.slots, slot_zero_of({"archive"}));
  EXPECT_EQ(next.grant.takeover_reason, Reason::kPodDeleted);
}

// A dead set holder with a set waiting on the same locks: the whole set is handed over in
// one write, with one fencing token.
TEST(ShapeDecision, ADeadSetHolderHandsTheWholeSetToTheNextSetInOneWrite) {
  World world;
  world.claim_on({"report", "archive", "ledger"}, "set", "pod-set", 1, Access::kShared, kForeground,
                 seconds(300));
  world.claim_on({"ledger", "report", "archive"}, "next", "pod-n", 1, Access::kShared, kForeground,
                 seconds(50));
  world.pod("pod-n");
  world.pod_seen_gone("pod-set");
  world.grant_on(slot_zero_of({"report", "archive", "ledger"}), "set", "pod-set", 101);
  world.status_held("set", "pod-set", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kGrant);
  EXPECT_EQ(d.grant.lease, "next");
  EXPECT_EQ(d.grant.slots, slot_zero_of({"ledger", "report", "archive"}));
}

// A grant made to the set but never confirmed to it (the controller that made it stopped
// before writing the status) is not adopted: it runs out first. Meanwhile the claim says so,
// with no place in line, the same in every reconcile of the linked locks.
TEST(ShapeDecision, ASetWhoseUnconfirmedGrantIsStillOnItsLocksWaitsForItToEnd) {
  World world;
  world.claim_on({"report", "archive"}, "set", "pod-set");
  world.pod("pod-set");
  GrantView& unconfirmed = world.grant_on(slot_zero_of({"report", "archive"}), "set", "pod-set", 101);
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
TEST(ShapeDecision, ASetStatingAnotherCapacityThanOneOfItsLocksIsInvalid) {
  World world;
  world.claim_on({"archive"}, "single", "pod-s", 3, Access::kShared, kForeground, seconds(300));
  world.claim_on({"report", "archive"}, "set", "pod-set");
  world.pod("pod-s");
  world.pod("pod-set");
  world.grant_on(slot_zero_of({"archive"}), "single", "pod-s", 101, 3, Access::kShared);
  world.status_held("single", "pod-s", 101);
  const Decision d = world.decide();
  EXPECT_EQ(status_of(d, "set").phase, Phase::kInvalid);
  const std::string message = status_of(d, "set").conditions.front().message;
  EXPECT_NE(message.find("lock archive has capacity 3"), std::string::npos) << message;
}

}  // namespace
}  // namespace eslease::controller
