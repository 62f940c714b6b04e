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
