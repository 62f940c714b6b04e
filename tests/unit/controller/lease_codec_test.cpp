// Decoding what the API serves into typed records, including what the schema let through
// but the controller cannot serve, and the status patch the controller writes.
#include "controller/lease_codec.h"

#include <gtest/gtest.h>

#include "common/text.h"
#include "controller/decision.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

json lease_json(json spec) {
  return {{"apiVersion", "eslease.io/v1alpha1"},
          {"kind", "Lease"},
          {"metadata",
           {{"name", "a"},
            {"namespace", "batch"},
            {"uid", "u1"},
            {"resourceVersion", "7"},
            {"generation", 2},
            {"creationTimestamp", "2026-11-23T10:00:00Z"},
            {"finalizers", {"eslease.io/release"}}}},
          {"spec", spec}};
}

TEST(LeaseCodec, DecodesClaimModeSpecAndMetadata) {
  LeaseRecord lease = decode_lease(lease_json({{"lockName", "report"},
                                               {"holder", {{"podName", "pod-1"}}},
                                               {"priority", "Background"},
                                               {"leaseDurationSeconds", 15},
                                               {"acquireTimeoutSeconds", 60.0},
                                               {"livenessGraceSeconds", 0}}));
  EXPECT_EQ(lease.meta.key(), "batch/a");
  EXPECT_EQ(lease.generation, 2);
  EXPECT_TRUE(lease.has_finalizer());
  EXPECT_EQ(lease.spec.pod_name, "pod-1");
  EXPECT_EQ(lease.spec.priority, Priority::kBackground);
  EXPECT_EQ(lease.spec.lease_duration_seconds, 15);
  EXPECT_EQ(lease.spec.acquire_timeout_seconds, 60);
  EXPECT_EQ(lease.spec.liveness_grace_seconds, 0);
  EXPECT_TRUE(lease.spec.problem.empty());
  EXPECT_EQ(lease.lock_id(), "batch/report");
}

struct ProblemCase {
  const char* name;
  json spec;
  const char* mentions;
};

class SpecProblems : public ::testing::TestWithParam<ProblemCase> {};

TEST_P(SpecProblems, AreRecordedNotThrown) {
  LeaseRecord lease = decode_lease(lease_json(GetParam().spec));
  EXPECT_NE(lease.spec.problem.find(GetParam().mentions), std::string::npos) << lease.spec.problem;
}

std::vector<ProblemCase> problem_cases() {
  auto spec = [](const char* text) { return json::parse(text); };
  return {
      {"no_holder", spec(R"({"lockName": "x"})"), "holder"},
      {"both_holders", spec(R"({"lockName": "x", "holder": {"podName": "p", "podSelector": {}}})"),
       "exactly one"},
      {"bad_selector_key",
       spec(R"({"lockName": "x", "holder": {"podSelector": {"matchLabels": {"-bad": "v"}}}})"), "label key"},
      {"in_without_values",
       spec(
           R"({"lockName": "x", "holder": {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}})"),
       "at least one value"},
      {"duration_out_of_range",
       spec(R"({"lockName": "x", "holder": {"podName": "p"}, "leaseDurationSeconds": 99999})"),
       "leaseDurationSeconds"},
      {"no_lock", spec(R"({"holder": {"podName": "p"}})"), "lockName or lockNames"},
      {"both_locks", spec(R"({"lockName": "x", "lockNames": ["a", "b"], "holder": {"podName": "p"}})"),
       "exactly one"},
      {"one_lock_set", spec(R"({"lockNames": ["a"], "holder": {"podName": "p"}})"), "2 to 32 distinct"},
      {"repeated_lock", spec(R"({"lockNames": ["a", "b", "a"], "holder": {"podName": "p"}})"),
       "\"a\" repeats"},
      {"bad_lock_in_set", spec(R"({"lockNames": ["a", "B/c"], "holder": {"podName": "p"}})"),
       "spec.lockNames"},
      {"lock_set_not_a_list", spec(R"({"lockNames": "a", "holder": {"podName": "p"}})"), "spec.lockNames"},
      {"capacity_out_of_range", spec(R"({"lockName": "x", "holder": {"podName": "p"}, "capacity": 1001})"),
       "spec.capacity must be between 1 and 1000"},
      {"unknown_access", spec(R"({"lockName": "x", "holder": {"podName": "p"}, "access": "Read"})"),
       "spec.access must be Exclusive or Shared"},
  };
}

