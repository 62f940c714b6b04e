#include "lock/shape_acquirer.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"
#include "support/fake_document_api.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;

class ShapeAcquirerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(make_es_lock_store(api_, clock_).value());
    ASSERT_TRUE(store_->prepare().ok());
  }
  ShapedClaim claim(std::vector<std::string> names, ClaimShape shape, const std::string& holder) {
    ShapedClaim c;
    for (const auto& n : names) c.keys.push_back(*make_lock_key("default", n));
    c.shape = shape;
    c.grantee = direct_grantee(holder, Millis(5000));
    return c;
  }
  Result<HeldGrant> acquire(const ShapedClaim& c, Millis wait = Millis(0)) {
    return acquire_shaped(*store_, clock_, c, WaitOptions{wait});
  }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
};

TEST_F(ShapeAcquirerTest, ASemaphoreGrantsUpToItsCapacity) {
  const ClaimShape shape{2, Access::kShared};
  auto a = acquire(claim({"db"}, shape, "a"));
  auto b = acquire(claim({"db"}, shape, "b"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->docs[0].grant.state.doc.slot, 0);
  EXPECT_EQ(b->docs[0].grant.state.doc.slot, 1);
  auto c = acquire(claim({"db"}, shape, "c"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kBusy);
  EXPECT_NE(c.error().message.find("held by a"), std::string::npos) << c.error().message;
}

TEST_F(ShapeAcquirerTest, AnAbandonedSlotIsTakenOverAfterItsTtlOnOurClock) {
  const ClaimShape shape{2, Access::kShared};
  ASSERT_TRUE(acquire(claim({"db"}, shape, "a")).ok());
  ASSERT_TRUE(acquire(claim({"db"}, shape, "b")).ok());
  const MonoTime start = clock_.monotonic();
  auto c = acquire(claim({"db"}, shape, "c"), Millis(60000));
  ASSERT_TRUE(c.ok()) << c.error().describe();
  EXPECT_GE(clock_.monotonic() - start, Millis(5000)) << "taken over only once unchanged for its TTL";
  EXPECT_EQ(c->docs[0].grant.state.doc.transitions, 2);
}

TEST_F(ShapeAcquirerTest, AWriterWaitsForEveryReader) {
  auto reader = acquire(claim({"db"}, ClaimShape{3, Access::kShared}, "reader"));
  ASSERT_TRUE(reader.ok());
  auto writer = acquire(claim({"db"}, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_FALSE(writer.ok());
  ASSERT_TRUE(store_->release_grant(*reader).ok());
  writer = acquire(claim({"db"}, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_TRUE(writer.ok()) << writer.error().describe();
  EXPECT_EQ(writer->docs.size(), 3u);
  EXPECT_FALSE(acquire(claim({"db"}, ClaimShape{3, Access::kShared}, "reader")).ok());
}

TEST_F(ShapeAcquirerTest, AFreeSetIsOneRequest) {
  const int before = api_.total_calls();
  auto set = acquire(claim({"a", "b", "c"}, ClaimShape{}, "job"));
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(set->docs.size(), 3u);
}

TEST_F(ShapeAcquirerTest, AHolderReacquiringItsOwnSetGetsItBackRenewed) {
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

TEST_F(ShapeAcquirerTest, AClaimStatingAnotherCapacityIsRefused) {
  ASSERT_TRUE(acquire(claim({"db"}, ClaimShape{3, Access::kShared}, "a")).ok());
  auto wrong = acquire(claim({"db"}, ClaimShape{4, Access::kShared}, "b"), Millis(10000));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalid);
  EXPECT_NE(wrong.error().message.find("capacity 3"), std::string::npos) << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("capacity 4"), std::string::npos) << wrong.error().message;
}

TEST_F(ShapeAcquirerTest, ASetWithOneBusyLockHoldsNoneOfItAndWaits) {
  ASSERT_TRUE(acquire(claim({"b"}, ClaimShape{}, "single")).ok());
  auto set = acquire(claim({"a", "b", "c"}, ClaimShape{}, "job"));
  ASSERT_FALSE(set.ok());
  EXPECT_FALSE(api_.peek("default/a")) << "the partly applied first attempt was undone";
  EXPECT_FALSE(api_.peek("default/c"));
  set = acquire(claim({"a", "b", "c"}, ClaimShape{}, "job"), Millis(60000));
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(set->docs.size(), 3u);
}

}  // namespace
}  // namespace eslease::lock
