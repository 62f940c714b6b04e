// Sessions against the real lock store on an in-memory Elasticsearch and an in-memory
// Kubernetes API: what a tick renews and writes, what it waits for, what it lists, and what
// a revocation's hand-over time is. A second store stands in for another replica that also
// believes it leads.
#include "controller/session_keeper.h"

#include <gtest/gtest.h>

#include "common/text.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/memory_api.h"
#include "unit/controller/map_cluster_view.h"

namespace eslease::controller {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeDocumentApi;
using views::MapClusterView;

constexpr Millis kTtl{30000};
const std::string kNs = "batch";

class SessionKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ours_ = store("replica-a");
    theirs_ = store("replica-b");
    make_keeper(SessionOptions{}.renewal_batch);
  }
  void make_keeper(std::size_t renewal_batch) {
    SessionOptions options;
    options.identity = "replica-a";
    options.enqueue = [this](const std::string& id) { enqueued_.push_back(id); };
    options.renewal_batch = renewal_batch;
    keeper_ = std::make_unique<SessionKeeper>(table_, *ours_, api_, view_, observer_, clock_, options);
  }

  std::unique_ptr<lock::LockStore> store(const std::string& writer) {
    lock::StoreOptions options;
    options.writer = writer;
    return std::move(lock::make_es_lock_store(es_, clock_, options).value());
  }

  // Grants lock `lock` to Lease `lease` and shows it Held in the Lease's status.
  std::string grant(const std::string& lock, const std::string& lease, Millis ttl = kTtl) {
    return grant_set({lock}, lease, ttl);
  }
  // Grants the locks to Lease `lease` as one grant (a lock set when there are several: one
  // document per lock) and shows it Held in the Lease's status, under its first lock.
  std::string grant_set(const std::vector<std::string>& locks, const std::string& lease, Millis ttl = kTtl) {
    lock::GrantRequest request;
    request.grantee.lease = kNs + "/" + lease;
    request.grantee.lease_uid = "uid-" + lease;
    request.grantee.holder = kNs + "/pod-" + lease;
    request.grantee.ttl = ttl;
    for (const std::string& lock : locks)
      request.writes.push_back(lock::SlotWrite{*lock::make_lock_key(kNs, lock), 0, std::nullopt});
    auto granted = lock::grant_one(*ours_, request);
    EXPECT_TRUE(granted.ok() && granted->grant);
    for (const lock::HeldDocument& doc : granted->grant->docs) table_.lock(doc.key)->granted(doc);
    const std::string token = std::to_string(granted->grant->token);
    show_held(locks.front(), lease, token, ttl);
    return token;
  }
  void show_held(const std::string& lock, const std::string& lease, const std::string& token,
                 Millis ttl = kTtl) {
    json object = kube::testing::make_object(kNs, lease, "1", "uid-" + lease);
    object["spec"] = {
        {"lockName", lock},
        {"holder", {{"podName", "pod-" + lease}}},
        {"leaseDurationSeconds", std::chrono::duration_cast<std::chrono::seconds>(ttl).count()}};
    object["status"] = {{"phase", "Held"}, {"fencingToken", token}};
    api_.put_object(kube::resources::eslease_leases(), object);
    view_.sync_from(api_);
  }

  void show_pending(const std::string& lock, const std::string& lease) {
    show_held(lock, lease, "");
    json object = *api_.get(kube::resources::eslease_leases(), kNs, lease, {});
    object["status"] = {{"phase", "Pending"}};
    api_.put_object(kube::resources::eslease_leases(), object);
    view_.sync_from(api_);
  }

  // Grants locks a, b and c, then lets 5 s pass: the moment a tick now renews them to.
  WallTime three_grants_renewed_later() {
    grant("a", "claim-a");
    grant("b", "claim-b");
    grant("c", "claim-c");
    clock_.advance(Millis(5000));
    return lock::to_millis(clock_.now());
  }

  std::optional<api::Session> session() {
    auto got = api_.get(kube::resources::coordination_leases(), kNs, api::kSessionName, {});
    if (!got.ok()) return std::nullopt;
    return api::decode_session(*got);
  }
  lock::LockDocument document(const std::string& lock) {
    return *lock::parse_lock_document(es_.peek(kNs + "/" + lock)->source);
  }
  int session_writes() {
    int n = 0;
    for (const auto& [verb, body] : api_.writes())
      if (body.value("metadata", json::object()).value("name", "") == api::kSessionName) ++n;
    return n;
  }

  FakeClock clock_;
  FakeDocumentApi es_;
  std::unique_ptr<lock::LockStore> ours_;
  std::unique_ptr<lock::LockStore> theirs_;
  kube::testing::MemoryApi api_;
  MapClusterView view_;
  LockTable table_;
  Observer observer_;
  std::vector<std::string> enqueued_;
  std::unique_ptr<SessionKeeper> keeper_;
};

