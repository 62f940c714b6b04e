// allocate_slots, rule by rule: each row is the smallest set of locks and claims in which a
// user would check one promise of the design's "Lock shapes" queueing rule, with every grant
// made and where every claim left waiting stands.
#include "controller/slot_allocation.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace eslease::controller {
namespace {

using lock::Access;

const WallTime kT0 = std::chrono::system_clock::from_time_t(1'800'000'000);

// A lock from one word per slot: "." free (no document, or one that may be handed over now),
// else the name of its holder, who holds with `access`.
LockOccupancy lock_of(const std::string& name, const std::string& slots, Access access = Access::kShared) {
  LockOccupancy lock{name, {}};
  std::istringstream words(slots);
  for (std::string word; words >> word;)
    lock.slots.push_back(word == "." ? std::nullopt : std::optional(SlotHolder{word, access}));
  return lock;
}

// A Foreground claim with a live pod that has waited `waited` seconds (longer is further ahead).
SlotClaim waiting(const std::string& id, Access access, std::vector<std::string> locks, int waited) {
  const WallTime since = kT0 - std::chrono::seconds(waited);
  return SlotClaim{id,  std::move(locks), access, ClaimRank{false, Priority::kForeground, since, since}, true,
                   true};
}
SlotClaim shared(const std::string& id, std::vector<std::string> locks, int waited) {
  return waiting(id, Access::kShared, std::move(locks), waited);
}
SlotClaim exclusive(const std::string& id, std::vector<std::string> locks, int waited) {
  return waiting(id, Access::kExclusive, std::move(locks), waited);
}
SlotClaim background(SlotClaim claim) {
  claim.rank.priority = Priority::kBackground;
  return claim;
}
SlotClaim without_pod(SlotClaim claim) {
  claim.grantable = false;
  return claim;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

// "x:0 y:1"
std::string slots_of(const SlotGrant& grant) {
  std::string out;
  for (const SlotRef& slot : grant.slots)
    out += (out.empty() ? "" : " ") + slot.lock + ":" + std::to_string(slot.slot);
  return out;
}

// "x: held by a,b; kept for c / y: ..."
std::string waits_for(const QueueStanding& standing) {
  std::string out;
  for (const Shortfall& why : standing.waits_for) {
    out += (out.empty() ? "" : " / ") + why.lock + ":";
    if (!why.holders.empty()) out += " held by " + joined(why.holders);
    if (!why.holders.empty() && !why.kept_for.empty()) out += ";";
    if (!why.kept_for.empty()) out += " kept for " + joined(why.kept_for);
  }
  return out;
}

struct AllocationCase {
  const char* name;
  std::vector<LockOccupancy> locks;
  std::vector<SlotClaim> claims;
  std::map<std::string, std::string> grants;                     // every grant made
  std::map<std::string, std::optional<std::int64_t>> positions;  // every claim left waiting
  std::map<std::string, std::string> waits_for = {};             // the rows that check it
};

// A failing row is named, not dumped as bytes.
void PrintTo(const AllocationCase& row, std::ostream* out) {
  *out << row.name;
}

// Capacity and access on one lock.
std::vector<AllocationCase> one_lock_rows() {
  return {
      {"CapacityReachedTheNextClaimWaits",
       {lock_of("x", "h1 . .")},
       {shared("a", {"x"}, 30), shared("b", {"x"}, 20), shared("c", {"x"}, 10)},
       {{"a", "x:1"}, {"b", "x:2"}},
       {{"c", 0}},
       {{"c", "x: held by h1,a,b"}}},
      {"ExclusiveBehindSharedHoldersKeepsTheSlotTheyFree",
       {lock_of("x", "r1 r2 .")},
       {exclusive("w", {"x"}, 30), shared("s", {"x"}, 10)},
       {},
       {{"w", 0}, {"s", 1}},
       {{"w", "x: held by r1,r2"}, {"s", "x: held by r1,r2; kept for w"}}},
      {"ExclusiveGetsEverySlotOnceTheLastSharedHolderLeaves",
       {lock_of("x", ". . .")},
       {exclusive("w", {"x"}, 30), shared("s", {"x"}, 10)},
       {{"w", "x:0 x:1 x:2"}},
       {{"s", 0}},
       {{"s", "x: held by w"}}},
      {"SharedArrivingBehindAWaitingExclusiveWaitsThoughASlotIsFree",
       {lock_of("x", "r1 .")},
       {shared("s", {"x"}, 10), exclusive("w", {"x"}, 30)},  // listed out of rank order
       {},
       {{"w", 0}, {"s", 1}},
       {{"s", "x: held by r1; kept for w"}}},
      {"ForegroundSharedGoesBeforeAnEarlierBackgroundExclusive",
       {lock_of("x", "r1 .")},
       {background(exclusive("e", {"x"}, 300)), shared("f", {"x"}, 10)},
       {{"f", "x:1"}},
       {{"e", 0}},
       {{"e", "x: held by r1,f"}}},
      {"HoldersAreNeverPreemptedByAHigherPriority",
       {lock_of("x", "background-holder", Access::kExclusive)},
       {exclusive("f", {"x"}, 10)},
       {},
       {{"f", 0}}},
      {"TakeoverOfOneSlotLeavesTheOtherHoldersAlone",
       {lock_of("x", "r1 . r3")},  // r2's pod died: its slot may be handed over now
       {shared("a", {"x"}, 20), shared("b", {"x"}, 10)},
       {{"a", "x:1"}},
       {{"b", 0}},
       {{"b", "x: held by r1,a,r3"}}},
  };
}

// Lock sets, alone and overlapping, among single claims.
std::vector<AllocationCase> lock_set_rows() {
  return {
      {"OverlappingSetsInOppositeOrdersTheHigherRankedGoesFirst",
       {lock_of("x", "."), lock_of("y", ".")},
       {exclusive("a", {"x", "y"}, 20), exclusive("b", {"y", "x"}, 10)},
       {{"a", "x:0 y:0"}},
       {{"b", 0}},
       {{"b", "y: held by a / x: held by a"}}},
      {"OverlappingSetsInOppositeOrdersTheLowerTakesNothingMeanwhile",
       {lock_of("x", "h", Access::kExclusive), lock_of("y", ".")},
       {exclusive("a", {"x", "y"}, 20), exclusive("b", {"y", "x"}, 10)},
       {},
       {{"a", 0}, {"b", 1}},
       {{"a", "x: held by h"}, {"b", "y: kept for a / x: held by h"}}},
      {"SetBehindSingleClaimsOnOneOfItsLocksKeepsItsOtherLock",
       {lock_of("x", "h", Access::kExclusive), lock_of("y", ".")},
       {exclusive("s1", {"x"}, 30), exclusive("set", {"x", "y"}, 20), exclusive("t", {"y"}, 10)},
       {},
       {{"s1", 0}, {"set", 1}, {"t", 1}},
       {{"set", "x: held by h"}, {"t", "y: kept for set"}}},
      {"SingleClaimBehindAWaitingSetDoesNotTakeItsFreeLock",
       {lock_of("x", "."), lock_of("y", "h", Access::kExclusive)},
       {exclusive("set", {"x", "y"}, 20), exclusive("s", {"x"}, 10)},
       {},
       {{"set", 0}, {"s", 1}},
       {{"set", "y: held by h"}, {"s", "x: kept for set"}}},
      {"SetWithADirectModeHolderOnOneLockWaitsForIt",
       {lock_of("x", "cron-host", Access::kExclusive), lock_of("y", ". .")},
       {exclusive("set", {"x", "y"}, 20), shared("r", {"y"}, 10)},
       {},
       {{"set", 0}, {"r", 1}},
       {{"set", "x: held by cron-host"}, {"r", "y: kept for set"}}},
      {"SetHolderReleasingServesTheClaimsWaitingOnItsLocks",
       {lock_of("x", "."), lock_of("y", "."), lock_of("z", ".")},  // its set was {x, y, z}
       {exclusive("a", {"x"}, 30), exclusive("b", {"z"}, 20), exclusive("c", {"y", "z"}, 10)},
       {{"a", "x:0"}, {"b", "z:0"}},
       {{"c", 0}},
       {{"c", "z: held by b"}}},
      {"QueuePositionOfASetIsWhereItStandsFurthestBack",
       {lock_of("x", "h1", Access::kExclusive), lock_of("y", "h2", Access::kExclusive)},
       {exclusive("p", {"x"}, 40), exclusive("q", {"y"}, 30), exclusive("r", {"y"}, 20),
        exclusive("set", {"x", "y"}, 10)},
       {},
       {{"p", 0}, {"q", 0}, {"r", 1}, {"set", 2}}},
      {"ExclusiveSetTakesEverySlotOfEachLock",
       {lock_of("x", ". ."), lock_of("y", ".")},
       {exclusive("e", {"x", "y"}, 10)},
       {{"e", "x:0 x:1 y:0"}},
       {}},
      {"SharedSetTakesTheLowestFreeSlotOfEachLock",
       {lock_of("x", "r1 . ."), lock_of("y", ". .")},
       {shared("s", {"y", "x"}, 10)},
       {{"s", "y:0 x:1"}},
       {}},
  };
}

// Capacity 1 Exclusive is the single-holder queue; claims without a live pod keep nothing.
std::vector<AllocationCase> single_holder_rows() {
  return {
      {"CapacityOneExclusiveGoesToTheFirstWaitingLiveClaim",
       {lock_of("x", ".")},
       {without_pod(exclusive("n", {"x"}, 40)), exclusive("a", {"x"}, 30), exclusive("b", {"x"}, 20)},
       {{"a", "x:0"}},
       {{"n", std::nullopt}, {"b", 0}},
       {{"n", ""}, {"b", "x: held by a"}}},
      {"CapacityOneExclusiveHeldQueuesTheLiveClaimsInRankOrder",
       {lock_of("x", "h", Access::kExclusive)},
       {exclusive("b", {"x"}, 20), without_pod(exclusive("n", {"x"}, 40)), exclusive("a", {"x"}, 30)},
       {},
       {{"n", std::nullopt}, {"a", 0}, {"b", 1}}},
      {"AClaimWithoutALivePodKeepsNothingForItself",
       {lock_of("x", "r1 ."), lock_of("y", ".")},
       {without_pod(exclusive("w", {"x", "y"}, 30)), shared("s", {"x"}, 20), exclusive("t", {"y"}, 10)},
       {{"s", "x:1"}, {"t", "y:0"}},
       {{"w", std::nullopt}},
       {{"w", "x: held by r1"}}},
  };
}

const std::vector<AllocationCase>& cases() {
  static const std::vector<AllocationCase> rows = [] {
    std::vector<AllocationCase> all = one_lock_rows();
    for (const auto& more : {lock_set_rows(), single_holder_rows()})
      all.insert(all.end(), more.begin(), more.end());
    return all;
  }();
  return rows;
}

class SlotAllocationRules : public ::testing::TestWithParam<AllocationCase> {};

TEST_P(SlotAllocationRules, GrantsAndQueuePositions) {
  const AllocationCase& row = GetParam();
  const Result<SlotAllocation> allocation = allocate_slots(row.locks, row.claims);
  ASSERT_TRUE(allocation) << allocation.error().message;
  std::map<std::string, std::string> grants;
  for (const SlotGrant& grant : allocation->grants) grants[grant.claim] = slots_of(grant);
  EXPECT_EQ(grants, row.grants);
  std::map<std::string, std::optional<std::int64_t>> positions;
  for (const QueueStanding& standing : allocation->waiting) positions[standing.claim] = standing.position;
  EXPECT_EQ(positions, row.positions);
  for (const QueueStanding& standing : allocation->waiting) {
    const auto expected = row.waits_for.find(standing.claim);
    if (expected == row.waits_for.end()) continue;
    EXPECT_EQ(waits_for(standing), expected->second) << standing.claim;
  }
}

INSTANTIATE_TEST_SUITE_P(EachRule, SlotAllocationRules, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<AllocationCase>& info) {
                           return info.param.name;
                         });

// Grants and the waiting are listed in rank order, whatever order the claims come in.
TEST(SlotAllocation, GrantsAndWaitingClaimsComeInRankOrder) {
  const Result<SlotAllocation> allocation =
      allocate_slots({lock_of("x", ". .")}, {shared("late", {"x"}, 10), background(shared("bg", {"x"}, 90)),
                                             shared("early", {"x"}, 30), shared("mid", {"x"}, 20)});
  ASSERT_TRUE(allocation);
  ASSERT_EQ(allocation->grants.size(), 2U);
  EXPECT_EQ(allocation->grants[0].claim, "early");
  EXPECT_EQ(allocation->grants[1].claim, "mid");
  ASSERT_EQ(allocation->waiting.size(), 2U);
  EXPECT_EQ(allocation->waiting[0].claim, "late");
  EXPECT_EQ(allocation->waiting[1].claim, "bg");
}

// The lock a set's position is counted on, so its status can name it.
TEST(SlotAllocation, ASetsPositionNamesTheLockWhereItStandsFurthestBack) {
  const Result<SlotAllocation> fine =
      allocate_slots({lock_of("x", "h1"), lock_of("y", "h2")},
                     {exclusive("q", {"y"}, 30), exclusive("set", {"x", "y"}, 10)});
  ASSERT_TRUE(fine);
  ASSERT_EQ(fine->waiting.size(), 2U);
  EXPECT_EQ(fine->waiting[1].position_lock, "y");
  EXPECT_EQ(fine->waiting[1].position, 1);
}

// Claims that do not wait (holders, ended claims) are not walked: what they hold is in the slots.
TEST(SlotAllocation, ClaimsThatDoNotWaitTakeNothing) {
  SlotClaim holder = exclusive("holder", {"x"}, 100);
  holder.waits = false;
  const Result<SlotAllocation> allocation =
      allocate_slots({lock_of("x", "holder", Access::kExclusive)}, {holder, exclusive("next", {"x"}, 10)});
  ASSERT_TRUE(allocation);
  EXPECT_TRUE(allocation->grants.empty());
  ASSERT_EQ(allocation->waiting.size(), 1U);
  EXPECT_EQ(allocation->waiting[0].claim, "next");
  EXPECT_EQ(allocation->waiting[0].position, 0);
}

// The slots a holder's old grant lends to its own claim, granted again in a new shape, are
// free for that claim and taken for every other: an Exclusive claim takes them with the free
// ones; a claim ranked behind it gets nothing of them.
TEST(SlotAllocation, SlotsLentToAClaimInANewShapeAreFreeForItAlone) {
  LockOccupancy x = lock_of("x", "old old .", Access::kShared);
  for (std::optional<SlotHolder>& slot : x.slots)
    if (slot) slot->reusable_by = "a";
  SlotClaim reshaped = exclusive("a", {"x"}, 10);
  reshaped.rank.fails_over = true;
  Result<SlotAllocation> allocation = allocate_slots({x}, {reshaped, shared("b", {"x"}, 100)});
  ASSERT_TRUE(allocation);
  ASSERT_EQ(allocation->grants.size(), 1U);
  EXPECT_EQ(allocation->grants[0].claim, "a");
  EXPECT_EQ(slots_of(allocation->grants[0]), "x:0 x:1 x:2");

  allocation = allocate_slots({x}, {shared("b", {"x"}, 100), exclusive("c", {"x"}, 50)});
  ASSERT_TRUE(allocation);
  ASSERT_EQ(allocation->grants.size(), 1U);
  EXPECT_EQ(slots_of(allocation->grants[0]), "x:2") << "b is not the claim they are lent to";
}

TEST(SlotAllocation, RefusesClaimsItCannotRank) {
  const std::vector<LockOccupancy> locks = {lock_of("x", "."), lock_of("y", ".")};
  std::vector<std::string> too_many;
  for (std::size_t i = 0; i <= lock::kMaxLockSet; ++i) too_many.push_back("x");
  const std::vector<std::pair<const char*, std::vector<SlotClaim>>> refused = {
      {"no lock", {exclusive("a", {}, 10)}},
      {"a lock twice", {exclusive("a", {"x", "x"}, 10)}},
      {"too many locks", {exclusive("a", too_many, 10)}},
      {"an unknown lock", {exclusive("a", {"x", "w"}, 10)}},
      {"one id twice", {exclusive("a", {"x"}, 10), exclusive("a", {"y"}, 20)}},
  };
  for (const auto& [why, claims] : refused) {
    const Result<SlotAllocation> allocation = allocate_slots(locks, claims);
    ASSERT_FALSE(allocation) << why;
    EXPECT_EQ(allocation.error().code, ErrorCode::kInvalidArgument) << why;
  }
  EXPECT_FALSE(allocate_slots({lock_of("x", "")}, {}));
  EXPECT_FALSE(allocate_slots({lock_of("x", "."), lock_of("x", ".")}, {}));
}

}  // namespace
}  // namespace eslease::controller
