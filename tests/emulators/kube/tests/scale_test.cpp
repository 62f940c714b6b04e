// The scale subresource of Deployments (autoscaling/v1 Scale), as `kubectl scale` uses it.
#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using testing::call_raw;

const std::string kDeployments = "/apis/apps/v1/namespaces/default/deployments";
const std::string kScale = kDeployments + "/web/scale";

class KubeScaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = call(api, "POST", kDeployments,
                        {{"apiVersion", "apps/v1"},
                         {"kind", "Deployment"},
                         {"metadata", {{"name", "web"}}},
                         {"spec",
                          {{"replicas", 2},
                           {"selector", {{"matchLabels", {{"app", "web"}, {"tier", "front"}}}}},
                           {"template",
                            {{"metadata", {{"labels", {{"app", "web"}, {"tier", "front"}}}}},
                             {"spec", {{"containers", {{{"name", "app"}, {"image", "app:1"}}}}}}}}}}});
    ASSERT_EQ(created.status, 201) << created.body.dump();
  }
  json deployment() { return call(api, "GET", kDeployments + "/web").body; }
  ApiServer api{ApiServerOptions{}};
};

TEST_F(KubeScaleTest, GetAnswersTheScale) {
  auto scale = call(api, "GET", kScale);
  ASSERT_EQ(scale.status, 200) << scale.body.dump();
  EXPECT_EQ(scale.body["kind"], "Scale");
  EXPECT_EQ(scale.body["apiVersion"], "autoscaling/v1");
  EXPECT_EQ(scale.body["metadata"]["name"], "web");
  EXPECT_EQ(scale.body["metadata"]["resourceVersion"], deployment()["metadata"]["resourceVersion"]);
  EXPECT_EQ(scale.body["spec"]["replicas"], 2);
  EXPECT_EQ(scale.body["status"], (json{{"replicas", 0}, {"selector", "app=web,tier=front"}}));
}

TEST_F(KubeScaleTest, PatchAndPutChangeOnlyTheReplicas) {
  const json before = deployment();
  auto patched = call_raw(api, "PATCH", kScale, R"({"spec":{"replicas":5}})",
                          {{"Content-Type", "application/merge-patch+json"}});
  ASSERT_EQ(patched.status, 200) << patched.body.dump();
  EXPECT_EQ(patched.body["spec"]["replicas"], 5);
  json after = deployment();
  EXPECT_EQ(after["spec"]["replicas"], 5);
  EXPECT_EQ(after["metadata"]["generation"], before["metadata"]["generation"].get<int>() + 1);
  EXPECT_EQ(after["spec"]["template"], before["spec"]["template"]);

  json scale = call(api, "GET", kScale).body;
  scale["spec"]["replicas"] = 1;
  auto put = call(api, "PUT", kScale, scale);
  ASSERT_EQ(put.status, 200) << put.body.dump();
  EXPECT_EQ(deployment()["spec"]["replicas"], 1);

  auto stale = call(api, "PUT", kScale, scale);  // the resourceVersion it read is gone
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");
}

TEST_F(KubeScaleTest, BadScalesAreRefusedAndNothingChanges) {
  auto negative = call_raw(api, "PATCH", kScale, R"({"spec":{"replicas":-1}})",
                           {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(negative.status, 422);
  EXPECT_EQ(negative.body["details"]["causes"][0]["field"], "spec.replicas");
  EXPECT_EQ(deployment()["spec"]["replicas"], 2);
  EXPECT_EQ(call(api, "GET", kDeployments + "/missing/scale").status, 404);
  EXPECT_EQ(call(api, "GET", "/api/v1/namespaces/default/pods/p/scale").status, 404) << "pods have no scale";
}

TEST_F(KubeScaleTest, DiscoveryNamesTheScaleKind) {
  auto resources = call(api, "GET", "/apis/apps/v1");
  ASSERT_EQ(resources.status, 200);
  bool found = false;
  for (const auto& r : resources.body["resources"]) {
    if (r["name"] != "deployments/scale") continue;
    found = true;
    EXPECT_EQ(r["group"], "autoscaling");
    EXPECT_EQ(r["version"], "v1");
    EXPECT_EQ(r["kind"], "Scale");
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace eslease::kubeemu