TEST_F(SessionKeeperTest, ATickRenewsEveryGrantInOneBulkAndWritesTheSessionOnce) {
  const WallTime renewal = three_grants_renewed_later();
  const int bulks = es_.calls("bulk");
  keeper_->tick(kNs);
  EXPECT_EQ(es_.calls("bulk"), bulks + 1);
  EXPECT_EQ(session_writes(), 1);
  ASSERT_TRUE(session());
  EXPECT_EQ(session()->renew_time, renewal);
  EXPECT_EQ(session()->holder_identity, "replica-a");
  for (const char* lock : {"a", "b", "c"}) {
    EXPECT_EQ(document(lock).renewed_at, renewal) << lock;
    EXPECT_EQ(document(lock).expires_at, renewal + kTtl) << "the document covers the published validity";
  }
  // The next tick comes a third of the lease duration later, and costs the same.
  EXPECT_EQ(keeper_->tick_due(), 0);
  clock_.advance(kTtl / 3);
  EXPECT_EQ(keeper_->tick_due(), 1);
  EXPECT_EQ(es_.calls("bulk"), bulks + 2);
  EXPECT_EQ(session_writes(), 2);
  EXPECT_EQ(session()->renew_time, lock::to_millis(clock_.now()));
}

// A reconcile of a held lock waits for the renewal of its own batch of documents, not for the
// whole namespace's: with 20,000 held locks a tick takes seconds, and every reconcile that
// touched a held lock stood still for all of it.
TEST_F(SessionKeeperTest, ATickLocksOneBatchAtATimeSoAReconcileWaitsForOneBulkOnly) {
  make_keeper(1);
  const WallTime renewal = three_grants_renewed_later();
  const int bulks = es_.calls("bulk");
  std::vector<bool> a_free;  // during each _bulk: could a reconcile take lock a?
  es_.before_each_bulk([&] { a_free.push_back(table_.try_lock(kNs + "/a").has_value()); });
  keeper_->tick(kNs);
  es_.before_each_bulk(nullptr);
  EXPECT_EQ(es_.calls("bulk"), bulks + 3) << "one _bulk per batch";
  EXPECT_EQ(a_free, (std::vector<bool>{false, true, true})) << "lock a is taken only for its own renewal";
  EXPECT_EQ(session()->renew_time, renewal);
  for (const char* lock : {"a", "b", "c"}) EXPECT_EQ(document(lock).renewed_at, renewal) << lock;
}

// The documents of one grant are renewed in one batch, whichever batches their ids fall in: a
// grant is renewed whole or not at all.
TEST_F(SessionKeeperTest, AGrantWhoseDocumentsFallInTwoBatchesIsRenewedWhole) {
  make_keeper(2);
  const std::string set = grant_set({"a", "z"}, "claim-set");  // ids batch/a and batch/z
  grant("b", "claim-b");
  grant("m", "claim-m");  // batches by id: [a b] [m z]
  clock_.advance(Millis(5000));
  const WallTime renewal = lock::to_millis(clock_.now());
  const int bulks = es_.calls("bulk");
  keeper_->tick(kNs);
  EXPECT_EQ(es_.calls("bulk"), bulks + 3) << "b, then m, then the set's two documents together";
  EXPECT_FALSE(session()->lists({"claim-set", set}));
  EXPECT_EQ(session()->renew_time, renewal);
  for (const char* lock : {"a", "z", "b", "m"}) EXPECT_EQ(document(lock).renewed_at, renewal) << lock;
  EXPECT_TRUE(enqueued_.empty());
}

