// Who may release a Lease at once: only its holder, from its own pod (the design's "Only the
// holder releases at once"); anyone else revokes, unless --force.
#include "cli/release.h"

#include <gtest/gtest.h>

#include "unit/cli/claim_request.h"

namespace eslease::cli {
namespace {

using testing::request;

LeaseView held_by(const std::string& pod, const std::string& uid) {
  LeaseView v = decode_lease_view(make_claim(request("batch", "report-" + pod, "report", pod, uid)));
  v.phase = "Held";
  v.holder_pod = pod;
  v.holder_uid = uid;
  v.fencing_token = "4294967299";
  v.spec.lease_duration_seconds = 60;
  return v;
}

PodIdentity pod(const std::string& name, const std::string& uid = "", const std::string& ns = "batch") {
  return PodIdentity{name, ns, uid, "POD_NAME"};
}

TEST(ReleasePlan, TheHolderFromItsOwnPodReleasesAtOnce) {
  for (const PodIdentity& me : {pod("p1", "u1"), pod("p1")}) {
    const ReleasePlan plan = plan_release(held_by("p1", "u1"), me, false);
    EXPECT_TRUE(plan.by_holder) << me.uid;
    EXPECT_TRUE(plan.mark_released);
    EXPECT_FALSE(plan.wait_for_validity);
    EXPECT_EQ(plan.notice, "");
  }
}

TEST(ReleasePlan, AnyoneElseRevokesAndIsToldSo) {
  const std::vector<std::optional<PodIdentity>> others{
      std::nullopt,                  // a shell with no pod identity
      pod("p2", "u2"),               // another pod
      pod("p1", "u-old"),            // a pod of the same name but another uid (replaced)
      pod("p1", "u1", "other-ns")};  // a pod of the same name in another namespace
  for (const auto& me : others) {
    const ReleasePlan plan = plan_release(held_by("p1", "u1"), me, false);
    EXPECT_FALSE(plan.by_holder);
    EXPECT_FALSE(plan.mark_released) << "only the holder writes eslease.io/released";
    EXPECT_TRUE(plan.wait_for_validity);
    EXPECT_NE(plan.notice.find("pod p1 holds lock report through Lease report-p1"), std::string::npos)
        << plan.notice;
    EXPECT_NE(plan.notice.find("revokes the grant"), std::string::npos) << plan.notice;
    EXPECT_NE(plan.notice.find("at most 60s"), std::string::npos) << plan.notice;
    EXPECT_NE(plan.notice.find("--force"), std::string::npos) << plan.notice;
  }
  EXPECT_NE(plan_release(held_by("p1", "u1"), std::nullopt, false).notice.find("no pod identity"),
            std::string::npos);
}

TEST(ReleasePlan, ForceMarksTheGrantReleasedWithAWarning) {
  const ReleasePlan plan = plan_release(held_by("p1", "u1"), std::nullopt, true);
  EXPECT_FALSE(plan.by_holder);
  EXPECT_TRUE(plan.mark_released);
  EXPECT_FALSE(plan.wait_for_validity);
  EXPECT_EQ(plan.notice.rfind("warning: --force", 0), 0u) << plan.notice;
  EXPECT_NE(plan.notice.find("may still be running"), std::string::npos) << plan.notice;
}

TEST(ReleasePlan, AClaimThatHoldsNothingIsWithdrawnWithoutAMark) {
  LeaseView waiting = held_by("p1", "u1");
  waiting.phase = "Pending";
  waiting.holder_pod.clear();
  waiting.holder_uid.clear();
  const ReleasePlan outside = plan_release(waiting, std::nullopt, false);
  EXPECT_FALSE(outside.mark_released);
  EXPECT_FALSE(outside.wait_for_validity);
  EXPECT_EQ(outside.notice, "");
  // Its own pod speaks for it, should it be granted while being deleted.
  EXPECT_TRUE(plan_release(waiting, pod("p1", "u1"), false).mark_released);
}

TEST(ReleasePlan, AnElectionHolderIsTheHolderItShows) {
  LeaseView election = held_by("p3", "u3");
  election.spec.pod_name.clear();
  election.spec.selector = api::LabelSelector{{{"app", api::LabelRequirement::Operator::kIn, {"scheduler"}}}};
  EXPECT_TRUE(plan_release(election, pod("p3", "u3"), false).mark_released);
  EXPECT_FALSE(plan_release(election, pod("p4", "u4"), false).mark_released);
}

TEST(ReleaseTarget, OwnClaimsAreThisPodsClaimsOnTheLock) {
  std::vector<LeaseView> leases;
  for (const auto& [name, lock, holder] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"jobs-lock-worker-1", "jobs-lock", "worker-1"},
           {"jobs-lock-worker-2", "jobs-lock", "worker-2"},
           {"other-worker-1", "other", "worker-1"}}) {
    leases.push_back(decode_lease_view(make_claim(request("batch", name, lock, holder, "u"))));
  }
  const auto mine = own_claims_on(leases, {"jobs-lock"}, pod("worker-1"));
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].name, "jobs-lock-worker-1");
  EXPECT_TRUE(own_claims_on(leases, {"jobs-lock"}, pod("worker-3")).empty());
  EXPECT_TRUE(own_claims_on(leases, {"jobs-lock"}, pod("worker-1", "", "elsewhere")).empty());
}

}  // namespace
}  // namespace eslease::cli
