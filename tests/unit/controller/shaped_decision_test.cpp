// The decision for a lock of capacity above 1 (the design's "Lock shapes"), rule by rule on a
// fixed clock: each test builds a lock's slots and claims, decides, and checks the write the
// controller makes and what kubectl would show.
#include <gtest/gtest.h>

#include "controller/decision.h"
#include "unit/controller/lock_world.h"

namespace eslease::controller {
namespace {

using api::Reason;
using lock::Access;
using std::chrono::seconds;
using worlds::held_reason;
using worlds::status_of;
using worlds::World;

// The slot numbers of a grant on the world's one lock.
std::vector<std::int64_t> slot_numbers(const std::vector<SlotRef>& slots) {
  std::vector<std::int64_t> out;
  for (const SlotRef& ref : slots) out.push_back(ref.slot);
  return out;
}

// Three Shared holders on a semaphore of capacity 3, each on its slot.
World full_semaphore() {
  World world;
  world.shaped(3);
  for (const char* name : {"a", "b", "c"}) {
    world.shaped_claim(name, std::string("pod-") + name, Access::kShared);
    world.pod(std::string("pod-") + name);
  }
  world.slots_held("a", "pod-a", {0}, 101);
  world.slots_held("b", "pod-b", {1}, 102);
  world.slots_held("c", "pod-c", {2}, 103);
  for (const char* name : {"a", "b", "c"})
    world.status_held(name, std::string("pod-") + name, 100 + (name[0] - 'a' + 1));
  for (const char* name : {"a", "b", "c"}) world.find(name).status.slot = name[0] - 'a';
  return world;
}

TEST(ShapedDecision, AClaimBeyondTheCapacityWaitsFirstInLine) {
  World world = full_semaphore();
  world.shaped_claim("d", "pod-d", Access::kShared, api::Priority::kForeground, seconds(10));
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

// A try-lock (acquireTimeoutSeconds 0) on a full semaphore is busy at once, naming the holders;
// with a slot free it is granted.
TEST(ShapedDecision, ATryLockGetsAFreeSlotOrIsBusyAtOnce) {
  World world = full_semaphore();
  world.shaped_claim("try", "pod-t", Access::kShared).spec.acquire_timeout_seconds = 0;
  world.pod("pod-t");
  Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "try").phase, Phase::kTimedOut);
  EXPECT_EQ(held_reason(status_of(d, "try")), "False/Busy");
  const std::string message = status_of(d, "try").condition(api::kConditionHeld)->message;
  for (const char* holder : {"pod-a", "pod-b", "pod-c"})
    EXPECT_NE(message.find(holder), std::string::npos) << message;

  world.remove_grant(1);
  world.find("b").status.phase = Phase::kReleased;
  d = world.decide();
  ASSERT_EQ(d.action, Action::kAcquire);
  EXPECT_EQ(d.grant.lease, "try");
  EXPECT_EQ(slot_numbers(d.grant.slots), (std::vector<std::int64_t>{1}));
}

TEST(ShapedDecision, AFreeSlotGoesToTheFirstWaitingClaim) {
  World world;
  world.shaped(3);
  world.shaped_claim("a", "pod-a", Access::kShared);
  world.shaped_claim("late", "pod-late", Access::kShared, api::Priority::kForeground, seconds(5));
  world.shaped_claim("early", "pod-early", Access::kShared, api::Priority::kForeground, seconds(50));
  for (const char* pod : {"pod-a", "pod-late", "pod-early"}) world.pod(pod);
  world.slots_held("a", "pod-a", {0}, 101);
  world.status_held("a", "pod-a", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kAcquire);
  EXPECT_EQ(d.grant.lease, "early");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({1}));
  EXPECT_EQ(d.grant.access, Access::kShared);
}

TEST(ShapedDecision, AnExclusiveClaimTakesEverySlotOfAFreeLock) {
  World world;
  world.shaped(3);
  world.shaped_claim("writer", "pod-w", Access::kExclusive);
  world.pod("pod-w");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kAcquire);
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({0, 1, 2}));
  EXPECT_EQ(d.grant.access, Access::kExclusive);
}

// A reader holding slot 0 of a lock of `capacity`, then a waiting writer, then a later reader.
World writer_between_readers(std::int64_t capacity) {
  World world;
  world.shaped(capacity);
  world.shaped_claim("reader", "pod-r", Access::kShared, api::Priority::kForeground, seconds(100));
  world.shaped_claim("writer", "pod-w", Access::kExclusive, api::Priority::kForeground, seconds(50));
  world.shaped_claim("reader-2", "pod-r2", Access::kShared, api::Priority::kForeground, seconds(10));
  for (const char* pod : {"pod-r", "pod-w", "pod-r2"}) world.pod(pod);
  world.slots_held("reader", "pod-r", {0}, 101);
  world.status_held("reader", "pod-r", 101);
  return world;
}

// The writer waits for the reader to leave and keeps the free slot: the later reader does not
// get it, so a stream of readers never starves the writer.
TEST(ShapedDecision, AnExclusiveClaimBehindSharedHoldersKeepsTheFreeSlots) {
  World world = writer_between_readers(2);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "writer").queue_position, 0);
  EXPECT_EQ(status_of(d, "reader-2").queue_position, 1);
  EXPECT_EQ(status_of(d, "reader-2").phase, Phase::kPending);
}

