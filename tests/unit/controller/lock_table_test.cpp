// The lock table's entries: what each named operation does to what the controller knows of
// one lock document, and the handles that give one thread at a time an entry.
#include "controller/lock_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/wait.h"

namespace eslease::controller {
namespace {

const MonoTime kT0 = MonoTime{} + std::chrono::hours(1);
const lock::LockKey kKey = *lock::make_lock_key("batch", "nightly");

lock::LockState grant_version(std::int64_t seq_no, const std::string& lease_uid = "uid-lease",
                              Millis ttl = Millis(10000), WallTime acquired = WallTime(Millis(1000))) {
  lock::LockState s;
  s.doc.lock = "batch/nightly";
  s.doc.lease_uid = lease_uid;
  s.doc.acquired_at = acquired;
  s.doc.ttl_millis = ttl.count();
  s.version = es::Version{seq_no, 1};
  s.token = (std::int64_t{1} << 32) | seq_no;
  return s;
}

TEST(LockEntry, ReadsFollowTheExpiryRule) {
  LockEntry entry(kKey);
  EXPECT_FALSE(entry.known());
  entry.read(grant_version(1, "uid-lease", Millis(10000)), kT0);
  EXPECT_TRUE(entry.known());
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(10000));
  entry.read(grant_version(2, "uid-lease", Millis(2000)), kT0 + Millis(1000));
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(10000)) << "the holder may still believe the first expiry";
  entry.read(grant_version(3, "uid-other", Millis(2000)), kT0 + Millis(2000));
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(4000)) << "a new grant counts from its own first sighting";
  entry.read(std::nullopt, kT0 + Millis(3000));
  EXPECT_FALSE(entry.document());
}

TEST(LockEntry, AnotherGrantInTheDocumentEndsOurRenewing) {
  LockEntry entry(kKey);
  entry.granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  EXPECT_TRUE(entry.renewing());
  entry.read(grant_version(2), kT0 + Millis(100));  // our own grant, renewed elsewhere
  EXPECT_TRUE(entry.renewing());
  entry.read(grant_version(3, "uid-other"), kT0 + Millis(200));
  EXPECT_FALSE(entry.renewing());
  EXPECT_FALSE(entry.held());
}

TEST(LockEntry, RevocationIsFinalForItsGrantOnly) {
  LockEntry entry(kKey);
  entry.granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  entry.revoke(api::Reason::kPodNotReady);
  EXPECT_FALSE(entry.renewing());
  EXPECT_EQ(entry.revoked(), api::Reason::kPodNotReady);
  entry.read(grant_version(2), kT0 + Millis(100));  // the same grant, renewed by another replica
  EXPECT_EQ(entry.revoked(), api::Reason::kPodNotReady);
  entry.read(grant_version(3, "uid-next", Millis(10000), WallTime(Millis(9000))), kT0 + Millis(200));
  EXPECT_FALSE(entry.revoked()) << "a new grant starts afresh";
}

// The session's hand-over is when the validity published to the holder ends; a renewal of
// the document that the holder was never shown does not hold it back.
TEST(LockEntry, ARevocationEndsTheGrantAtTheSessionsHandOver) {
  LockEntry entry(kKey);
  entry.granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  entry.renewed(lock::HeldDocument{kKey, grant_version(2), kT0 + Millis(14000)});
  entry.revoke(api::Reason::kPodNotReady, kT0 + Millis(10000));
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(10000));
  entry.revoke(api::Reason::kPodNotReady, kT0 + Millis(9000));
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(10000)) << "a later revocation never brings it forward";
  entry.revoke(api::Reason::kPodNotReady, kT0 + Millis(11000));
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(11000));
}

TEST(LockEntry, AnUnconfirmedRenewalIsRetriedUntilTheDeadlineThenRevoked) {
  LockEntry entry(kKey);
  const MonoTime deadline = kT0 + Millis(10000);
  entry.granted(lock::HeldDocument{kKey, grant_version(1), deadline});
  EXPECT_FALSE(entry.renewal_not_confirmed(std::nullopt, kT0 + Millis(4000)));
  EXPECT_TRUE(entry.renewing());
  // Another writer renewed our grant: we follow its version.
  EXPECT_FALSE(entry.renewal_not_confirmed(grant_version(7), kT0 + Millis(6000)));
  EXPECT_EQ(entry.held()->state.version, (es::Version{7, 1}));
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(16000)) << "handed over no earlier than its expiry";
  EXPECT_TRUE(entry.renewal_not_confirmed(std::nullopt, deadline));
  EXPECT_FALSE(entry.renewing());
  EXPECT_EQ(entry.revoked(), api::Reason::kRenewalFailed);
  EXPECT_EQ(entry.expires_at(), kT0 + Millis(16000));
}

TEST(LockEntry, LosingOrReleasingForgetsTheGrant) {
  LockEntry entry(kKey);
  entry.granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  entry.lost();
  EXPECT_FALSE(entry.renewing());
  EXPECT_FALSE(entry.known()) << "read before deciding";
  entry.granted(lock::HeldDocument{kKey, grant_version(2), kT0 + Millis(10000)});
  entry.released(kT0 + Millis(1));
  EXPECT_TRUE(entry.known());
  EXPECT_FALSE(entry.document());
  EXPECT_FALSE(entry.renewing());
}