INSTANTIATE_TEST_SUITE_P(Rows, SpecProblems, ::testing::ValuesIn(problem_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(LeaseCodec, ReadsLockShapes) {
  const json holder = {{"podName", "p"}};
  LeaseRecord plain = decode_lease(
      lease_json({{"lockName", "report"}, {"holder", holder}, {"capacity", 1}, {"access", "Exclusive"}}));
  EXPECT_EQ(plain.spec.problem, "");
  EXPECT_EQ(plain.spec.capacity, 1);
  EXPECT_EQ(plain.spec.access, Access::kExclusive);
  EXPECT_TRUE(plain.spec.lock_names.empty());

  LeaseRecord semaphore =
      decode_lease(lease_json({{"lockName", "report"}, {"holder", holder}, {"capacity", 3}}));
  EXPECT_EQ(semaphore.spec.capacity, 3);
  EXPECT_EQ(semaphore.spec.access, Access::kShared) << "capacity alone is a counting semaphore";
  EXPECT_EQ(semaphore.spec.problem, "");

  LeaseRecord shared =
      decode_lease(lease_json({{"lockName", "report"}, {"holder", holder}, {"access", "Shared"}}));
  EXPECT_EQ(shared.spec.access, Access::kShared);
  EXPECT_EQ(shared.spec.problem, "");

  LeaseRecord set = decode_lease(lease_json(
      {{"lockNames", {"report", "archive"}}, {"holder", holder}, {"capacity", 2}, {"access", "Shared"}}));
  EXPECT_EQ(set.spec.lock_names, (std::vector<std::string>{"report", "archive"}));
  EXPECT_EQ(set.lock_ids(), (std::vector<std::string>{"batch/report", "batch/archive"}));
  EXPECT_EQ(set.spec.lock_name, "report") << "its status.slot and holds annotation refer to its first lock";
  EXPECT_EQ(set.spec.problem, "");
}

TEST(LeaseCodec, SelectorsMatchLikeKubernetes) {
  LeaseRecord lease = decode_lease(lease_json(
      {{"lockName", "x"},
       {"holder",
        {{"podSelector",
          {{"matchLabels", {{"app", "reporter"}}},
           {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"canary"}}},
                                             {{"key", "legacy"}, {"operator", "DoesNotExist"}}})}}}}}}));
  ASSERT_TRUE(lease.spec.selector);
  EXPECT_TRUE(lease.spec.selector->matches({{"app", "reporter"}}));
  EXPECT_TRUE(lease.spec.selector->matches({{"app", "reporter"}, {"tier", "prod"}}));
  EXPECT_FALSE(lease.spec.selector->matches({{"app", "reporter"}, {"tier", "canary"}}));
  EXPECT_FALSE(lease.spec.selector->matches({{"app", "reporter"}, {"legacy", "1"}}));
  EXPECT_FALSE(lease.spec.selector->matches({{"app", "web"}}));
}

TEST(LeaseCodec, PodReadinessAndWasReady) {
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "n"}, {"uid", "u"}, {"labels", {{"b", "2"}, {"a", "1"}}}}},
      {"spec", {{"nodeName", "node-1"}}},
      {"status",
       {{"phase", "Running"},
        {"startTime", "2026-11-23T10:00:00Z"},
        {"conditions",
         json::array(
             {{{"type", "Ready"}, {"status", "False"}, {"lastTransitionTime", "2026-11-23T10:00:00Z"}}})}}}};
  PodRecord starting = decode_pod(pod);
  EXPECT_EQ(starting.ready, ReadyState::kFalse);
  EXPECT_FALSE(starting.shows_was_ready);  // not Ready yet since it started
  EXPECT_EQ(starting.labels.front().first, "a");
  pod["status"]["conditions"][0]["lastTransitionTime"] = "2026-11-23T10:05:00Z";
  EXPECT_TRUE(decode_pod(pod).shows_was_ready);  // went unready well after starting
}

