// Reading a Lease's spec, as both the controller and the eslease tool read it: what the
// schema let through but cannot be served is recorded, never thrown.
#include "api/lease_spec.h"

#include <gtest/gtest.h>

namespace eslease::api {
namespace {

using nlohmann::json;

json lease_json(json spec) {
  return {{"apiVersion", "eslease.io/v1alpha1"},
          {"kind", "Lease"},
          {"metadata", {{"name", "a"}, {"namespace", "batch"}}},
          {"spec", std::move(spec)}};
}

struct ProblemCase {
  const char* name;
  json spec;
  const char* mentions;
};

class SpecProblems : public ::testing::TestWithParam<ProblemCase> {};

TEST_P(SpecProblems, AreRecordedNotThrown) {
  const LeaseSpec spec = decode_lease_spec(lease_json(GetParam().spec));
  EXPECT_NE(spec.problem.find(GetParam().mentions), std::string::npos) << spec.problem;
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

TEST(LeaseSpec, ReadsLockShapes) {
  const json holder = {{"podName", "p"}};
  LeaseSpec plain = decode_lease_spec(
      lease_json({{"lockName", "report"}, {"holder", holder}, {"capacity", 1}, {"access", "Exclusive"}}));
  EXPECT_EQ(plain.problem, "");
  EXPECT_EQ(plain.capacity, 1);
  EXPECT_EQ(plain.access, Access::kExclusive);
  EXPECT_TRUE(plain.lock_names.empty());

  LeaseSpec semaphore =
      decode_lease_spec(lease_json({{"lockName", "report"}, {"holder", holder}, {"capacity", 3}}));
  EXPECT_EQ(semaphore.capacity, 3);
  EXPECT_EQ(semaphore.access, Access::kShared) << "capacity alone is a counting semaphore";
  EXPECT_EQ(semaphore.problem, "");

  LeaseSpec shared =
      decode_lease_spec(lease_json({{"lockName", "report"}, {"holder", holder}, {"access", "Shared"}}));
  EXPECT_EQ(shared.access, Access::kShared);
  EXPECT_EQ(shared.problem, "");

  LeaseSpec set = decode_lease_spec(lease_json(
      {{"lockNames", {"report", "archive"}}, {"holder", holder}, {"capacity", 2}, {"access", "Shared"}}));
  EXPECT_EQ(set.lock_names, (std::vector<std::string>{"report", "archive"}));
  EXPECT_EQ(set.locks(), (std::vector<std::string>{"report", "archive"}));
  EXPECT_EQ(set.lock_name, "report") << "its status.slot and holds annotation refer to its first lock";
  EXPECT_EQ(set.problem, "");
}

TEST(LeaseSpec, SelectorsMatchLikeKubernetes) {
  LeaseSpec lease = decode_lease_spec(lease_json(
      {{"lockName", "x"},
       {"holder",
        {{"podSelector",
          {{"matchLabels", {{"app", "reporter"}}},
           {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"canary"}}},
                                             {{"key", "legacy"}, {"operator", "DoesNotExist"}}})}}}}}}));
  ASSERT_TRUE(lease.selector);
  EXPECT_TRUE(lease.selector->matches({{"app", "reporter"}}));
  EXPECT_TRUE(lease.selector->matches({{"app", "reporter"}, {"tier", "prod"}}));
  EXPECT_FALSE(lease.selector->matches({{"app", "reporter"}, {"tier", "canary"}}));
  EXPECT_FALSE(lease.selector->matches({{"app", "reporter"}, {"legacy", "1"}}));
  EXPECT_FALSE(lease.selector->matches({{"app", "web"}}));
}

// How messages and `eslease status` show who may hold a claim: as kubectl writes a
// selector, its matchLabels first, in the order the Lease gives them.
TEST(LeaseSpec, DescribesItsHolderAsKubectlWritesASelector) {
  EXPECT_EQ(
      decode_lease_spec(lease_json({{"lockName", "x"}, {"holder", {{"podName", "p-1"}}}})).describe_holder(),
      "pod p-1");
  const LeaseSpec election = decode_lease_spec(lease_json(
      {{"lockName", "x"},
       {"holder",
        {{"podSelector",
          {{"matchLabels", {{"app", "reporter"}}},
           {"matchExpressions", json::array({{{"key", "tier"}, {"operator", "In"}, {"values", {"a", "b"}}},
                                             {{"key", "zone"}, {"operator", "NotIn"}, {"values", {"c"}}},
                                             {{"key", "gpu"}, {"operator", "Exists"}},
                                             {{"key", "legacy"}, {"operator", "DoesNotExist"}}})}}}}}}));
  EXPECT_EQ(election.describe_holder(), "pods app=reporter,tier in (a,b),zone notin (c),gpu,!legacy");
  EXPECT_EQ(decode_lease_spec(lease_json({{"lockName", "x"}, {"holder", {{"podSelector", json::object()}}}}))
                .describe_holder(),
            "pods (all pods)");
  const LeaseSpec broken = decode_lease_spec(
      lease_json({{"lockName", "x"}, {"holder", {{"podSelector", {{"matchLabels", {{"-bad", "v"}}}}}}}}));
  EXPECT_EQ(broken.describe_holder(), "pods (no valid selector)");
  EXPECT_NE(broken.problem, "");
}

// At capacity 1 a grant is Exclusive whatever spec.access says; above it, as the claim says.
TEST(LeaseSpec, EffectiveAccessIsExclusiveAtCapacityOne) {
  const json holder = {{"podName", "p"}};
  EXPECT_EQ(decode_lease_spec(lease_json({{"lockName", "x"}, {"holder", holder}})).effective_access(),
            Access::kExclusive);
  EXPECT_EQ(decode_lease_spec(lease_json({{"lockName", "x"}, {"holder", holder}, {"capacity", 2}}))
                .effective_access(),
            Access::kShared);
}

}  // namespace
}  // namespace eslease::api