// A grant is usable at once (the design's "Fit for use"): a short Lease granted in a
// namespace whose ticks are paced for a long one, well after its last renewal, would
// otherwise be shown a validity that has already ended.
TEST_F(SessionKeeperTest, AGrantThatWouldBeShownLittleValidityIsRenewedAtOnceOncePerBurst) {
  constexpr Millis kLong{60000};
  constexpr Millis kShort{6000};
  grant("long", "claim-long", kLong);
  keeper_->wake(kNs, kLong);
  ASSERT_EQ(keeper_->tick_due(), 1);
  const int writes = session_writes();
  const int bulks = es_.calls("bulk");
  clock_.advance(Millis(15000));  // the next tick is 5 s away
  for (const char* lock : {"short-1", "short-2", "short-3"}) {
    grant(lock, std::string("claim-") + lock, kShort);
    keeper_->wake(kNs, kShort);
  }
  EXPECT_EQ(keeper_->tick_due(), 1) << "the burst of grants is covered by one tick, now";
  EXPECT_EQ(session_writes(), writes + 1) << "one session write for the burst";
  EXPECT_EQ(es_.calls("bulk"), bulks + 1);
  const api::Session shown = *session();
  for (const char* lease : {"claim-short-1", "claim-short-2", "claim-short-3"}) {
    const auto validity = api::published_validity(shown, {lease, "0"}, kShort);
    ASSERT_TRUE(validity);
    EXPECT_EQ(*validity, lock::to_millis(clock_.now()) + kShort) << lease << ": its whole duration";
  }
  // From now on the namespace ticks every third of the shortest duration it holds.
  EXPECT_EQ(keeper_->tick_due(), 0);
  clock_.advance(kShort / 3);
  EXPECT_EQ(keeper_->tick_due(), 1);
  EXPECT_EQ(session_writes(), writes + 2);
}

// A grant whose validity is still long enough is not renewed at once, but a shorter duration
// than the namespace's ticks were paced for brings its next tick forward.
TEST_F(SessionKeeperTest, AShorterLeaseBringsTheNextTickForward) {
  constexpr Millis kLong{60000};
  constexpr Millis kShort{6000};
  grant("long", "claim-long", kLong);
  keeper_->wake(kNs, kLong);
  ASSERT_EQ(keeper_->tick_due(), 1);
  const MonoTime renewed = clock_.monotonic();
  const int writes = session_writes();
  clock_.advance(Millis(1000));
  grant("short", "claim-short", kShort);
  keeper_->wake(kNs, kShort);
  EXPECT_EQ(keeper_->tick_due(), 0) << "5 s of its 6 s are left: usable as it is";
  EXPECT_EQ(session_writes(), writes);
  clock_.advance(std::chrono::duration_cast<Millis>(renewed + kShort / 3 - clock_.monotonic()));
  EXPECT_EQ(keeper_->tick_due(), 1) << "a third of the short duration after the last renewal, not 20 s";
  EXPECT_EQ(session_writes(), writes + 1);
}

TEST_F(SessionKeeperTest, ARenewalNotConfirmedHoldsTheSessionBackUntilItMustBeListed) {
  const std::string token_a = grant("a", "claim-a");
  grant("b", "claim-b");
  keeper_->tick(kNs);
  const WallTime first = *session()->renew_time;
  const MonoTime first_sent = clock_.monotonic();
  const Error refused = make_error(ErrorCode::kTooManyRequests, "rejected execution");
  // Every renewal of lock a fails from now on; b's go through.
  for (int i = 0; i < 40; ++i) es_.inject({"bulk", false, refused});
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  EXPECT_EQ(session()->renew_time, first) << "a renewal that was not confirmed is not published";
  // Retried until only a third of the validity is left; then a is listed so b keeps its.
  while (clock_.monotonic() < first_sent + kTtl * 2 / 3) {
    clock_.advance(Millis(1000));
    keeper_->tick_due();
  }
  ASSERT_TRUE(session()->lists({"claim-a", token_a}));
  EXPECT_GT(*session()->renew_time, first);
  LockTable::Handle a = table_.lock(*lock::make_lock_key(kNs, "a"));
  EXPECT_FALSE(a->renewing());
  EXPECT_EQ(a->revoked(), api::Reason::kRenewalFailed);
  EXPECT_GE(a->expires_at(), first_sent + kTtl) << "handed over after the validity its holder was shown";
  EXPECT_NE(std::find(enqueued_.begin(), enqueued_.end(), kNs + "/a"), enqueued_.end());
}