// A grant that ended because its holder is gone (or it expired) while another grant is
// written over its other documents: this document is no longer renewed, but it stays, as
// Elasticsearch still holds it until it is written over.
TEST(LockEntry, AnEndedGrantIsNoLongerRenewedButItsDocumentStays) {
  LockEntry entry(kKey);
  entry.granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  entry.ended();
  EXPECT_FALSE(entry.renewing());
  EXPECT_FALSE(entry.held());
  EXPECT_TRUE(entry.known());
  ASSERT_TRUE(entry.document());
  EXPECT_EQ(entry.document()->version, (es::Version{1, 1}));
  EXPECT_FALSE(entry.revoked()) << "ended, not revoked: nothing is listed for it";
}

// The end of a grant of several documents is counted once (eslease_expirations_total),
// whichever of its documents is taken last: the mark stays with the grant, and a new grant
// on the document starts without it.
TEST(LockEntry, TheEndOfAGrantIsCountedOnceForTheGrant) {
  LockEntry entry(kKey);
  entry.read(grant_version(1), kT0);
  EXPECT_FALSE(entry.end_counted());
  entry.count_end();
  EXPECT_TRUE(entry.end_counted());
  entry.read(grant_version(2), kT0 + Millis(100));  // the same grant, renewed elsewhere
  EXPECT_TRUE(entry.end_counted());
  entry.read(grant_version(3, "uid-next", Millis(10000), WallTime(Millis(9000))), kT0 + Millis(200));
  EXPECT_FALSE(entry.end_counted()) << "another grant";
  entry.count_end();
  entry.granted(lock::HeldDocument{kKey, grant_version(4, "uid-ours"), kT0 + Millis(10000)});
  EXPECT_FALSE(entry.end_counted()) << "our own new grant";
  entry.count_end();
  entry.read(std::nullopt, kT0 + Millis(300));
  EXPECT_FALSE(entry.end_counted()) << "no document, no grant";
}

TEST(LockEntry, AMalformedDocumentIsOneOperation) {
  LockEntry entry(kKey);
  entry.read(grant_version(1), kT0);
  entry.read_malformed("lock batch/nightly: field fencingToken is not a number");
  EXPECT_TRUE(entry.known());
  EXPECT_FALSE(entry.document());
  EXPECT_NE(entry.malformed().find("fencingToken"), std::string::npos);
  entry.read(grant_version(2), kT0);
  EXPECT_TRUE(entry.malformed().empty());
}

TEST(LockTable, AHeldEntryIsNotHandedOutTwice) {
  LockTable table;
  EXPECT_FALSE(table.try_lock(kKey.id())) << "no entry yet";
  {
    LockTable::Handle held = table.lock(kKey);
    held->granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
    EXPECT_FALSE(table.try_lock(kKey.id()));
  }
  EXPECT_TRUE(table.try_lock(kKey.id()));
  EXPECT_EQ(table.renewing_ids("batch"), std::vector<std::string>{kKey.id()});
  table.lock(kKey)->revoke(api::Reason::kExpired);
  EXPECT_TRUE(table.renewing_ids("batch").empty());
}

// A lock of capacity N has an entry per slot document taken: a reconcile takes at least the
// slots in use, so a slot left from an earlier, larger capacity is still decided on.
TEST(LockTable, SlotsInUseCountUpToTheHighestSlotOfThatLockOnly) {
  LockTable table;
  EXPECT_EQ(table.slots_in_use(kKey.id()), 0);
  table.lock(kKey, 2)->read(std::nullopt, kT0);
  EXPECT_EQ(table.slots_in_use(kKey.id()), 3) << "slots 0 and 1 have no entry, slot 2 has";
  table.lock(*lock::make_lock_key("batch", "nightly-2"), 5)->read(std::nullopt, kT0);
  table.lock(*lock::make_lock_key("batch", "nightlz"), 7)->read(std::nullopt, kT0);
  EXPECT_EQ(table.slots_in_use(kKey.id()), 3) << "another lock's slots do not count";
  EXPECT_EQ(table.lock(kKey, 2)->id(), "batch/nightly#2");
}

TEST(LockTable, RenewingIdsAreThoseOfOneNamespace) {
  LockTable table;
  for (const char* ns : {"batch", "batch-2", "a", "z"}) {
    LockTable::Handle held = table.lock(*lock::make_lock_key(ns, "nightly"));
    held->granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  }
  EXPECT_EQ(table.renewing_ids("batch"), std::vector<std::string>{"batch/nightly"});
  EXPECT_EQ(table.renewing_ids("z"), std::vector<std::string>{"z/nightly"});
  EXPECT_TRUE(table.renewing_ids("bat").empty());
}