TEST(LeaseCodec, StatusPatchRemovesWhatIsNoLongerSet) {
  LeaseStatus status;
  status.phase = Phase::kPending;
  status.queue_position = 2;
  json patch = status_patch(status)["status"];
  EXPECT_EQ(patch["phase"], "Pending");
  EXPECT_EQ(patch["queuePosition"], 2);
  EXPECT_TRUE(patch["holder"].is_null());
  EXPECT_TRUE(patch["fencingToken"].is_null());
  // What the controller writes reads back as the same status.
  json object = lease_json({{"lockName", "x"}, {"holder", {{"podName", "p"}}}});
  status.conditions.push_back(
      Condition{"Held", "False", "Waiting", "waiting", WallTime{} + std::chrono::hours(500000), 2});
  object["status"] = status_patch(status)["status"];
  EXPECT_EQ(decode_lease(object).status, status);
}

// status.queuedAt keeps a claim's place among claims created in the same second, across
// restarts: written to the microsecond, and read back as written.
TEST(LeaseCodec, QueuedAtKeepsItsMicroseconds) {
  LeaseStatus status;
  status.phase = Phase::kPending;
  status.queued_at = *parse_rfc3339("2026-11-23T10:00:00Z") + std::chrono::microseconds(123456);
  const json patch = status_patch(status)["status"];
  EXPECT_EQ(patch["queuedAt"], "2026-11-23T10:00:00.123456Z");
  json object = lease_json({{"lockName", "x"}, {"holder", {{"podName", "p"}}}});
  object["status"] = patch;
  EXPECT_EQ(decode_lease(object).status.queued_at, status.queued_at);
  status.queued_at.reset();
  EXPECT_TRUE(status_patch(status)["status"]["queuedAt"].is_null()) << "removed once not set";
}

// The queue order counts a claim's wait as `eslease status` does (api::waiting_since): from
// when it lost the lock when its Held condition says so and carries the time, else from its
// creation. A condition without a time used to count from 1970, ahead of every claim.
TEST(LeaseCodec, AClaimWaitsFromItsLossOrElseFromItsCreation) {
  auto with_held = [](json condition) {
    json lease = lease_json({{"lockName", "report"}, {"holder", {{"podName", "pod-1"}}}});
    lease["status"] = {{"phase", "Pending"}, {"conditions", json::array({condition})}};
    return waiting_since(decode_lease(lease));
  };
  const WallTime created = *parse_rfc3339("2026-11-23T10:00:00Z");
  const WallTime lost_at = *parse_rfc3339("2026-11-23T10:05:00Z");
  json lost = {{"type", "Held"},
               {"status", "False"},
               {"reason", "PodDeleted"},
               {"message", "m"},
               {"lastTransitionTime", "2026-11-23T10:05:00Z"}};
  EXPECT_EQ(with_held(lost), lost_at);
  json waiting = lost;
  waiting["reason"] = "Waiting";
  EXPECT_EQ(with_held(waiting), created);
  json untimed = lost;
  untimed.erase("lastTransitionTime");
  EXPECT_EQ(with_held(untimed), created);
}

TEST(LeaseCodec, HoldsAnnotationRoundTripsAndSkipsWhatIsNotAnEntry) {
  const std::map<std::string, std::string> holds{{"leader", "4294967296"}, {"report-w-1", "12"}};
  EXPECT_EQ(format_holds(holds), "leader=4294967296,report-w-1=12");
  EXPECT_EQ(parse_holds(format_holds(holds)), holds);
  EXPECT_EQ(format_holds({}), "");
  EXPECT_TRUE(parse_holds("").empty());
  const auto edited = parse_holds("garbage,=5,,leader=7,");
  EXPECT_EQ(edited, (std::map<std::string, std::string>{{"leader", "7"}}));
}

}  // namespace
}  // namespace eslease::controller
