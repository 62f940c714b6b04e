// lock::acquire, the one acquirer of every shape (one lock, a semaphore slot, a shared or
// exclusive hold, a lock set), against the fake document API on a fake clock.
#include "lock/acquirer.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"
#include "support/fake_document_api.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;

class AcquirerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(make_es_lock_store(api_, clock_).value());
    ASSERT_TRUE(store_->prepare().ok());
  }
  static Claim claim(const std::vector<std::string>& names, ClaimShape shape, const std::string& holder) {
    Claim c;
    for (const auto& n : names) c.keys.push_back(*make_lock_key("default", n));
    c.shape = shape;
    c.grantee = direct_grantee(holder, Millis(5000));
    return c;
  }
  // One lock of capacity 1.
  static Claim claim(const std::string& holder) { return claim({"job"}, ClaimShape{}, holder); }
  Result<HeldGrant> acquire(const Claim& c, Millis wait = Millis(0)) {
    return lock::acquire(*store_, clock_, c, WaitOptions{wait});
  }
  static const LockDocument& doc(const HeldGrant& g) { return g.docs.front().state.doc; }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
};

TEST_F(AcquirerTest, AFreeLockIsGrantedAtOnceInOneRequest) {
  const int before = api_.total_calls();
  auto g = acquire(claim("a"));
  ASSERT_TRUE(g.ok()) << g.error().describe();
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(api_.calls("create"), 1);
  EXPECT_EQ(clock_.sleeps(), 0);
  ASSERT_EQ(g->docs.size(), 1u);
  EXPECT_EQ(doc(*g).holder, "a");
}

TEST_F(AcquirerTest, AHeldLockWithoutWaitFailsNamingTheHolder) {
  ASSERT_TRUE(acquire(claim("a")).ok());
  const int before = api_.total_calls();
  WaitOptions once{Millis(0)};
  int announced = 0;
  once.on_wait = [&](const LockState&) { ++announced; };
  auto g = lock::acquire(*store_, clock_, claim("b"), once);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(announced, 0) << "a claim that does not wait says nothing of waiting";
  EXPECT_EQ(g.error().code, ErrorCode::kBusy);
  EXPECT_EQ(g.error().message.rfind("lock default/job is held by a (token ", 0), 0u) << g.error().message;
  EXPECT_EQ(api_.total_calls() - before, 2) << "the create, and the read that settles it";
}

// A contended wait decides on what its failed attempt read back, and then reads once per
// round: create + GET, then one GET per round, never a write while the holder is alive.
TEST_F(AcquirerTest, AContendedWaitReadsOncePerRound) {
  ASSERT_TRUE(acquire(claim("a")).ok());
  const int creates = api_.calls("create");
  std::vector<std::string> announced;
  WaitOptions wait{Millis(3000)};
  wait.on_wait = [&](const LockState& holder) { announced.push_back(holder.doc.holder); };
  auto g = lock::acquire(*store_, clock_, claim("b"), wait);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kBusy);
  EXPECT_NE(g.error().message.find("gave up after waiting 3s"), std::string::npos) << g.error().message;
  EXPECT_GE(clock_.sleeps(), 2);
  EXPECT_EQ(api_.calls("create") - creates, 1);
  EXPECT_EQ(api_.calls("get"), 1 + clock_.sleeps());
  EXPECT_EQ(api_.calls("mget") + api_.calls("index") + api_.calls("bulk"), 0);
  EXPECT_EQ(announced, std::vector<std::string>{"a"}) << "told once about the holder it waits behind";
}