TEST(LockEntry, OnlyAnEntryKnownToStandForNothingIsForgettable) {
  LockEntry entry(kKey);
  EXPECT_FALSE(entry.forgettable()) << "not read yet";
  entry.read(std::nullopt, kT0);
  EXPECT_TRUE(entry.forgettable());
  entry.granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
  EXPECT_FALSE(entry.forgettable()) << "a grant we renew";
  entry.revoke(api::Reason::kPodDeleted, kT0 + Millis(30000));
  EXPECT_FALSE(entry.forgettable()) << "a revocation whose hand-over is pending";
  entry.read_malformed("not a lock document");
  EXPECT_FALSE(entry.forgettable()) << "a document that is not ours to judge";
  entry.read(std::nullopt, kT0);
  entry.outcome_unknown();
  EXPECT_FALSE(entry.forgettable()) << "a write whose outcome is unknown";
}

TEST(LockTable, AnEntryThatStandsForNothingGoesWithItsLastHandle) {
  LockTable table;
  {
    LockTable::Handle entry = table.lock(kKey);
    entry->read(std::nullopt, kT0);
    entry.drop_when_idle();
  }
  EXPECT_EQ(table.size(), 0u);
  LockTable::Handle again = table.lock(kKey);
  EXPECT_FALSE(again->known()) << "a new entry reads the document before deciding";
}

TEST(LockTable, AnEntryThatStillMattersIsKept) {
  LockTable table;
  {
    LockTable::Handle entry = table.lock(kKey);
    entry->granted(lock::HeldDocument{kKey, grant_version(1), kT0 + Millis(10000)});
    entry->revoke(api::Reason::kPodDeleted, kT0 + Millis(30000));
    entry.drop_when_idle();
  }
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table.lock(kKey)->revoked(), api::Reason::kPodDeleted);
  {
    LockTable::Handle entry = table.lock(kKey);
    entry->read(std::nullopt, kT0);  // free, but a claim is still waiting: not marked
  }
  EXPECT_EQ(table.size(), 1u);
}

TEST(LockTable, LockingAnExistingEntryNeverMakesOne) {
  LockTable table;
  EXPECT_FALSE(table.lock_existing(kKey.id()));
  EXPECT_EQ(table.size(), 0u);
  table.lock(kKey)->read(std::nullopt, kT0);
  std::optional<LockTable::Handle> found = table.lock_existing(kKey.id());
  ASSERT_TRUE(found);
  EXPECT_TRUE((*found)->known());
}

TEST(LockTable, AMovedHandleReleasesItsEntryOnce) {
  LockTable table;
  const lock::LockKey other = *lock::make_lock_key("batch", "weekly");
  std::vector<LockTable::Handle> held;
  held.push_back(table.lock(kKey));
  held.push_back(table.lock(other));  // moved when the vector grows
  held[0]->read(std::nullopt, kT0);
  held[0].drop_when_idle();
  std::optional<LockTable::Handle> first = std::move(held[0]);
  held.clear();
  EXPECT_EQ(table.size(), 2u) << "still held";
  first.reset();
  EXPECT_EQ(table.size(), 1u);
  EXPECT_FALSE(table.try_lock(kKey.id()));
  EXPECT_TRUE(table.try_lock(other.id()));
}

// Threads that hold several entries take them in one order, whatever order they ask in:
// two that ask for the same locks the other way round both get them, over and over.
TEST(LockTable, SeveralEntriesAreTakenInOneOrderWhateverTheOrderAsked) {
  LockTable table;
  const std::vector<lock::LockKey> forward = {*lock::make_lock_key("batch", "a"),
                                              *lock::make_lock_key("batch", "b")};
  const std::vector<lock::LockKey> backward = {forward[1], forward[0]};
  {
    auto handles = table.lock_all(backward, {1, 2});
    ASSERT_EQ(handles.size(), 2u);
    ASSERT_EQ(handles[0].size(), 1u);
    ASSERT_EQ(handles[1].size(), 2u);
    EXPECT_EQ(handles[0][0]->id(), "batch/b") << "handles come back in the order asked";
    EXPECT_EQ(handles[1][1]->id(), "batch/a#1");
  }
  std::atomic<int> rounds{0};
  auto take = [&](const std::vector<lock::LockKey>& keys) {
    for (int i = 0; i < 2000; ++i) {
      auto handles = table.lock_all(keys, {2, 2});
      rounds.fetch_add(1);
    }
  };
  std::thread one(take, forward);
  std::thread other(take, backward);
  const bool done =
      eslease::testing::wait_until([&] { return rounds.load() == 4000; }, std::chrono::seconds(20));
  if (!done) {  // a deadlock: the threads never end, so the test cannot join them
    ADD_FAILURE() << "two threads taking the same entries deadlocked";
    one.detach();
    other.detach();
    return;
  }
  one.join();
  other.join();
  auto existing = table.lock_existing_all({"batch/b#1", "batch/gone", "batch/a"});
  ASSERT_EQ(existing.size(), 2u) << "an entry that does not exist is left out";
  EXPECT_EQ(existing[0]->id(), "batch/a");
  EXPECT_EQ(existing[1]->id(), "batch/b#1");
}

}  // namespace
}  // namespace eslease::controller