TEST(ShapedDecision, AForegroundSharedClaimGoesBeforeABackgroundExclusiveOne) {
  World world;
  world.shaped(2);
  world.shaped_claim("batch-writer", "pod-w", Access::kExclusive, api::Priority::kBackground, seconds(100));
  world.shaped_claim("reader", "pod-r", Access::kShared, api::Priority::kForeground, seconds(10));
  world.pod("pod-w");
  world.pod("pod-r");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kAcquire);
  EXPECT_EQ(d.grant.lease, "reader");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({0}));
}

// A dead holder's slot goes to the next claim in the same write; the others keep theirs.
TEST(ShapedDecision, AHolderSeenGoneHandsItsSlotOverAndTheOthersStay) {
  World world = full_semaphore();
  world.shaped_claim("d", "pod-d", Access::kShared, api::Priority::kForeground, seconds(10));
  world.pod("pod-d");
  world.pod_seen_gone("pod-b");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kTakeOver);
  EXPECT_EQ(d.grant.lease, "d");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({1}));
  EXPECT_EQ(d.grant.takeover_reason, Reason::kPodDeleted);
  EXPECT_EQ(d.grant.from_pod, "pod-b");
}

TEST(ShapedDecision, AHolderSeenGoneWithNobodyWaitingReleasesOnlyItsSlot) {
  World world = full_semaphore();
  world.pod_seen_gone("pod-c");
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRelease);
  EXPECT_EQ(slot_numbers(d.slots), std::vector<std::int64_t>({2}));
  EXPECT_EQ(d.action_reason, Reason::kPodDeleted);
}

// A slot its holder let go of goes to the next claim in the same write, and that is no
// takeover: status.lastTakeover names only why a holder lost its grant (the CRD refuses
// "Released" there, so the new holder's status could never be written).
TEST(ShapedDecision, ASlotItsHolderLetGoOfIsGrantedWithoutATakeoverReason) {
  World world = full_semaphore();
  world.shaped_claim("d", "pod-d", Access::kShared, api::Priority::kForeground, seconds(10));
  world.pod("pod-d");
  world.find("b").being_deleted = true;
  world.find("b").released_token = "102";
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kTakeOver);
  EXPECT_EQ(d.grant.lease, "d");
  EXPECT_EQ(slot_numbers(d.grant.slots), std::vector<std::int64_t>({1}));
  EXPECT_EQ(d.grant.takeover_reason, std::nullopt);
}

TEST(ShapedDecision, AClaimStatingAnotherCapacityIsInvalidNamingBoth) {
  World world;
  world.shaped(3);
  world.shaped_claim("first", "pod-1", Access::kShared, api::Priority::kForeground, seconds(100));
  LeaseRecord& other =
      world.shaped_claim("other", "pod-2", Access::kShared, api::Priority::kForeground, seconds(10));
  other.spec.capacity = 5;
  world.pod("pod-1");
  world.pod("pod-2");
  world.slots_held("first", "pod-1", {0}, 101);
  world.status_held("first", "pod-1", 101);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  const LeaseStatus& s = status_of(d, "other");
  EXPECT_EQ(s.phase, Phase::kInvalid);
  const std::string message = s.condition(api::kConditionHeld)->message;
  EXPECT_NE(message.find("capacity 3"), std::string::npos) << message;
  EXPECT_NE(message.find("states 5"), std::string::npos) << message;
}

// Another writer replaced one document of an Exclusive grant of several: the grant is over.
TEST(ShapedDecision, AGrantMissingPartOfItsDocumentsIsRevoked) {
  World world;
  world.shaped(2);
  world.shaped_claim("writer", "pod-w", Access::kExclusive);
  world.pod("pod-w");
  DocumentView& grant = world.slots_held("writer", "pod-w", {0}, 101, Access::kExclusive);
  grant.state.doc.grant = "g-1";
  grant.state.doc.grant_docs = {"batch/report", "batch/report#1"};
  grant.broken = true;
  world.status_held("writer", "pod-w", 101);
  const Decision d = world.decide();
  ASSERT_EQ(d.action, Action::kRevoke);
  EXPECT_EQ(slot_numbers(d.slots), std::vector<std::int64_t>({0}));
}

// A Shared claim waiting behind a waiting Exclusive one does not take the slot the Exclusive
// one keeps, even though it is free.
TEST(ShapedDecision, ASharedClaimBehindAWaitingExclusiveOneWaitsThoughASlotIsFree) {
  World world = writer_between_readers(3);
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(held_reason(status_of(d, "reader-2")), "False/Waiting");
}

// The lock's capacity went down (its old claims are gone) while a revoked grant of the old
// capacity still runs on a slot above it: nobody is granted until that grant has ended.
TEST(ShapedDecision, NothingIsGrantedWhileAGrantBeyondTheCapacityRuns) {
  World world;
  world.shaped(1);
  world.shaped_claim("new", "pod-new", Access::kExclusive);
  world.pod("pod-new");
  world.pod("pod-old");
  DocumentView& old = world.slots_held("old", "pod-old", {2}, 101);
  old.revoked = Reason::kClaimDeleted;
  old.renewing = false;
  const Decision d = world.decide();
  EXPECT_EQ(d.action, Action::kNone);
  EXPECT_EQ(status_of(d, "new").phase, Phase::kPending);
}

}  // namespace
}  // namespace eslease::controller