TEST_F(AcquirerTest, AnAbandonedLockIsTakenOverAfterItsTtlOfLocalObservation) {
  auto first = acquire(claim("a"));
  ASSERT_TRUE(first.ok());
  // "a" stops renewing. "b" waits long enough to see the same version for a whole TTL.
  const MonoTime start = clock_.monotonic();
  auto second = acquire(claim("b"), Millis(20000));
  ASSERT_TRUE(second.ok()) << second.error().describe();
  EXPECT_GE(clock_.monotonic() - start, Millis(5000));
  EXPECT_EQ(doc(*second).holder, "b");
  EXPECT_EQ(doc(*second).transitions, 2);
  EXPECT_GT(second->token, first->token);
  EXPECT_LE(clock_.monotonic(), first->valid_until + Millis(2000) + Millis(5000));
}

TEST_F(AcquirerTest, AWaitShorterThanTheTtlNeverTakesOver) {
  ASSERT_TRUE(acquire(claim("a")).ok());
  auto g = acquire(claim("b"), Millis(4000));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(api_.calls("index"), 0) << "no takeover write before the TTL was observed";
}

TEST_F(AcquirerTest, ALockThatKeepsBeingRenewedIsNeverTakenOver) {
  auto held = acquire(claim("a"));
  ASSERT_TRUE(held.ok());
  HeldGrant grant = *held;
  // Each contender attempt is followed by a renewal from the holder.
  for (int round = 0; round < 10; ++round) {
    ASSERT_FALSE(acquire(claim("b"), Millis(2000)).ok());
    GrantRenewal renewed = renew_grant(*store_, grant, Millis(0));
    ASSERT_EQ(renewed.result, RenewalResult::kRenewed);
    grant = *renewed.grant;
  }
  EXPECT_EQ(api_.peek("default/job")->source["holder"], "a");
}

TEST_F(AcquirerTest, PersistentBackendErrorsEndTheWaitWithThatError) {
  for (int i = 0; i < 100; ++i)
    api_.inject({"create", false, make_error(ErrorCode::kUnavailable, "es down")});
  for (int i = 0; i < 100; ++i) api_.inject({"get", false, make_error(ErrorCode::kUnavailable, "es down")});
  auto g = acquire(claim("a"), Millis(3000));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(g.error().message.find("es down"), std::string::npos);
}

TEST_F(AcquirerTest, CredentialErrorsReturnAtOnce) {
  api_.inject({"create", false, make_error(ErrorCode::kUnauthorized, "bad password")});
  auto g = acquire(claim("a"), Millis(30000));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(clock_.sleeps(), 0);
}

// At capacity 1 a Shared claim is an Exclusive one: the lock's one document, sent unread.
TEST_F(AcquirerTest, ASharedClaimOfCapacityOneIsWrittenAsExclusive) {
  const int before = api_.total_calls();
  auto g = acquire(claim({"job"}, ClaimShape{1, Access::kShared}, "a"));
  ASSERT_TRUE(g.ok()) << g.error().describe();
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(doc(*g).access, Access::kExclusive);
  EXPECT_EQ(api_.peek("default/job")->source["access"], "Exclusive");
  auto exclusive = acquire(claim({"job"}, ClaimShape{1, Access::kExclusive}, "b"));
  ASSERT_FALSE(exclusive.ok());
  EXPECT_EQ(exclusive.error().code, ErrorCode::kBusy) << "one lock, whichever access was stated";
}

