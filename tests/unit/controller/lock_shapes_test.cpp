// Lock shapes (capacity above 1, Shared access, lock sets) are not served by the controller
// yet: such a claim is Invalid, saying so, and leaves the lock to the claims it serves. A
// lock set is filed, and so reconciled, under its first lock.
#include <gtest/gtest.h>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class LockShapesTest : public fixture::ReconcileFixture {
 protected:
  std::string held_message(const std::string& lease) {
    for (const json& c : status(lease).value("conditions", json::array()))
      if (c.value("type", "") == "Held") return c.value("message", "");
    return "";
  }
};

TEST_F(LockShapesTest, AShapedClaimIsInvalidAndTheLockGoesToTheClaimBehindIt) {
  add_pod("pod-s");
  add_pod("pod-p");
  add_claim("semaphore", "pod-s", 0, {{"capacity", 3}});
  add_claim("plain", "pod-p", 1);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("semaphore")["phase"], "Invalid");
  EXPECT_EQ(held_message("semaphore"),
            "capacity 3 is not served by the controller yet; eslease direct mode serves lock shapes");
  EXPECT_EQ(status("plain")["phase"], "Held");
  EXPECT_EQ(holds("pod-s"), "");
}

TEST_F(LockShapesTest, ASharedClaimIsInvalid) {
  add_pod("pod-r");
  add_claim("reader", "pod-r", 0, {{"access", "Shared"}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("reader")["phase"], "Invalid");
  EXPECT_NE(held_message("reader").find("Shared access is not served by the controller yet"),
            std::string::npos);
}

TEST_F(LockShapesTest, ALockSetIsReconciledUnderItsFirstLockAndIsInvalid) {
  add_pod("pod-s");
  add_claim("set", "pod-s", 0, {{"lockName", nullptr}, {"lockNames", {"report", "archive"}}});
  EXPECT_EQ(index_.locks(), std::vector<std::string>{kLock});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("set")["phase"], "Invalid");
  EXPECT_NE(held_message("set").find("a lock set (spec.lockNames) is not served by the controller yet"),
            std::string::npos);
  EXPECT_FALSE(*store_->get(*lock::parse_lock_id(kLock))) << "no lock of the set is written";
  EXPECT_FALSE(*store_->get(*lock::parse_lock_id("batch/archive")));
}

TEST_F(LockShapesTest, CapacityOneExclusiveIsTheLockAsEver) {
  add_pod("pod-a");
  add_claim("claim-a", "pod-a", 0, {{"capacity", 1}, {"access", "Exclusive"}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(holds("pod-a"), "claim-a=" + status("claim-a")["fencingToken"].get<std::string>());
}

}  // namespace
}  // namespace eslease::controller
