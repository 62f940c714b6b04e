// A claim that gives up waiting (acquireTimeoutSeconds) turns TimedOut and is counted once,
// by priority, for the alert on timed-out claims (eslease_claim_timeouts_total).
#include <gtest/gtest.h>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class ClaimTimeoutTest : public fixture::ReconcileFixture {};

TEST_F(ClaimTimeoutTest, AClaimThatGivesUpIsCountedOnceByPriority) {
  add_pod("pod-h");
  add_pod("pod-w");
  add_claim("holder", "pod-h", 0);
  ASSERT_TRUE(reconcile().status.ok());
  // Created long before the controller's clock: its one second of patience is already over.
  add_claim("impatient", "pod-w", 1, {{"acquireTimeoutSeconds", 1}, {"priority", "Background"}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("impatient")["phase"], "TimedOut");
  EXPECT_EQ(observer_.timed_out, (std::map<std::string, int>{{"Background", 1}}));

  clock_.advance(std::chrono::seconds(5));
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(observer_.timed_out, (std::map<std::string, int>{{"Background", 1}})) << "counted once";
}

TEST_F(ClaimTimeoutTest, AGrantedOrPatientClaimIsNotCounted) {
  add_pod("pod-h");
  add_pod("pod-w");
  // Patient enough to be granted, though created long before the controller's clock.
  add_claim("holder", "pod-h", 0, {{"acquireTimeoutSeconds", 1000000000}});
  add_claim("patient", "pod-w", 1);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("holder")["phase"], "Held");
  EXPECT_EQ(status("patient")["phase"], "Pending");
  EXPECT_TRUE(observer_.timed_out.empty());
}

// A try-lock (acquireTimeoutSeconds 0) on a held lock is decided in the reconcile that first
// sees it, and is not counted: skipping busy work is what it asked for.
TEST_F(ClaimTimeoutTest, ATryLockOnAHeldLockEndsAtOnceAndIsNotCounted) {
  add_pod("pod-h");
  add_pod("pod-t");
  add_claim("holder", "pod-h", 0);
  ASSERT_TRUE(reconcile().status.ok());
  add_claim("try", "pod-t", 1, {{"acquireTimeoutSeconds", 0}});
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("try")["phase"], "TimedOut");
  EXPECT_EQ(status("try")["conditions"][0]["reason"], "Busy");
  EXPECT_TRUE(observer_.timed_out.empty());
}

TEST_F(ClaimTimeoutTest, AStatusWriteThatFailsIsCountedWhenItIsWritten) {
  add_pod("pod-h");
  add_pod("pod-w");
  add_claim("holder", "pod-h", 0);
  ASSERT_TRUE(reconcile().status.ok());
  add_claim("impatient", "pod-w", 1, {{"acquireTimeoutSeconds", 1}});
  api_.fail_next("patch", kube::resources::eslease_leases(), make_error(ErrorCode::kUnavailable, "reset"));
  EXPECT_FALSE(reconcile().status.ok());
  EXPECT_TRUE(observer_.timed_out.empty()) << "nobody can see it yet";
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("impatient")["phase"], "TimedOut");
  EXPECT_EQ(observer_.timed_out, (std::map<std::string, int>{{"Foreground", 1}}));
}

}  // namespace
}  // namespace eslease::controller