// A grant of several documents is renewed whole or not at all: once one of its documents is
// no longer renewed (revoked here, as a renewal that failed past its deadline is), the tick
// renews none of the others, lists the grant, and asks its locks' reconciles to revoke the
// rest. The namespace's other grants keep theirs.
TEST_F(SessionKeeperTest, AGrantPartlyRevokedIsRenewedNoMoreAndListed) {
  const std::string token = grant_set({"a", "b", "c"}, "claim-set");
  grant("single", "claim-single");
  keeper_->tick(kNs);
  ASSERT_TRUE(session());
  const WallTime first = *session()->renew_time;
  for (const char* lock : {"a", "b", "c"}) ASSERT_EQ(document(lock).renewed_at, first) << lock;
  table_.lock(*lock::make_lock_key(kNs, "b"))->revoke(api::Reason::kRenewalFailed);
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  for (const char* lock : {"a", "b", "c"})
    EXPECT_EQ(document(lock).renewed_at, first) << lock << " was renewed";
  EXPECT_TRUE(session()->lists({"claim-set", token}));
  EXPECT_EQ(document("single").renewed_at, lock::to_millis(clock_.now()));
  EXPECT_EQ(session()->renew_time, lock::to_millis(clock_.now())) << "the other grants keep their validity";
  for (const char* lock : {"a", "c"})
    EXPECT_NE(std::find(enqueued_.begin(), enqueued_.end(), kNs + "/" + lock), enqueued_.end()) << lock;
}

TEST_F(SessionKeeperTest, AHeldStatusThatIsNotOurGrantIsListedAtOnce) {
  grant("a", "claim-a");
  show_held("b", "claim-b", "4294967999");  // a status left by another replica; no document
  table_.lock(*lock::make_lock_key(kNs, "b"))->read(std::nullopt, clock_.monotonic());
  keeper_->tick(kNs);
  ASSERT_TRUE(session());
  EXPECT_TRUE(session()->lists({"claim-b", "4294967999"}));
  EXPECT_TRUE(session()->renew_time) << "the grants that are covered keep their validity";
}

TEST_F(SessionKeeperTest, AGrantNotYetAdoptedIsWaitedForBeforeTheSessionIsRenewed) {
  const std::string token = grant("a", "claim-a");
  keeper_->tick(kNs);
  const WallTime first = *session()->renew_time;
  // A new leader: it knows the document but has not adopted the grant yet.
  LockTable fresh;
  SessionOptions replica_c;
  replica_c.identity = "replica-c";
  SessionKeeper successor(fresh, *ours_, api_, view_, observer_, clock_, replica_c);
  const lock::LockKey key = *lock::make_lock_key(kNs, "a");
  fresh.lock(key)->read(*lock::read_lock(*ours_, key).value(), clock_.monotonic());
  clock_.advance(Millis(2000));
  successor.tick(kNs);
  EXPECT_EQ(session()->renew_time, first);
  EXPECT_FALSE(session()->lists({"claim-a", token}));
  {
    LockTable::Handle entry = fresh.lock(key);
    entry->adopted(entry->document()->token);
  }
  clock_.advance(Millis(1000));
  successor.tick(kNs);
  EXPECT_GT(*session()->renew_time, first);
  EXPECT_EQ(session()->holder_identity, "replica-c");
  EXPECT_EQ(document("a").renewed_at, *session()->renew_time);
}

TEST_F(SessionKeeperTest, ARevocationIsListedAndHandedOverAfterThePublishedValidity) {
  const std::string token = grant("a", "claim-a");
  keeper_->tick(kNs);
  const MonoTime renewed = clock_.monotonic();
  clock_.advance(Millis(4000));
  auto hand_over = keeper_->revoke(kNs, {"claim-a", token}, kTtl);
  ASSERT_TRUE(hand_over.ok());
  ASSERT_TRUE(*hand_over);
  EXPECT_EQ(**hand_over, renewed + kTtl);
  EXPECT_TRUE(session()->lists({"claim-a", token}));
  // Its reconcile revokes the grant in the lock table and writes its Lease status.
  table_.lock(*lock::make_lock_key(kNs, "a"))->revoke(api::Reason::kPodNotReady, **hand_over);
  show_pending("a", "claim-a");
  // Still listed past the hand-over; a minute later the listing goes, and with nothing else
  // held or listed, the session too.
  clock_.advance(kTtl);
  keeper_->tick(kNs);
  EXPECT_TRUE(session()->lists({"claim-a", token}));
  clock_.advance(std::chrono::minutes(1));
  keeper_->tick(kNs);
  EXPECT_FALSE(session());
}

