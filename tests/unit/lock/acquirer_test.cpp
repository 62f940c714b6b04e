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
  static Grantee grantee(const std::string& holder) {
    Grantee c;
    c.holder = holder;
    c.lease_uid = "uid-" + holder;
    c.ttl = Millis(5000);
    return c;
  }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
  LockKey key_ = *make_lock_key("default", "job");
};

TEST_F(AcquirerTest, FreeLockIsGrantedAtOnce) {
  auto g = acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{Millis(0)});
  ASSERT_TRUE(g.ok()) << g.error().describe();
  EXPECT_EQ(clock_.sleeps(), 0);
}

TEST_F(AcquirerTest, HeldLockWithoutWaitFailsNamingTheHolder) {
  ASSERT_TRUE(acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{}).ok());
  auto g = acquire_waiting(*store_, clock_, key_, grantee("b"), WaitOptions{Millis(0)});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kBusy);
  EXPECT_NE(g.error().message.find("held by a"), std::string::npos) << g.error().message;
}

TEST_F(AcquirerTest, AbandonedLockIsTakenOverAfterTtlOfLocalObservation) {
  auto first = acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{});
  ASSERT_TRUE(first.ok());
  // "a" stops renewing. "b" waits long enough to see the same version for a whole TTL.
  const MonoTime start = clock_.monotonic();
  auto second = acquire_waiting(*store_, clock_, key_, grantee("b"), WaitOptions{Millis(20000)});
  ASSERT_TRUE(second.ok()) << second.error().describe();
  EXPECT_GE(clock_.monotonic() - start, Millis(5000));
  EXPECT_EQ(second->state.doc.holder, "b");
  EXPECT_EQ(second->state.doc.transitions, 2);
  EXPECT_GT(second->state.token, first->state.token);
  EXPECT_LE(clock_.monotonic(), first->valid_until + Millis(2000) + Millis(5000));
}

TEST_F(AcquirerTest, WaitShorterThanTtlNeverTakesOver) {
  ASSERT_TRUE(acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{}).ok());
  auto g = acquire_waiting(*store_, clock_, key_, grantee("b"), WaitOptions{Millis(4000)});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(api_.calls("index"), 0) << "no takeover write before the TTL was observed";
}

TEST_F(AcquirerTest, ALockThatKeepsBeingRenewedIsNeverTakenOver) {
  auto held = acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{});
  ASSERT_TRUE(held.ok());
  Grant grant = *held;
  // Each contender attempt is followed by a renewal from the holder.
  for (int round = 0; round < 10; ++round) {
    auto g = acquire_waiting(*store_, clock_, key_, grantee("b"), WaitOptions{Millis(2000)});
    ASSERT_FALSE(g.ok());
    auto renewed = store_->renew(key_, grant, Millis(0));
    ASSERT_TRUE(renewed.ok() && renewed->grant);
    grant = *renewed->grant;
  }
  EXPECT_EQ(api_.peek("default/job")->source["holder"], "a");
}

TEST_F(AcquirerTest, PersistentBackendErrorsEndTheWaitWithThatError) {
  for (int i = 0; i < 100; ++i)
    api_.inject({"create", false, make_error(ErrorCode::kUnavailable, "es down")});
  for (int i = 0; i < 100; ++i) api_.inject({"get", false, make_error(ErrorCode::kUnavailable, "es down")});
  auto g = acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{Millis(3000)});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(g.error().message.find("es down"), std::string::npos);
}

TEST_F(AcquirerTest, CredentialErrorsReturnAtOnce) {
  api_.inject({"create", false, make_error(ErrorCode::kUnauthorized, "bad password")});
  auto g = acquire_waiting(*store_, clock_, key_, grantee("a"), WaitOptions{Millis(30000)});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kUnauthorized);
  EXPECT_EQ(clock_.sleeps(), 0);
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
