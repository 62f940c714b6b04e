// The eslease tool's Kubernetes mode against an in-memory API: the Lease it creates, what it
// waits for, what it leaves behind on every failure, and how `run` follows its Lease.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "api/session.h"
#include "cli/lease_view.h"
#include "common/text.h"
#include "support/wait.h"
#include "unit/cli/claim_request.h"
#include "unit/cli/kube_mode_fixture.h"

namespace eslease::cli {
namespace {

using nlohmann::json;
using testing::request;

TEST_F(KubeModeTest, AcquireCreatesAClaimOwnedByThePodAndPrintsTheTokenWhenHeld) {
  grant_on_next_watch("report-p1");
  auto r = cli({"acquire", "report", "--priority", "Background", "--ttl", "12s", "--wait", "5s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "4294967299\n");
  EXPECT_NE(r.err.find("acquired lock report as Lease report-p1"), std::string::npos) << r.err;
  auto claim = lease("report-p1");
  ASSERT_TRUE(claim) << "acquire leaves the held claim in place";
  EXPECT_EQ((*claim)["metadata"]["ownerReferences"][0]["uid"], "pod-uid");
  EXPECT_EQ((*claim)["spec"]["lockName"], "report");
  EXPECT_EQ((*claim)["spec"]["priority"], "Background");
  EXPECT_EQ((*claim)["spec"]["leaseDurationSeconds"], 12);
  // One second more than --wait: the controller counts from the creationTimestamp, whose
  // fraction of a second the API server cuts off.
  EXPECT_EQ((*claim)["spec"]["acquireTimeoutSeconds"], 6);
  ASSERT_FALSE(api_.watch_calls().empty());
  EXPECT_EQ(api_.watch_calls()[0].field_selector, "metadata.name=report-p1");
}

TEST_F(KubeModeTest, AcquireReadsThePodsUidWhenTheDownwardApiDoesNotGiveIt) {
  api_.put_object(kube::resources::pods(), kube::testing::make_object("batch", "p1", "1", "real-uid"));
  grant_on_next_watch("report-p1", "real-uid");
  auto r = cli({"acquire", "report"}, {{"POD_NAME", "p1"}, {"POD_NAMESPACE", "batch"}});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ((*lease("report-p1"))["metadata"]["ownerReferences"][0]["uid"], "real-uid");
}

TEST_F(KubeModeTest, AMissingPodIsAFailureAndCreatesNothing) {
  auto r = cli({"acquire", "report"}, {{"POD_NAME", "p1"}, {"POD_NAMESPACE", "batch"}});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("pod p1 not found in namespace batch"), std::string::npos) << r.err;
  EXPECT_FALSE(lease("report-p1"));
}

TEST_F(KubeModeTest, WaitRunningOutDeletesTheClaimAndExitsThree) {
  auto r = cli({"acquire", "report", "--wait", "1s"});
  EXPECT_EQ(r.code, kExitWaitTimedOut) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("gave up after 1s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no eslease-controller picked it up"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("deleted Lease report-p1"), std::string::npos) << r.err;
  EXPECT_FALSE(lease("report-p1"));
}

TEST_F(KubeModeTest, ControllerVerdictsEndTheWaitAndTheClaim) {
  for (const auto& [phase, code, text] : std::vector<std::tuple<std::string, int, std::string>>{
           {"TimedOut", kExitWaitTimedOut, "timed the claim out"}, {"Invalid", kExitFailed, "invalid"}}) {
    api_.push_watch([this, phase = phase](const kube::WatchOptions&, const kube::WatchHandler& handler) {
      json ended = *lease("report-p1");
      ended["status"] = {{"phase", phase}};
      handler({kube::WatchEvent::Type::kModified, api_.put_object(kLeases, ended)});
      return Status();
    });
    auto r = cli({"acquire", "report"});
    EXPECT_EQ(r.code, code) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_FALSE(lease("report-p1"));
  }
}

// --wait 0 asks the controller for a try-lock (acquireTimeoutSeconds 0) and waits for its
// verdict, with no timer of its own that could run out first.
TEST_F(KubeModeTest, ATryLockIsTheControllersVerdictAndABusyLockExitsThree) {
  api_.push_watch([this](const kube::WatchOptions&, const kube::WatchHandler& handler) {
    json claim = *lease("report-p1");
    EXPECT_EQ(claim["spec"]["acquireTimeoutSeconds"], 0);
    // The controller's verdict comes later than a timer of 0 s would have run out.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    claim["status"] = {{"phase", "TimedOut"},
                       {"conditions",
                        {{{"type", "Held"},
                          {"status", "False"},
                          {"reason", "Busy"},
                          {"message", "lock report is held by p9"}}}}};
    handler({kube::WatchEvent::Type::kModified, api_.put_object(kLeases, claim)});
    return Status();
  });
  auto r = cli({"acquire", "report", "--wait", "0"});
  EXPECT_EQ(r.code, kExitWaitTimedOut) << r.err;
  EXPECT_NE(r.err.find("not granted at once (--wait 0): lock report is held by p9"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("deleted Lease report-p1"), std::string::npos) << r.err;
  EXPECT_FALSE(lease("report-p1"));

  grant_on_next_watch("report-p1");
  r = cli({"acquire", "report", "--wait", "0s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ((*lease("report-p1"))["spec"]["acquireTimeoutSeconds"], 0);
}

TEST_F(KubeModeTest, ATakenNameIsRefusedAndTheLeaseLeftAlone) {
  json other = make_claim(request("batch", "taken", "report", "p9", "u9"));
  other["status"] = {{"phase", "Held"}};
  const json stored = api_.put_object(kLeases, other);
  auto r = cli({"acquire", "report", "--lease", "taken"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("Lease taken already exists in namespace batch (lock report, pod p9, phase Held)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--lease"), std::string::npos);
  EXPECT_EQ(*lease("taken"), stored);
}

TEST_F(KubeModeTest, ForbiddenSaysWhichPermissionsTheServiceAccountNeeds) {
  api_.fail_next("create", make_error(ErrorCode::kForbidden,
                                      "leases.eslease.io is forbidden: User \"x\" cannot create", 403));
  auto r = cli({"acquire", "report"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("cannot create Lease report-p1 in namespace batch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Access denied (403)"), std::string::npos) << r.err;
  EXPECT_FALSE(lease("report-p1"));
}

TEST_F(KubeModeTest, NoPodIdentityIsAUsageError) {
  auto r = cli({"acquire", "report"}, {});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("no pod to hold the lock"), std::string::npos) << r.err;
  EXPECT_TRUE(api_.writes().empty());
}

TEST_F(KubeModeTest, BadNamesAreRefusedBeforeConnecting) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"acquire", "Bad!"},
                                               {"acquire", "ok", "--lease", "a_b"},
                                               {"acquire", "ok", "--pod", "UP"},
                                               {"status", "-n", "a.b"},
                                               {"release", "x/y"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.code, kExitUsage) << args[1];
    EXPECT_EQ(r.err.rfind("eslease: ", 0), 0u) << r.err;
  }
  EXPECT_EQ(connections_, 0);
}

TEST_F(KubeModeTest, ReleaseDeletesTheLeaseAndWaitsUntilItIsGone) {
  api_.put_object(kLeases, make_claim(request("batch", "report-p1", "report", "p1", "pod-uid")));
  auto r = cli({"release", "report-p1"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(lease("report-p1"));
  auto again = cli({"release", "report-p1"});
  EXPECT_EQ(again.code, kExitOk);
  EXPECT_NE(again.err.find("nothing to release"), std::string::npos) << again.err;
}

TEST_F(KubeModeTest, StatusGroupsClaimsByLock) {
  json held = make_claim(request("batch", "a", "report", "p1", "u1"));
  held["status"] = {{"phase", "Held"}, {"fencingToken", "7"}, {"holder", {{"podName", "p1"}}}};
  json waiting = make_claim(request("batch", "b", "report", "p2", "u2"));
  waiting["status"] = {{"phase", "Pending"}, {"queuePosition", 0}};
  json other = make_claim(request("batch", "c", "other", "p3", "u3"));
  for (const json& o : {held, waiting, other}) api_.put_object(kLeases, o);
  auto r = cli({"status", "report", "-o", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report["locks"].size(), 1u);
  EXPECT_EQ(report["locks"][0]["holders"][0]["fencingToken"], "7");
  EXPECT_EQ(report["locks"][0]["queue"][0]["lease"], "b");
  auto none = cli({"status", "missing"});
  EXPECT_EQ(none.code, kExitOk);
  EXPECT_NE(none.out.find("no claims on lock missing in namespace batch"), std::string::npos) << none.out;
}

TEST_F(KubeModeTest, RunPassesTheTokenAndReleasesTheLeaseWhenTheCommandEnds) {
  session_renewed();
  grant_on_next_watch("job-p1");
  const auto file =
      std::filesystem::temp_directory_path() / ("eslease-kube-run-" + std::to_string(::getpid()));
  auto r =
      cli({"run", "job", "--", "/bin/sh", "-c",
           "echo \"$ESLEASE_FENCING_TOKEN $ESLEASE_LOCK $ESLEASE_LEASE\" > " + file.string() + "; exit 7"});
  EXPECT_EQ(r.code, 7) << r.err;
  EXPECT_EQ(read_file(file), "4294967299 batch/job job-p1\n");
  std::filesystem::remove(file);
  EXPECT_TRUE(marked_released()) << "the controller may hand over at once";
  EXPECT_FALSE(lease("job-p1")) << "deleted when the command ended";
  EXPECT_NE(r.err.find("released lock job"), std::string::npos) << r.err;
}

TEST_F(KubeModeTest, RunStopsTheCommandWhenTheGrantIsRevoked) {
  session_renewed();
  grant_on_next_watch("job-p1");
  revoke_on_next_watch("job-p1", Millis(200));
  auto r = cli({"run", "job", "--grace", "2s", "--", "/bin/sh", "-c", "sleep 30"});
  EXPECT_EQ(r.code, kExitLockLost) << r.err;
  EXPECT_NE(r.err.find("no longer held by Lease job-p1 (phase Pending, PodNotReady: pod p1 is not Ready)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(lease("job-p1"));
}

TEST_F(KubeModeTest, RunStopsTheCommandWhenTheSessionListsItsGrant) {
  session_renewed();
  grant_on_next_watch("job-p1");
  api_.push_watch(kSessions, [this](const kube::WatchOptions&, const kube::WatchHandler& handler) {
    std::this_thread::sleep_for(Millis(200));
    handler({kube::WatchEvent::Type::kModified, session_renewed(Millis(0), {{"job-p1", kToken}})});
    return Status();
  });
  auto r = cli({"run", "job", "--grace", "2s", "--", "/bin/sh", "-c", "sleep 30"});
  EXPECT_EQ(r.code, kExitLockLost) << r.err;
  EXPECT_NE(
      r.err.find("lock job was revoked (session eslease-session lists Lease job-p1 with token 4294967299)"),
      std::string::npos)
      << r.err;
}

TEST_F(KubeModeTest, RunStopsTheCommandBeforeAnUnrenewedGrantExpires) {
  // The session was renewed once, now, for a 3 s lease, and never again: the command is asked
  // to stop a grace period before that validity less the safety margin.
  session_renewed();
  grant_on_next_watch("job-p1");
  const auto started = std::chrono::steady_clock::now();
  auto r = cli({"run", "job", "--ttl", "3s", "--grace", "500ms", "--safety-margin", "500ms", "--", "/bin/sh",
                "-c", "sleep 30"});
  EXPECT_EQ(r.code, kExitLockLost) << r.err;
  EXPECT_NE(r.err.find("cannot confirm lock batch/job before it expires"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_FALSE(lease("job-p1"));
}

TEST_F(KubeModeTest, RunRefusesToStartWhenTheSessionCannotBeRead) {
  grant_on_next_watch("job-p1");
  api_.fail_next(
      "get", kSessions,
      make_error(ErrorCode::kForbidden, "leases.coordination.k8s.io \"eslease-session\" is forbidden", 403));
  const auto file =
      std::filesystem::temp_directory_path() / ("eslease-kube-norun-" + std::to_string(::getpid()));
  auto r = cli({"run", "job", "--", "/bin/sh", "-c", "touch " + file.string()});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("get and watch on leases.coordination.k8s.io named eslease-session"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("not running the command"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(file)) << "the command never ran";
  EXPECT_FALSE(lease("job-p1"));
}

TEST_F(KubeModeTest, RunTakesBackItsOwnPodsLeaseLeftByAnEarlierRunOfItsContainer) {
  // The container restarted: its Lease, owned by the pod that lives on, still holds the lock.
  json leftover = make_claim(request("batch", "job-p1", "job", "p1", "pod-uid"));
  leftover["status"] = {
      {"phase", "Held"}, {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}}, {"fencingToken", kToken}};
  api_.put_object(kLeases, leftover);
  session_renewed();
  auto r = cli({"run", "job", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("taking back Lease job-p1"), std::string::npos) << r.err;
  EXPECT_FALSE(lease("job-p1"));
}

TEST_F(KubeModeTest, AClaimWhoseCreationAnswerWasLostIsCarriedOn) {
  // The API server applied the create and the connection dropped before its answer.
  api_.put_object(kLeases, make_claim(request("batch", "job-p1", "job", "p1", "pod-uid")));
  api_.fail_next("create", make_error(ErrorCode::kUnavailable, "Failed to read HTTP status line"));
  session_renewed();
  grant_on_next_watch("job-p1");
  auto r = cli({"run", "job", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("the answer to its creation was lost"), std::string::npos) << r.err;
  EXPECT_FALSE(lease("job-p1")) << "released at the end, not left behind";
}

TEST_F(KubeModeTest, AnotherPodsLeaseWithTheDefaultNameIsNotTakenBack) {
  json foreign = make_claim(request("batch", "job-p1", "job", "p1", "uid-of-an-earlier-pod-p1"));
  const json stored = api_.put_object(kLeases, foreign);
  auto r = cli({"run", "job", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(*lease("job-p1"), stored);
}

TEST_F(KubeModeTest, ReleaseMarksAHeldLeaseReleasedByItsHolder) {
  json held = make_claim(request("batch", "report-p1", "report", "p1", "pod-uid"));
  held["status"] = {{"phase", "Held"}, {"fencingToken", kToken}};
  api_.put_object(kLeases, held);
  auto r = cli({"release", "report-p1"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(marked_released());
  EXPECT_FALSE(lease("report-p1"));
}

// Run from a shell without a pod identity, release used to mark the grant released, and the
// controller handed the lock over at once while the holder still ran.
TEST_F(KubeModeTest, ReleaseFromOutsideTheHolderDeletesWithoutTheMark) {
  for (const auto& env : std::vector<std::map<std::string, std::string>>{
           {}, {{"POD_NAME", "p2"}, {"POD_NAMESPACE", "batch"}, {"POD_UID", "other-uid"}}}) {
    json held = make_claim(request("batch", "report-p1", "report", "p1", "pod-uid"));
    held["status"] = {
        {"phase", "Held"}, {"fencingToken", kToken}, {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}}};
    api_.put_object(kLeases, held);
    auto r = cli({"release", "report-p1", "-n", "batch"}, env);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    EXPECT_FALSE(marked_released()) << "only the holder may mark its grant released";
    EXPECT_FALSE(lease("report-p1"));
    EXPECT_NE(r.err.find("revokes the grant"), std::string::npos) << r.err;
  }
}

TEST_F(KubeModeTest, ReleaseWithForceMarksAnotherPodsGrantAndWarns) {
  json held = make_claim(request("batch", "report-p1", "report", "p1", "pod-uid"));
  held["status"] = {
      {"phase", "Held"}, {"fencingToken", kToken}, {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}}};
  api_.put_object(kLeases, held);
  auto r = cli({"release", "report-p1", "-n", "batch", "--force"}, {});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(marked_released());
  EXPECT_NE(r.err.find("warning: --force"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"acquire", "report", "--force"}).code, kExitUsage) << "--force is for release only";
}

// `acquire LOCK` prints a Lease name, but people release what they acquired: the lock.
TEST_F(KubeModeTest, ReleaseOfALockNameReleasesThisPodsClaimOnIt) {
  json held = make_claim(request("batch", "jobs-lock-p1", "jobs-lock", "p1", "pod-uid"));
  held["status"] = {
      {"phase", "Held"}, {"fencingToken", kToken}, {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}}};
  api_.put_object(kLeases, held);
  auto r = cli({"release", "jobs-lock"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(lease("jobs-lock-p1"));
  EXPECT_TRUE(marked_released()) << "the holder released its own claim";
  EXPECT_NE(r.err.find("releasing Lease jobs-lock-p1, this pod's claim on lock jobs-lock"), std::string::npos)
      << r.err;
}

TEST_F(KubeModeTest, ReleaseOfALockNameFindsAClaimUnderAnotherLeaseName) {
  api_.put_object(kLeases, make_claim(request("batch", "custom", "jobs_lock", "p1", "pod-uid")));
  auto r = cli({"release", "jobs_lock"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(lease("custom"));
}

TEST_F(KubeModeTest, ReleaseOfALockOthersClaimFailsAndNamesTheirLeases) {
  json other = make_claim(request("batch", "jobs-lock-worker-1", "jobs-lock", "worker-1", "u9"));
  other["status"] = {{"phase", "Held"}, {"fencingToken", kToken}, {"holder", {{"podName", "worker-1"}}}};
  api_.put_object(kLeases, other);
  auto r = cli({"release", "jobs-lock"});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("lock jobs-lock is claimed through Lease jobs-lock-worker-1 (pod worker-1, Held)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("this tool acts for pod p1"), std::string::npos) << r.err;
  EXPECT_TRUE(lease("jobs-lock-worker-1")) << "left alone";
}

TEST_F(KubeModeTest, ReleaseOfANameNothingUsesSaysSoAndSucceeds) {
  auto r = cli({"release", "jobs-lock"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(
      r.err.find(
          "no Lease named jobs-lock in namespace batch, and no claim on lock jobs-lock; nothing to release"),
      std::string::npos)
      << r.err;
  // Without the right to list (the workload Role has none), this pod's default claim is
  // what is checked.
  api_.push_list_error(make_error(ErrorCode::kForbidden, "cannot list", 403));
  auto denied = cli({"release", "jobs-lock"});
  EXPECT_EQ(denied.code, kExitOk) << denied.err;
  EXPECT_NE(denied.err.find("no claim on lock jobs-lock under the default name jobs-lock-p1"),
            std::string::npos)
      << denied.err;
}

TEST_F(KubeModeTest, AReleaseWhoseAnswerWasLostIsSentAgain) {
  api_.put_object(kLeases, make_claim(request("batch", "report-p1", "report", "p1", "pod-uid")));
  api_.fail_next("delete", make_error(ErrorCode::kUnavailable, "Failed to read HTTP status line"));
  auto r = cli({"release", "report-p1"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(lease("report-p1"));
}

TEST_F(KubeModeTest, StatusShowsEachHoldersLiveValidityFromTheSession) {
  json held = make_claim(request("batch", "a", "report", "p1", "u1"));
  held["spec"]["leaseDurationSeconds"] = 60;
  held["status"] = {{"phase", "Held"}, {"fencingToken", "7"}, {"holder", {{"podName", "p1"}}}};
  api_.put_object(kLeases, held);
  const json session = session_renewed(Millis(20000));
  auto r = cli({"status", "report", "-o", "json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["locks"][0]["holders"][0]["validUntil"],
            format_rfc3339_millis(*api::decode_session(session).renew_time + std::chrono::seconds(60)));
  auto table = cli({"status", "report"});
  EXPECT_NE(table.out.find("VALID"), std::string::npos) << table.out;
  // About 40 s are left of the 60 s published 20 s ago.
  EXPECT_TRUE(table.out.find(" 40s") != std::string::npos || table.out.find(" 39s") != std::string::npos)
      << table.out;
}

}  // namespace
}  // namespace eslease::cli
