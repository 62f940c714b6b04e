// Lock sets are not served by the controller yet: such a claim is Invalid, saying so, and
// leaves the lock to the claims it serves. It is filed, and so reconciled, under its first
// lock. (Capacity and access are: shaped_reconciler_test.cpp.)
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
