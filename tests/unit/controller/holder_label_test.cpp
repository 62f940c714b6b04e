// spec.holderLabel: the holder pod carries KEY: "true" while it holds the grant, written in the
// same patch as its eslease.io/holds annotation, and the label leaves an old holder before a
// successor gets it.
#include <gtest/gtest.h>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

const std::string kLabel = "example.com/leader";

class HolderLabelTest : public fixture::ReconcileFixture {
 protected:
  const json kWithLabel = {{"holderLabel", kLabel}};

  // The holder pod-z holds the lock and pod-a waits next in line. The successor's name sorts
  // first, so pod order alone would patch it before the old holder.
  void add_holder_and_waiter() {
    add_pod("pod-z");
    add_pod("pod-a");
    add_claim("claim-z", "pod-z", 0, kWithLabel);
    add_claim("claim-a", "pod-a", 1, kWithLabel);
    ASSERT_TRUE(reconcile().status.ok());
    ASSERT_EQ(status("claim-z")["phase"], "Held");
  }
  bool labelled(const std::string& pod) {
    return object(kube::resources::pods(), pod)["metadata"]
               .value("labels", json::object())
               .value(kLabel, "") == "true";
  }
};

TEST_F(HolderLabelTest, TheGrantLabelsTheHolderInTheSamePatchAsItsAnnotation) {
  add_pod("pod-a");
  add_claim("claim-a", "pod-a", 0, kWithLabel);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(holds("pod-a"), "claim-a=" + status("claim-a")["fencingToken"].get<std::string>());
  EXPECT_TRUE(labelled("pod-a"));
  EXPECT_EQ(object(kube::resources::pods(), "pod-a")["metadata"]["labels"]["app"], "web")
      << "other labels stay";
  ASSERT_EQ(pod_patches().size(), 1u) << "one write tells the pod and labels it";
  EXPECT_EQ(pod_patches()[0]["metadata"]["labels"][kLabel], "true");

  const std::size_t writes = api_.writes().size();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(api_.writes().size(), writes) << "a converged lock writes nothing";
}

TEST_F(HolderLabelTest, WithoutHolderLabelThePodKeepsItsLabels) {
  add_pod("pod-a");
  add_claim("claim-a", "pod-a", 0);
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_FALSE(labelled("pod-a"));
  ASSERT_EQ(pod_patches().size(), 1u);
  EXPECT_FALSE(pod_patches()[0]["metadata"].contains("labels"));
}

TEST_F(HolderLabelTest, AReleaseTakesTheLabelFromTheOldHolderBeforeTheSuccessorGetsIt) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  EXPECT_TRUE(labelled("pod-z"));
  EXPECT_FALSE(labelled("pod-a"));
  const std::size_t before = pod_patches().size();
  release_claim("claim-z");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_FALSE(labelled("pod-z"));
  EXPECT_TRUE(labelled("pod-a"));
  const std::vector<json> patches = pod_patches();
  ASSERT_EQ(patches.size(), before + 2) << "one write for each pod: no write for the label alone";
  EXPECT_TRUE(patches[before]["metadata"]["labels"][kLabel].is_null()) << "the old holder's patch goes first";
  EXPECT_EQ(patches[before + 1]["metadata"]["labels"][kLabel], "true");
  EXPECT_EQ(holds("pod-a"), "claim-a=" + status("claim-a")["fencingToken"].get<std::string>());
}

TEST_F(HolderLabelTest, TheSuccessorsLabelWaitsUntilTheOldHolderIsRidOfIt) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  release_claim("claim-z");
  api_.fail_next("patch", kube::resources::pods(), make_error(ErrorCode::kUnavailable, "connection reset"));
  ReconcileOutcome failed = reconcile();
  EXPECT_FALSE(failed.status.ok()) << "retried with backoff";
  EXPECT_EQ(status("claim-a")["phase"], "Held");
  EXPECT_EQ(holds("pod-a"), "claim-a=" + status("claim-a")["fencingToken"].get<std::string>())
      << "the new holder is told its token at once";
  EXPECT_TRUE(labelled("pod-z")) << "its removal failed";
  EXPECT_FALSE(labelled("pod-a")) << "never two labelled pods for a lock of one";

  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_FALSE(labelled("pod-z"));
  EXPECT_TRUE(labelled("pod-a"));
}