// The validity a holder is shown counts from renewTime, read as the tick began; the documents'
// renewal before the session's write takes time (a _bulk of every held lock), and the
// hand-over must not wait for it on top.
TEST_F(SessionKeeperTest, AHandOverCountsFromTheRenewTimePublishedNotFromTheSessionWrite) {
  const std::string token = grant("a", "claim-a");
  grant("b", "claim-b");         // two documents: renewed in one _bulk
  clock_.advance(Millis(1000));  // due for renewal
  es_.before_each_bulk([this] { clock_.advance(Millis(150)); });
  const WallTime tick_began = lock::to_millis(clock_.now());
  const MonoTime tick_began_mono = clock_.monotonic();
  keeper_->tick(kNs);
  ASSERT_EQ(session()->renew_time, tick_began);
  clock_.advance(Millis(4000));
  auto hand_over = keeper_->revoke(kNs, {"claim-a", token}, kTtl);
  ASSERT_TRUE(hand_over.ok()) << hand_over.error().describe();
  ASSERT_TRUE(*hand_over);
  EXPECT_EQ(**hand_over, tick_began_mono + kTtl) << "the published validity ends then, not 150 ms later";
}

// A revocation can come while a tick is under way: after the tick's _bulk renewed the grant's
// document, before the tick writes its renewal. The listing comes first, so the holder was
// never shown the tick's renewal, and the hand-over counts from the one before: neither the
// renewed document nor the tick's listing of it holds the hand-over back by a tick.
TEST_F(SessionKeeperTest, ARevocationDuringATickIsHandedOverAfterTheRenewalShownBeforeIt) {
  const std::string token = grant("a", "claim-a");
  keeper_->tick(kNs);
  const MonoTime shown = clock_.monotonic();
  clock_.advance(kTtl / 3);
  std::optional<MonoTime> hand_over;
  es_.before_each_bulk([&] {
    es_.before_each_bulk(nullptr);
    auto listed = keeper_->revoke(kNs, {"claim-a", token}, kTtl);
    ASSERT_TRUE(listed.ok()) << listed.error().describe();
    hand_over = *listed;
  });
  keeper_->tick_due();
  ASSERT_TRUE(hand_over);
  EXPECT_EQ(*hand_over, shown + kTtl);
  EXPECT_TRUE(session()->lists({"claim-a", token}));
  EXPECT_EQ(session()->renew_time, lock::to_millis(clock_.now())) << "the tick renewed the session";
  // The reconcile that listed it now revokes it in the lock table.
  LockTable::Handle a = table_.lock(*lock::make_lock_key(kNs, "a"));
  a->revoke(api::Reason::kPodNotReady, *hand_over);
  EXPECT_TRUE(a->revoked());
  EXPECT_EQ(a->expires_at(), shown + kTtl) << "handed over when the validity its holder was shown ends";
}

// A renewal applied by the API server whose answer never came may have been seen by the
// holder: the hand-over after a later listing is counted from it, not from the last renewal
// the keeper knew had landed.
TEST_F(SessionKeeperTest, ARenewalWhoseAnswerWasLostCountsAsPublished) {
  const std::string token = grant("a", "claim-a");
  keeper_->tick(kNs);
  clock_.advance(kTtl / 3);
  api_.lose_answer_of_next_update(kube::resources::coordination_leases(),
                                  make_error(ErrorCode::kTimeout, "no answer in time"));
  keeper_->tick_due();
  const MonoTime unanswered = clock_.monotonic();
  ASSERT_EQ(session()->renew_time, lock::to_millis(clock_.now())) << "the renewal was applied";
  clock_.advance(Millis(4000));
  auto hand_over = keeper_->revoke(kNs, {"claim-a", token}, kTtl);
  ASSERT_TRUE(hand_over.ok()) << hand_over.error().describe();
  ASSERT_TRUE(*hand_over);
  EXPECT_GE(**hand_over, unanswered + kTtl);
  EXPECT_TRUE(session()->lists({"claim-a", token}));
}

TEST_F(SessionKeeperTest, WithoutASessionNothingWasPublishedAndNothingIsListed) {
  auto hand_over = keeper_->revoke(kNs, {"claim-a", "12"}, kTtl);
  ASSERT_TRUE(hand_over.ok());
  EXPECT_FALSE(*hand_over);
  EXPECT_FALSE(session());
}

TEST_F(SessionKeeperTest, AnotherWritersListingIsKeptOnAConflict) {
  grant("a", "claim-a");
  keeper_->tick(kNs);
  // Another replica lists a grant behind our back.
  json theirs = *api_.get(kube::resources::coordination_leases(), kNs, api::kSessionName, {});
  theirs["metadata"]["annotations"]["eslease.io/revoked"] = "claim-x=77";
  ASSERT_TRUE(api_.update(kube::resources::coordination_leases(), theirs, {}).ok());
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  EXPECT_TRUE(session()->lists({"claim-x", "77"}));
  EXPECT_EQ(session()->renew_time, lock::to_millis(clock_.now()));
}