TEST_F(AcquirerTest, ASemaphoreGrantsUpToItsCapacity) {
  const ClaimShape shape{2, Access::kShared};
  auto a = acquire(claim({"db"}, shape, "a"));
  auto b = acquire(claim({"db"}, shape, "b"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(doc(*a).slot, 0);
  EXPECT_EQ(doc(*b).slot, 1);
  const int before = api_.total_calls();
  auto c = acquire(claim({"db"}, shape, "c"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kBusy);
  EXPECT_EQ(c.error().message, "lock default/db is full: its 2 slots are held by a, b")
      << "every holder, not the first";
  EXPECT_EQ(api_.total_calls() - before, 1)
      << "a Shared claim on several slots reads them first, in one _mget";
}

TEST_F(AcquirerTest, AnAbandonedSlotIsTakenOverAfterItsTtlOnOurClock) {
  const ClaimShape shape{2, Access::kShared};
  ASSERT_TRUE(acquire(claim({"db"}, shape, "a")).ok());
  ASSERT_TRUE(acquire(claim({"db"}, shape, "b")).ok());
  const MonoTime start = clock_.monotonic();
  auto c = acquire(claim({"db"}, shape, "c"), Millis(60000));
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_GE(clock_.monotonic() - start, Millis(5000)) << "taken over only once unchanged for its TTL";
  EXPECT_EQ(doc(*c).transitions, 2);
}

TEST_F(AcquirerTest, AWriterWaitsForEveryReader) {
  auto reader = acquire(claim({"db"}, ClaimShape{3, Access::kShared}, "reader"));
  ASSERT_TRUE(reader.ok());
  auto writer = acquire(claim({"db"}, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_FALSE(writer.ok());
  ASSERT_TRUE(store_->release(*reader, ReleaseScope::kGrant).ok());
  writer = acquire(claim({"db"}, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_TRUE(writer.ok()) << writer.error().describe();
  EXPECT_EQ(writer->docs.size(), 3u);
  EXPECT_FALSE(acquire(claim({"db"}, ClaimShape{3, Access::kShared}, "reader")).ok());
}

TEST_F(AcquirerTest, AFreeSetIsOneRequest) {
  const int before = api_.total_calls();
  auto set = acquire(claim({"a", "b", "c"}, ClaimShape{}, "job"));
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(set->docs.size(), 3u);
}

TEST_F(AcquirerTest, AHolderReacquiringItsOwnSetGetsItBackRenewed) {
  auto first = acquire(claim({"a", "b"}, ClaimShape{}, "job"));
  ASSERT_TRUE(first.ok());
  clock_.advance(Millis(1000));
  auto again = acquire(claim({"a", "b"}, ClaimShape{}, "job"));
  ASSERT_TRUE(again.ok()) << again.error().describe();
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->token, first->token);
  EXPECT_EQ(again->valid_until, clock_.monotonic() + Millis(5000));
  EXPECT_FALSE(acquire(claim({"a", "b"}, ClaimShape{}, "other")).ok());
}

TEST_F(AcquirerTest, AClaimStatingAnotherCapacityIsRefused) {
  ASSERT_TRUE(acquire(claim({"db"}, ClaimShape{3, Access::kShared}, "a")).ok());
  auto wrong = acquire(claim({"db"}, ClaimShape{4, Access::kShared}, "b"), Millis(10000));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalid);
  EXPECT_NE(wrong.error().message.find("capacity 3"), std::string::npos) << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("capacity 4"), std::string::npos) << wrong.error().message;
}

TEST_F(AcquirerTest, ASetWithOneBusyLockHoldsNoneOfItAndWaits) {
  ASSERT_TRUE(acquire(claim({"b"}, ClaimShape{}, "single")).ok());
  auto set = acquire(claim({"a", "b", "c"}, ClaimShape{}, "job"));
  ASSERT_FALSE(set.ok());
  EXPECT_FALSE(api_.peek("default/a")) << "the partly applied first attempt was undone";
  EXPECT_FALSE(api_.peek("default/c"));
  set = acquire(claim({"a", "b", "c"}, ClaimShape{}, "job"), Millis(60000));
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(set->docs.size(), 3u);
}

TEST(DirectGrantee, EveryAcquireIsAGrantOfItsOwn) {
  const Grantee a = direct_grantee("host/42", Millis(5000));
  const Grantee b = direct_grantee("host/42");
  EXPECT_EQ(a.holder, "host/42");
  EXPECT_EQ(a.ttl, Millis(5000));
  EXPECT_EQ(b.ttl, kDefaultTtl);
  EXPECT_EQ(a.lease_uid.size(), 32u);
  EXPECT_NE(a.lease_uid, b.lease_uid);
  EXPECT_TRUE(a.lease.empty());
}

}  // namespace
}  // namespace eslease::lock