TEST_F(HolderLabelTest, AnOldHolderWhosePodIsGoneHoldsNothingBack) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  release_claim("claim-z");
  api_.fail_next("patch", kube::resources::pods(), make_error(ErrorCode::kTimeout, "no answer"));
  EXPECT_FALSE(reconcile().status.ok());
  ASSERT_FALSE(labelled("pod-a"));
  const PodRecord gone = *view_.pod("batch/pod-z");
  api_.erase_object(kube::resources::pods(), "batch/pod-z");
  tracker_.pod_gone(gone);
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_TRUE(labelled("pod-a"));
}

TEST_F(HolderLabelTest, ALabelLeftOnAPodThatDoesNotHoldIsTakenAway) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  json waiter = object(kube::resources::pods(), "pod-a");
  waiter["metadata"]["labels"][kLabel] = "true";  // a hand edit, or a write of another leader
  api_.put_object(kube::resources::pods(), waiter);
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_FALSE(labelled("pod-a"));
  EXPECT_TRUE(labelled("pod-z"));
}

TEST_F(HolderLabelTest, ChangingTheLabelKeyMovesTheLabel) {
  ASSERT_NO_FATAL_FAILURE(add_holder_and_waiter());
  json lease = object(kube::resources::eslease_leases(), "claim-z");
  lease["spec"]["holderLabel"] = "example.com/primary";
  api_.put_object(kube::resources::eslease_leases(), lease);
  sync();
  ASSERT_TRUE(reconcile().status.ok());
  const json labels = object(kube::resources::pods(), "pod-z")["metadata"]["labels"];
  EXPECT_FALSE(labels.contains(kLabel));
  EXPECT_EQ(labels.value("example.com/primary", ""), "true");
}

json spec_with_label(const json& label, const json& holder = {{"podName", "p"}}) {
  return {{"metadata", {{"name", "l"}, {"namespace", "batch"}}},
          {"spec", {{"lockName", "report"}, {"holder", holder}, {"holderLabel", label}}}};
}

TEST(HolderLabelCodec, ReadsALabelKey) {
  EXPECT_EQ(decode_lease(spec_with_label("example.com/leader")).spec.holder_label, "example.com/leader");
  EXPECT_EQ(decode_lease(spec_with_label("leader")).spec.holder_label, "leader");
  EXPECT_EQ(decode_lease(spec_with_label("leader")).spec.problem, "");
}

TEST(HolderLabelCodec, WhatTheSchemaCannotCheckIsInvalid) {
  const std::string long_prefix = std::string(250, 'a') + ".com/leader";  // prefix over 253
  for (const json& bad : {json(long_prefix), json(std::string(64, 'a')), json("a/b/c"), json(""), json(7)}) {
    const LeaseRecord lease = decode_lease(spec_with_label(bad));
    EXPECT_EQ(lease.spec.holder_label, "") << bad;
    EXPECT_NE(lease.spec.problem.find("spec.holderLabel"), std::string::npos) << bad;
  }
}

TEST(HolderLabelCodec, AKeyTheSelectorReadsIsInvalid) {
  const json selector = {{"podSelector", {{"matchLabels", {{"app", "web"}, {"leader", "true"}}}}}};
  const LeaseRecord lease = decode_lease(spec_with_label("leader", selector));
  EXPECT_NE(lease.spec.problem.find("podSelector"), std::string::npos) << lease.spec.problem;
  EXPECT_EQ(decode_lease(spec_with_label("example.com/leader", selector)).spec.problem, "");
}

}  // namespace
}  // namespace eslease::controller
