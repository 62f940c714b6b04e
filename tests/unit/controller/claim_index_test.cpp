// The claim index's counts of Leases by phase and priority (the eslease_claims gauge): they
// follow every add, change and deletion, as the Lease was last seen, whatever the deletion
// event carries. And the Leases of one namespace shown Held, for the session of that namespace.
#include "controller/claim_index.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace eslease::controller {
namespace {

using Counts = std::map<std::pair<std::string, std::string>, int>;

// The pods the unserved claims name (claim mode), or "election:<ns>" for an election claim.
std::vector<std::string> unserved(const ClaimIndex& index) {
  std::vector<std::string> out;
  for (const ClaimIndex::UnservedClaim& claim : index.unserved_claims())
    out.push_back(claim.selector ? "election:" + claim.ns : claim.pod_key);
  return out;
}

LeaseRecord lease(const std::string& name, Phase phase, Priority priority = Priority::kForeground,
                  const std::string& lock = "lock") {
  LeaseRecord out;
  out.meta.ns = "ns";
  out.meta.name = name;
  out.meta.uid = "uid-" + name;
  out.spec.lock_name = lock;
  out.spec.pod_name = "pod-" + name;
  out.spec.priority = priority;
  out.status.phase = phase;
  return out;
}

TEST(ClaimIndexCounts, LeasesAreCountedByPhaseAndPriorityWithoutAStatusAsPending) {
  ClaimIndex index;
  const LeaseRecord held = lease("a", Phase::kHeld);
  const LeaseRecord waiting = lease("b", Phase::kPending, Priority::kBackground);
  const LeaseRecord fresh = lease("c", Phase::kNone, Priority::kBackground);
  const LeaseRecord invalid = lease("d", Phase::kInvalid);
  for (const LeaseRecord* l : {&held, &waiting, &fresh, &invalid}) index.lease_changed(nullptr, l);
  const ClaimCounts counts = index.counts();
  EXPECT_EQ(
      counts,
      (Counts{{{"Held", "Foreground"}, 1}, {{"Pending", "Background"}, 2}, {{"Invalid", "Foreground"}, 1}}));
  EXPECT_THAT(unserved(index), testing::UnorderedElementsAre("ns/pod-b", "ns/pod-c"))
      << "the waiter candidates, by the pod each waits for";
}

TEST(ClaimIndexCounts, AChangeMovesTheLeaseAndADeletionRemovesItAsLastSeen) {
  ClaimIndex index;
  const LeaseRecord pending = lease("a", Phase::kPending);
  index.lease_changed(nullptr, &pending);
  const LeaseRecord held = lease("a", Phase::kHeld);
  index.lease_changed(&pending, &held);
  EXPECT_EQ(index.counts(), (Counts{{{"Held", "Foreground"}, 1}}));
  EXPECT_TRUE(unserved(index).empty());

  // The deletion event may carry a later state than the one counted: the counted one goes.
  const LeaseRecord released = lease("a", Phase::kReleased);
  index.lease_changed(&released, nullptr);
  EXPECT_EQ(index.counts(), Counts{});
  EXPECT_TRUE(unserved(index).empty());
}

// A status rewritten in the same phase leaves the counts and the waiters as they were; a
// deletion under way (the phase unchanged) takes the claim out of the waiters.
TEST(ClaimIndexCounts, AClaimBeingDeletedStopsWaitingThoughItsPhaseStays) {
  ClaimIndex index;
  LeaseRecord pending = lease("a", Phase::kPending);
  pending.meta.resource_version = "1";
  index.lease_changed(nullptr, &pending);
  LeaseRecord rewritten = pending;
  rewritten.meta.resource_version = "2";
  rewritten.status.queue_position = 2;
  index.lease_changed(&pending, &rewritten);
  EXPECT_EQ(index.counts(), (Counts{{{"Pending", "Foreground"}, 1}}));
  EXPECT_THAT(unserved(index), testing::ElementsAre("ns/pod-a"));

  LeaseRecord deleting = rewritten;
  deleting.meta.resource_version = "3";
  deleting.being_deleted = true;
  index.lease_changed(&rewritten, &deleting);
  EXPECT_EQ(index.counts(), (Counts{{{"Pending", "Foreground"}, 1}}));
  EXPECT_TRUE(unserved(index).empty()) << "a claim being deleted waits for nothing";
}

TEST(ClaimIndexCounts, AnUnservedElectionClaimWaitsForItsSelectorInItsNamespace) {
  ClaimIndex index;
  LeaseRecord election = lease("e", Phase::kPending);
  election.spec.pod_name.clear();
  election.spec.selector = LabelSelector{{LabelRequirement{"app", LabelRequirement::Operator::kIn, {"web"}}}};
  index.lease_changed(nullptr, &election);
  const std::vector<ClaimIndex::UnservedClaim> claims = index.unserved_claims();
  ASSERT_EQ(claims.size(), 1U);
  EXPECT_EQ(claims[0].ns, "ns");
  EXPECT_EQ(claims[0].selector, election.spec.selector);
  EXPECT_TRUE(claims[0].pod_key.empty());
}

TEST(ClaimIndexCounts, ALeaseWithoutALockNameIsCountedButWakesNoLock) {
  ClaimIndex index;
  const LeaseRecord nameless = lease("a", Phase::kInvalid, Priority::kForeground, "");
  EXPECT_TRUE(index.lease_changed(nullptr, &nameless).empty());
  EXPECT_EQ(index.counts(), (Counts{{{"Invalid", "Foreground"}, 1}}));
  EXPECT_TRUE(index.locks().empty());
  EXPECT_TRUE(index.lease_changed(&nameless, nullptr).empty());
  EXPECT_EQ(index.counts(), Counts{});
}

TEST(ClaimIndexCounts, ALeaseThatMovesToAnotherLockIsCountedOnce) {
  ClaimIndex index;
  const LeaseRecord first = lease("a", Phase::kHeld, Priority::kForeground, "one");
  index.lease_changed(nullptr, &first);
  const LeaseRecord moved = lease("a", Phase::kPending, Priority::kForeground, "two");
  EXPECT_EQ(index.lease_changed(&first, &moved), (std::vector<std::string>{"ns/one", "ns/two"}));
  EXPECT_EQ(index.counts(), (Counts{{{"Pending", "Foreground"}, 1}}));
  EXPECT_EQ(index.claims_of("ns/two"), std::vector<std::string>{"ns/a"});
  EXPECT_TRUE(index.claims_of("ns/one").empty());
}

// A status change moves only the counts; a change of the claim's pod or priority (same
// Lease, same locks) re-indexes it: the new pod's events wake the lock, the old pod's no longer.
TEST(ClaimIndex, AStatusChangeKeepsTheClaimIndexedAndAChangeOfItsPodReindexesIt) {
  ClaimIndex index;
  const LeaseRecord pending = lease("a", Phase::kPending);
  index.lease_changed(nullptr, &pending);
  const LeaseRecord held = lease("a", Phase::kHeld);
  EXPECT_EQ(index.lease_changed(&pending, &held), std::vector<std::string>{"ns/lock"});
  EXPECT_EQ(index.claims_of("ns/lock"), std::vector<std::string>{"ns/a"});
  PodRecord old_pod;
  old_pod.meta.ns = "ns";
  old_pod.meta.name = "pod-a";
  EXPECT_EQ(index.locks_for_pod(nullptr, &old_pod), std::vector<std::string>{"ns/lock"});

  LeaseRecord moved = held;
  moved.spec.pod_name = "pod-b";
  moved.spec.priority = Priority::kBackground;
  EXPECT_EQ(index.lease_changed(&held, &moved), std::vector<std::string>{"ns/lock"});
  PodRecord new_pod = old_pod;
  new_pod.meta.name = "pod-b";
  EXPECT_EQ(index.locks_for_pod(nullptr, &new_pod), std::vector<std::string>{"ns/lock"});
  EXPECT_TRUE(index.locks_for_pod(nullptr, &old_pod).empty());
  EXPECT_EQ(index.counts(), (Counts{{{"Held", "Background"}, 1}}));
}

// Claims created in the same second are queued in the order the watch delivered them: each
// arrival is kept to the microsecond and strictly after the one before, while the claim waits.
TEST(ClaimIndex, ArrivalsAreStrictlyOrderedWhileTheClaimsWait) {
  ClaimIndex index;
  const LeaseRecord first = lease("a", Phase::kNone);
  const LeaseRecord second = lease("b", Phase::kNone);
  const WallTime at = WallTime{} + std::chrono::hours(500000) + std::chrono::nanoseconds(1500);
  index.lease_changed(nullptr, &first);
  index.arrived(first.meta.uid, at);
  index.lease_changed(nullptr, &second);
  index.arrived(second.meta.uid, at);  // the same instant on our clock
  ASSERT_TRUE(index.arrival_of(first.meta.uid));
  ASSERT_TRUE(index.arrival_of(second.meta.uid));
  EXPECT_EQ(*index.arrival_of(first.meta.uid),
            WallTime{} + std::chrono::hours(500000) + std::chrono::microseconds(1));
  EXPECT_EQ(*index.arrival_of(second.meta.uid) - *index.arrival_of(first.meta.uid),
            std::chrono::microseconds(1));

  LeaseRecord served = second;
  served.status.phase = Phase::kHeld;
  index.lease_changed(&second, &served);
  EXPECT_FALSE(index.arrival_of(second.meta.uid)) << "served: it no longer waits";
}

// A reconcile may read a Lease from the cache just before the watch brings the status that
// records its arrival (queuedAt), and ask for the arrival just after: the arrival must still be
// there, or the claim would be ranked at its creation second, ahead of every claim that came in
// that second (a lock set then went to a claim created after the one it was owed to).
TEST(ClaimIndex, AnArrivalOutlivesTheStatusThatRecordsItWhileTheClaimWaits) {
  ClaimIndex index;
  const LeaseRecord created = lease("a", Phase::kNone);
  index.lease_changed(nullptr, &created);
  index.arrived(created.meta.uid, WallTime{} + std::chrono::hours(500000));
  const std::optional<WallTime> arrival = index.arrival_of(created.meta.uid);
  ASSERT_TRUE(arrival);

  LeaseRecord recorded = created;
  recorded.status.phase = Phase::kPending;
  recorded.status.queued_at = arrival;
  index.lease_changed(&created, &recorded);
  EXPECT_EQ(index.arrival_of(created.meta.uid), arrival);

  LeaseRecord gone_again = recorded;
  gone_again.meta.uid = "another-uid";  // deleted and created again under the same name
  index.lease_changed(&recorded, &gone_again);
  EXPECT_FALSE(index.arrival_of(created.meta.uid));
}

// Claims created while no controller watched are listed at start-up, in name order: they are
// queued in the order the API server created them, which their resourceVersions tell.
TEST(ClaimIndex, ClaimsListedUnqueuedArriveInTheOrderTheyWereCreated) {
  const WallTime second = WallTime{} + std::chrono::hours(500000);
  ClaimIndex index;
  const std::vector<std::string> lock = {"ns/lock"};
  index.listed_unqueued(
      {
          {"uid-r-2", "r-2", second, "1002", lock},
          {"uid-w-0", "w-0", second, "998", lock},  // shorter: written before "1002"
          {"uid-r-0", "r-0", second, "990", lock},
          {"uid-early", "z", second - std::chrono::seconds(1), "5000", lock},  // created a second before
          {"uid-r-3", "r-3", second, "1003", lock},
          {"uid-alone", "alone", second, "1001", {"ns/other"}},  // nobody to stand before or after
      },
      /*relisted=*/false);
  const auto at = [&](const char* uid) { return index.arrival_of(uid).value_or(WallTime{}); };
  EXPECT_FALSE(index.arrival_of("uid-early")) << "alone in its second on its lock: its creation is enough";
  EXPECT_FALSE(index.arrival_of("uid-alone"));
  EXPECT_EQ(at("uid-r-0"), second);
  EXPECT_EQ(at("uid-w-0"), second + std::chrono::microseconds(1));
  EXPECT_EQ(at("uid-r-2"), second + std::chrono::microseconds(3))
      << "after the other lock's claim of its second";
  EXPECT_EQ(at("uid-r-3"), second + std::chrono::microseconds(4));
  index.listed_unqueued({{"uid-w-0", "w-0", second, "998", lock}, {"uid-x", "x", second, "900", lock}},
                        /*relisted=*/false);
  EXPECT_EQ(at("uid-w-0"), second + std::chrono::microseconds(1)) << "an arrival known is kept";
}

// A watch that expired is followed by a re-list: the claims it brings were made after every
// claim the watch brought, though perhaps in the same second. Each arrives in the list, in the
// order they were made, and keeps that arrival when its add is told one by one.
TEST(ClaimIndex, ClaimsARelistBringsArriveAfterThoseTheWatchBrought) {
  const WallTime second = WallTime{} + std::chrono::hours(500000);
  ClaimIndex index;
  index.arrived("uid-watched", second + std::chrono::milliseconds(700));
  index.listed_unqueued({{"uid-late", "a-late", second, "2001", {"ns/lock"}},
                         {"uid-later", "b-later", second + std::chrono::seconds(1), "2002", {"ns/lock"}},
                         {"uid-first", "z-first", second, "2000", {"ns/other"}}},
                        /*relisted=*/true);
  const WallTime watched = second + std::chrono::milliseconds(700);
  EXPECT_EQ(index.arrival_of("uid-first"), watched + std::chrono::microseconds(1));
  EXPECT_EQ(index.arrival_of("uid-late"), watched + std::chrono::microseconds(2));
  EXPECT_EQ(index.arrival_of("uid-later"), second + std::chrono::seconds(1));
  index.arrived("uid-later", second + std::chrono::seconds(20));  // its add, told after the list
  EXPECT_EQ(index.arrival_of("uid-later"), second + std::chrono::seconds(1))
      << "not moved behind later claims";
  index.arrived("uid-next", watched);  // the watch again, our clock behind the API server's
  EXPECT_GT(index.arrival_of("uid-next"), index.arrival_of("uid-later"));
}

TEST(ClaimIndex, ClaimsListedWithVersionsThatCannotBeOrderedArriveByName) {
  const WallTime second = WallTime{} + std::chrono::hours(500000);
  ClaimIndex index;
  index.listed_unqueued(
      {{"uid-b", "b", second, "17", {"ns/lock"}}, {"uid-a", "a", second, "etcd-rev-9", {"ns/lock"}}},
      /*relisted=*/false);
  EXPECT_LT(index.arrival_of("uid-a"), index.arrival_of("uid-b"));
}

TEST(ClaimIndex, TheHeldLeasesOfANamespaceAreThoseOfThatNamespaceShownHeld) {
  ClaimIndex index;
  std::vector<LeaseRecord> leases;
  for (const char* ns : {"ns", "ns-2", "n", "other"}) {
    LeaseRecord l = lease("a", Phase::kHeld);
    l.meta.ns = ns;
    leases.push_back(l);
  }
  leases.push_back(lease("b", Phase::kPending));
  leases.push_back(lease("c", Phase::kHeld, Priority::kForeground, ""));  // no lock name: counted too
  for (const LeaseRecord& l : leases) index.lease_changed(nullptr, &l);
  EXPECT_THAT(index.held_in("ns"), testing::UnorderedElementsAre("ns/a", "ns/c"));
  EXPECT_EQ(index.held_in("n"), std::vector<std::string>{"n/a"});
  index.lease_changed(&leases[0], nullptr);
  EXPECT_EQ(index.held_in("ns"), std::vector<std::string>{"ns/c"});
  const LeaseRecord granted = lease("b", Phase::kHeld);
  index.lease_changed(&leases[4], &granted);
  EXPECT_THAT(index.held_in("ns"), testing::UnorderedElementsAre("ns/b", "ns/c"));
  const LeaseRecord released = lease("b", Phase::kReleased);
  index.lease_changed(&granted, &released);
  EXPECT_EQ(index.held_in("ns"), std::vector<std::string>{"ns/c"});
  EXPECT_TRUE(index.held_in("missing").empty());
}

}  // namespace
}  // namespace eslease::controller