// A replica acting without leadership (a split brain) lists a grant of ours that it does not
// hold. Revocation is final: the grant is revoked here too and handed over after the
// validity published before the listing, and the listing is never dropped while the grant
// is still renewed, which would publish its holder a longer validity again.
TEST_F(SessionKeeperTest, OurGrantListedByAnotherWriterIsRevokedNotRevived) {
  const std::string token = grant("a", "claim-a");
  keeper_->tick(kNs);
  const MonoTime renewed = clock_.monotonic();
  json theirs = *api_.get(kube::resources::coordination_leases(), kNs, api::kSessionName, {});
  theirs["metadata"]["annotations"]["eslease.io/revoked"] = "claim-a=" + token;
  ASSERT_TRUE(api_.update(kube::resources::coordination_leases(), theirs, {}).ok());
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  {
    LockTable::Handle a = table_.lock(*lock::make_lock_key(kNs, "a"));
    EXPECT_FALSE(a->renewing());
    EXPECT_TRUE(a->revoked());
    EXPECT_GE(a->expires_at(), renewed + kTtl) << "handed over after the validity its holder was shown";
  }
  EXPECT_NE(std::find(enqueued_.begin(), enqueued_.end(), kNs + "/a"), enqueued_.end());
  // Its Lease still shows it Held (the status is written by the reconcile): as long as it
  // does, the listing stays.
  for (int i = 0; i < 10; ++i) {
    clock_.advance(kTtl / 3);
    keeper_->tick(kNs);
    ASSERT_TRUE(session()->lists({"claim-a", token})) << "tick " << i;
  }
}

// Two replicas that both believe they lead renew the same grant: ours meets the other's
// version, follows it, and publishes only once its own renewal is confirmed.
TEST_F(SessionKeeperTest, AGrantRenewedByAnotherReplicaIsFollowed) {
  grant("a", "claim-a");
  keeper_->tick(kNs);
  const WallTime first = *session()->renew_time;
  const lock::LockKey key = *lock::make_lock_key(kNs, "a");
  clock_.advance(Millis(500));
  auto current = lock::read_lock(*theirs_, key);
  const std::vector<lock::BatchRenewal> renewed = theirs_->renew_all(
      {lock::Renewal{lock::HeldDocument{key, **current, clock_.monotonic()}, Millis(0), {}}});
  ASSERT_EQ(renewed.front().result, lock::RenewalResult::kRenewed);
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  EXPECT_EQ(session()->renew_time, first) << "not covered by our own write";
  EXPECT_EQ(table_.lock(key)->held()->state.version, es_.peek(key.id())->version);
  clock_.advance(Millis(1000));
  keeper_->tick_due();
  EXPECT_GT(*session()->renew_time, first);
  EXPECT_EQ(document("a").writer, "replica-a");
}

TEST_F(SessionKeeperTest, TheSessionGoesOnceNothingIsHeldOrListed) {
  grant("a", "claim-a");
  keeper_->tick(kNs);
  ASSERT_TRUE(session());
  const lock::LockKey key = *lock::make_lock_key(kNs, "a");
  table_.lock(key)->released(clock_.monotonic());
  api_.erase_object(kube::resources::eslease_leases(), kNs + "/claim-a");
  view_.sync_from(api_);
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  EXPECT_FALSE(session());
  EXPECT_EQ(keeper_->namespaces(), 0u) << "nothing of the namespace is kept";

  // The namespace holds again: a session as before.
  grant("b", "claim-b");
  keeper_->wake(kNs, kTtl);
  keeper_->tick_due();
  ASSERT_TRUE(session());
  EXPECT_EQ(keeper_->namespaces(), 1u);
}

TEST_F(SessionKeeperTest, ANamespaceStillListingAGrantIsKept) {
  const std::string token = grant("a", "claim-a");
  keeper_->tick(kNs);
  ASSERT_TRUE(keeper_->revoke(kNs, {"claim-a", token}, kTtl).ok());
  const lock::LockKey key = *lock::make_lock_key(kNs, "a");
  table_.lock(key)->released(clock_.monotonic());
  api_.erase_object(kube::resources::eslease_leases(), kNs + "/claim-a");
  view_.sync_from(api_);
  clock_.advance(kTtl / 3);
  keeper_->tick_due();
  ASSERT_TRUE(session()) << "the listing stays until a minute past its hand-over";
  EXPECT_EQ(keeper_->namespaces(), 1u);
}

}  // namespace
}  // namespace eslease::controller
