// Strategic merge patch of built-in kinds, as k8s.io/apimachinery/pkg/util/strategicpatch
// applies it (sig-api-machinery's strategic-merge-patch.md): lists merged by patchMergeKey,
// primitive lists merged as sets, other lists replaced, and the $patch, $retainKeys,
// $deleteFromPrimitiveList and $setElementOrder directives Helm 3 and kubectl send.
#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;

const std::string kDeployment = "/apis/apps/v1/namespaces/default/deployments/d";

class KubeStrategicMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    json containers =
        json::array({{{"name", "app"},
                      {"image", "app:1"},
                      {"args", {"--a", "--b"}},
                      {"env", {{{"name", "X"}, {"value", "1"}}, {{"name", "Y"}, {"value", "2"}}}}},
                     {{"name", "proxy"}, {"image", "proxy:1"}}});
    json d = {
        {"apiVersion", "apps/v1"},
        {"kind", "Deployment"},
        {"metadata", {{"name", "d"}, {"finalizers", {"a", "b"}}}},
        {"spec",
         {{"replicas", 1},
          {"strategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxSurge", 1}}}}},
          {"template",
           {{"metadata", {{"labels", {{"app", "d"}, {"tier", "web"}}}}},
            {"spec",
             {{"containers", containers}, {"tolerations", {{{"key", "k"}, {"operator", "Exists"}}}}}}}}}}};
    ASSERT_EQ(call(api, "POST", "/apis/apps/v1/namespaces/default/deployments", d).status, 201);
  }
  json patch(const json& body, int expected = 200) {
    auto reply =
        call(api, "PATCH", kDeployment, body, {{"Content-Type", "application/strategic-merge-patch+json"}});
    EXPECT_EQ(reply.status, expected) << reply.body.dump();
    return reply.body;
  }
  static json pod_spec(const json& containers_patch) {
    return {{"spec", {{"template", {{"spec", containers_patch}}}}}};
  }
  static std::vector<std::string> names(const json& list, const char* key = "name") {
    std::vector<std::string> out;
    for (const auto& item : list) out.push_back(item[key]);
    return out;
  }
  ApiServer api{ApiServerOptions{}};
};

TEST_F(KubeStrategicMergeTest, ContainersMergeByNameAndTheirEnvByName) {
  json out = patch(pod_spec(
      {{"containers", {{{"name", "app"}, {"image", "app:2"}, {"env", {{{"name", "Y"}, {"value", "3"}}}}}}}}));
  const json& containers = out["spec"]["template"]["spec"]["containers"];
  EXPECT_EQ(names(containers), (std::vector<std::string>{"app", "proxy"}));
  EXPECT_EQ(containers[0]["image"], "app:2");
  EXPECT_EQ(containers[0]["env"], json::parse(R"([{"name":"X","value":"1"},{"name":"Y","value":"3"}])"));
  EXPECT_EQ(containers[0]["args"], json({"--a", "--b"}));  // untouched
  EXPECT_EQ(containers[1]["image"], "proxy:1");
}

TEST_F(KubeStrategicMergeTest, ListsWithoutAMergeStrategyAreReplaced) {
  json out = patch(pod_spec({{"containers", {{{"name", "app"}, {"args", {"--c"}}}}},
                             {"tolerations", {{{"key", "other"}, {"operator", "Exists"}}}}}));
  EXPECT_EQ(out["spec"]["template"]["spec"]["containers"][0]["args"], json({"--c"}));
  EXPECT_EQ(names(out["spec"]["template"]["spec"]["tolerations"], "key"), std::vector<std::string>{"other"});
}

TEST_F(KubeStrategicMergeTest, PatchDeleteRemovesAListElementAndAMap) {
  json out = patch(pod_spec({{"containers", {{{"name", "proxy"}, {"$patch", "delete"}}}}}));
  EXPECT_EQ(names(out["spec"]["template"]["spec"]["containers"]), std::vector<std::string>{"app"});
  out = patch({{"spec", {{"strategy", {{"$patch", "delete"}}}}}});
  EXPECT_FALSE(out["spec"].contains("strategy"));
}

TEST_F(KubeStrategicMergeTest, PatchReplaceReplacesAMapOrAList) {
  json out =
      patch({{"spec", {{"template", {{"metadata", {{"labels", {{"$patch", "replace"}, {"app", "e"}}}}}}}}}});
  EXPECT_EQ(out["spec"]["template"]["metadata"]["labels"], json({{"app", "e"}}));
  out = patch(pod_spec({{"containers", {{{"$patch", "replace"}}, {{"name", "only"}, {"image", "only:1"}}}}}));
  EXPECT_EQ(names(out["spec"]["template"]["spec"]["containers"]), std::vector<std::string>{"only"});
}

TEST_F(KubeStrategicMergeTest, NullDeletesAKeyAndRetainKeysKeepsOnlyTheListed) {
  json out = patch(
      {{"spec", {{"strategy", {{"$retainKeys", {"type"}}, {"type", "Recreate"}}}, {"replicas", nullptr}}}});
  EXPECT_EQ(out["spec"]["strategy"], json({{"type", "Recreate"}}));
  EXPECT_FALSE(out["spec"].contains("replicas"));
}

TEST_F(KubeStrategicMergeTest, SetElementOrderOrdersTheMergedList) {
  json out = patch(pod_spec({{"$setElementOrder/containers", {{{"name", "proxy"}}, {{"name", "app"}}}},
                             {"containers", {{{"name", "proxy"}, {"image", "proxy:2"}}}}}));
  EXPECT_EQ(names(out["spec"]["template"]["spec"]["containers"]), (std::vector<std::string>{"proxy", "app"}));
  EXPECT_FALSE(out["spec"]["template"]["spec"].contains("$setElementOrder/containers"));
}

TEST_F(KubeStrategicMergeTest, FinalizersMergeAsASetAndDeleteFromPrimitiveList) {
  json out = patch({{"metadata", {{"finalizers", {"b", "c"}}}}});
  EXPECT_EQ(out["metadata"]["finalizers"], json({"a", "b", "c"}));
  out = patch({{"metadata", {{"$deleteFromPrimitiveList/finalizers", {"a"}}}}});
  EXPECT_EQ(out["metadata"]["finalizers"], json({"b", "c"}));
}

TEST_F(KubeStrategicMergeTest, AnElementWithoutItsMergeKeyIsABadRequest) {
  json out = patch(pod_spec({{"containers", {{{"image", "x"}}}}}), 400);
  EXPECT_EQ(out["reason"], "BadRequest");
  EXPECT_NE(out["message"].get<std::string>().find("does not contain declared merge key: name"),
            std::string::npos);
}

TEST_F(KubeStrategicMergeTest, ServicePortsMergeByPort) {
  json svc = {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", {{"name", "s"}}},
      {"spec", {{"ports", {{{"name", "http"}, {"port", 80}}, {{"name", "metrics"}, {"port", 9090}}}}}}};
  ASSERT_EQ(call(api, "POST", "/api/v1/namespaces/default/services", svc).status, 201);
  auto out = call(api, "PATCH", "/api/v1/namespaces/default/services/s",
                  {{"spec", {{"ports", {{{"port", 9090}, {"name", "prom"}}}}}}},
                  {{"Content-Type", "application/strategic-merge-patch+json"}});
  ASSERT_EQ(out.status, 200);
  EXPECT_EQ(names(out.body["spec"]["ports"]), (std::vector<std::string>{"http", "prom"}));
}

}  // namespace
}  // namespace eslease::kubeemu
