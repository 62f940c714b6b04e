// The renewer against the real lock store on an in-memory Elasticsearch, with a second
// store standing in for another replica that also believes it leads.
#include "controller/renewer.h"

#include <gtest/gtest.h>

#include "controller/model.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"

namespace eslease::controller {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;

constexpr Millis kTtl{3000};

class RenewerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ours_ = store("replica-a");
    theirs_ = store("replica-b");
    lock::Claim claim;
    claim.lease = "batch/nightly-w-0";
    claim.lease_uid = "uid-lease";
    claim.holder = "batch/w-0";
    claim.ttl = kTtl;
    auto granted = ours_->acquire(key_, claim);
    ASSERT_TRUE(granted.ok() && granted->grant);
    entry()->granted(*granted->grant, clock_.monotonic());
    renewer_ = std::make_unique<Renewer>(table_, *ours_, observer_, clock_, RenewerOptions{});
  }

  std::unique_ptr<lock::LockStore> store(const std::string& writer) {
    lock::StoreOptions options;
    options.writer = writer;
    auto made = lock::make_es_lock_store(api_, clock_, options);
    EXPECT_TRUE(made.ok());
    return std::move(*made);
  }

  // The other replica renews the grant as it stands in Elasticsearch; returns when the
  // holder shown that renewal's expiresAt must stop, on the monotonic clock.
  MonoTime renewed_by_the_other_replica() {
    auto current = theirs_->get(key_);
    EXPECT_TRUE(current.ok() && *current);
    const MonoTime sent = clock_.monotonic();
    auto renewed = theirs_->renew(key_, lock::Grant{**current, sent}, Millis(0));
    EXPECT_TRUE(renewed.ok() && renewed->renewed);
    return sent + kTtl;
  }

  // The lock's entry, held only while the handle lives (a renewer tick skips a held entry).
  LockTable::Handle entry() { return table_.lock(key_); }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<lock::LockStore> ours_;
  std::unique_ptr<lock::LockStore> theirs_;
  lock::LockKey key_ = *lock::make_lock_key("batch", "nightly");
  LockTable table_;
  Observer observer_;
  std::unique_ptr<Renewer> renewer_;  // renews through `ours_`
};

TEST_F(RenewerTest, RenewsAThirdOfTheWayIn) {
  clock_.advance(kTtl / 3 - Millis(1));
  EXPECT_EQ(renewer_->tick(), 0);
  clock_.advance(Millis(1));
  EXPECT_EQ(renewer_->tick(), 1);
  EXPECT_EQ(entry()->expires_at(), clock_.monotonic() + kTtl);
}

// Two replicas that both believe they lead renew the same grant. Our hand-over deadline
// must cover the expiresAt the other one wrote (the holder may have been shown it), and our
// next renewal must start from its version instead of failing until the grant lapses.
TEST_F(RenewerTest, AGrantRenewedByAnotherReplicaIsFollowedAndItsExpiryHonoured) {
  clock_.advance(Millis(500));
  const MonoTime shown_until = renewed_by_the_other_replica();
  clock_.advance(Millis(500));
  EXPECT_EQ(renewer_->tick(), 0) << "our write met the other replica's version";
  EXPECT_TRUE(entry()->renewing());
  EXPECT_GE(entry()->expires_at(), shown_until);
  EXPECT_EQ(entry()->grant()->state.version, api_.peek(key_.id())->version);

  clock_.advance(RenewerOptions{}.retry_after);
  EXPECT_EQ(renewer_->tick(), 1);
  EXPECT_EQ(api_.peek(key_.id())->source["writer"], "replica-a");
}

TEST_F(RenewerTest, AGrantThatLapsesIsHandedOverNoEarlierThanAnotherReplicasRenewal) {
  const Error refused = make_error(ErrorCode::kTooManyRequests, "rejected execution");
  clock_.advance(Millis(1000));
  api_.inject({"bulk", false, refused});
  EXPECT_EQ(renewer_->tick(), 0);
  clock_.advance(Millis(500));
  const MonoTime shown_until = renewed_by_the_other_replica();
  clock_.advance(Millis(500));
  EXPECT_EQ(renewer_->tick(), 0);  // meets the other replica's version
  clock_.advance(Millis(1000));    // our own deadline: the grant lapses for us
  api_.inject({"bulk", false, refused});
  EXPECT_EQ(renewer_->tick(), 0);
  EXPECT_FALSE(entry()->renewing());
  EXPECT_EQ(entry()->revoked(), api::Reason::kRenewalFailed);
  EXPECT_GE(entry()->expires_at(), shown_until);
}

}  // namespace
}  // namespace eslease::controller
