// Server-side apply and managedFields, as kube-apiserver serves them
// (https://kubernetes.io/docs/reference/using-api/server-side-apply/): field ownership,
// conflicts and force, removal of fields an applier stops applying, lists merged by key,
// apply creating objects, CRDs and custom resources; and the managedFields every other write
// records.
#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using testing::call_raw;

const std::string kDeployments = "/apis/apps/v1/namespaces/default/deployments";
const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

json deployment(int replicas, json containers = json::array({{{"name", "app"}, {"image", "app:1"}}})) {
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "d"}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", {{"app", "d"}}}}},
        {"template", {{"metadata", {{"labels", {{"app", "d"}}}}}, {"spec", {{"containers", containers}}}}}}}};
}

json config_map(const json& data, const json& labels = json::object()) {
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}, {"data", data}};
  if (!labels.empty()) cm["metadata"]["labels"] = labels;
  return cm;
}

class KubeApplyTest : public ::testing::Test {
 protected:
  testing::Reply apply(const std::string& url, const json& config, const std::string& manager,
                       bool force = false) {
    std::string target = url + (manager.empty() ? "" : "?fieldManager=" + manager);
    if (force) target += "&force=true";
    return call_raw(api, "PATCH", target, config.dump(), {{"Content-Type", "application/apply-patch+yaml"}});
  }
  // The managers that own `field` (FieldsV1 keys, e.g. {"f:spec", "f:replicas"}).
  static std::vector<std::string> owners(const json& object, const std::vector<std::string>& field) {
    std::vector<std::string> out;
    for (const auto& entry : object["metadata"].value("managedFields", json::array())) {
      const json* node = &entry["fieldsV1"];
      for (const auto& f : field) node = node->contains(f) ? &(*node)[f] : nullptr;
      if (node)
        out.push_back(entry["manager"].get<std::string>() + "/" + entry["operation"].get<std::string>());
      if (!node) continue;
    }
    return out;
  }
  ApiServer api{ApiServerOptions{}};
};

TEST_F(KubeApplyTest, ApplyCreatesTheObjectAndRecordsTheAppliersFields) {
  auto created = apply(kDeployments + "/d", deployment(2), "helm");
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["spec"]["replicas"], 2);
  ASSERT_EQ(created.body["metadata"]["managedFields"].size(), 1u);
  const json& entry = created.body["metadata"]["managedFields"][0];
  EXPECT_EQ(entry["manager"], "helm");
  EXPECT_EQ(entry["operation"], "Apply");
  EXPECT_EQ(entry["apiVersion"], "apps/v1");
  EXPECT_EQ(entry["fieldsType"], "FieldsV1");
  EXPECT_EQ(entry["fieldsV1"]["f:spec"]["f:replicas"], json::object());
  // A list merged by key: the element is owned with ".", and its fields under it.
  const json& container =
      entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"];
  EXPECT_EQ(container["."], json::object());
  EXPECT_EQ(container["f:image"], json::object());
  EXPECT_FALSE(entry["fieldsV1"].contains("f:apiVersion"));
  const json& fields = entry["fieldsV1"];
  EXPECT_FALSE(fields.contains("f:metadata") && fields.at("f:metadata").contains("f:name"))
      << "the name identifies the object; nobody owns it";
  EXPECT_EQ(call(api, "GET", kDeployments + "/d").body, created.body);
}

TEST_F(KubeApplyTest, ApplyNeedsAFieldManager) {
  auto reply = apply(kDeployments + "/d", deployment(2), "");
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.body["reason"], "Invalid");
  EXPECT_EQ(
      reply.body["message"],
      "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch");
}

TEST_F(KubeApplyTest, AnotherManagersValueConflictsUntilForced) {
  ASSERT_EQ(apply(kDeployments + "/d", deployment(2), "helm").status, 201);
  auto refused = apply(kDeployments + "/d", deployment(3), "ops");
  ASSERT_EQ(refused.status, 409) << refused.body.dump();
  EXPECT_EQ(refused.body["reason"], "Conflict");
  EXPECT_EQ(refused.body["message"], "Apply failed with 1 conflict: conflict with \"helm\": .spec.replicas");
  EXPECT_EQ(refused.body["details"]["causes"], json::array({{{"reason", "FieldManagerConflict"},
                                                             {"message", "conflict with \"helm\""},
                                                             {"field", ".spec.replicas"}}}));
  EXPECT_EQ(call(api, "GET", kDeployments + "/d").body["spec"]["replicas"], 2);

  auto forced = apply(kDeployments + "/d", deployment(3), "ops", true);
  ASSERT_EQ(forced.status, 200) << forced.body.dump();
  EXPECT_EQ(forced.body["spec"]["replicas"], 3);
  // The forced field moved to the new applier; the fields both apply with one value are shared.
  EXPECT_EQ(owners(forced.body, {"f:spec", "f:replicas"}), std::vector<std::string>{"ops/Apply"});
  EXPECT_EQ(owners(forced.body, {"f:spec", "f:selector"}),
            (std::vector<std::string>{"helm/Apply", "ops/Apply"}));
}

TEST_F(KubeApplyTest, SeveralConflictsAreListedByManager) {
  ASSERT_EQ(apply(kConfigMaps + "/c", config_map({{"a", "1"}, {"b", "1"}}), "one").status, 201);
  auto refused = apply(kConfigMaps + "/c", config_map({{"a", "2"}, {"b", "2"}}), "two");
  ASSERT_EQ(refused.status, 409);
  EXPECT_EQ(refused.body["message"],
            "Apply failed with 2 conflicts: conflicts with \"one\":\n- .data.a\n- .data.b");
}

TEST_F(KubeApplyTest, AnUpdateByAnotherWriterIsOwnedByItAndConflictsWithTheApplier) {
  ASSERT_EQ(apply(kDeployments + "/d", deployment(2), "helm").status, 201);
  auto edited = call(api, "PATCH", kDeployments + "/d?fieldManager=kubectl-edit",
                     {{"spec", {{"replicas", 5}}}}, {{"Content-Type", "application/merge-patch+json"}});
  ASSERT_EQ(edited.status, 200);
  EXPECT_EQ(owners(edited.body, {"f:spec", "f:replicas"}), std::vector<std::string>{"kubectl-edit/Update"});
  auto refused = apply(kDeployments + "/d", deployment(2), "helm");
  ASSERT_EQ(refused.status, 409);
  EXPECT_EQ(refused.body["details"]["causes"][0]["message"].get<std::string>().rfind(
                "conflict with \"kubectl-edit\" using apps/v1 at ", 0),
            0u)
      << refused.body.dump();
}

TEST_F(KubeApplyTest, FieldsTheApplierLeavesOutAreRemovedUnlessSomeoneElseOwnsThem) {
  ASSERT_EQ(apply(kConfigMaps + "/c", config_map({{"a", "1"}, {"b", "1"}, {"c", "1"}}), "one").status, 201);
  ASSERT_EQ(apply(kConfigMaps + "/c", config_map({{"c", "1"}}), "two").status, 200);
  auto reapplied = apply(kConfigMaps + "/c", config_map({{"a", "1"}}), "one");
  ASSERT_EQ(reapplied.status, 200);
  EXPECT_EQ(reapplied.body["data"], json({{"a", "1"}, {"c", "1"}}));  // b went; c is still two's
}

TEST_F(KubeApplyTest, ListsMergeByKeyBetweenAppliers) {
  ASSERT_EQ(apply(kDeployments + "/d", deployment(1), "helm").status, 201);
  json sidecar = json::parse(R"({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
      "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "proxy:1"}]}}}})");
  auto merged = apply(kDeployments + "/d", sidecar, "mesh");
  ASSERT_EQ(merged.status, 200) << merged.body.dump();
  const json& containers = merged.body["spec"]["template"]["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["name"], "app");
  EXPECT_EQ(containers[1]["name"], "proxy");
  // Dropping its container from a later apply removes only that element.
  auto upgraded =
      apply(kDeployments + "/d", deployment(1, json::array({{{"name", "web"}, {"image", "web:1"}}})), "helm");
  ASSERT_EQ(upgraded.status, 200);
  std::vector<std::string> names;
  for (const auto& c : upgraded.body["spec"]["template"]["spec"]["containers"]) names.push_back(c["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"proxy", "web"}));
}

TEST_F(KubeApplyTest, AnElementLeftOutGoesWholeWhateverItsFields) {
  json with_mounts = deployment(1);
  json& app = with_mounts["spec"]["template"]["spec"]["containers"][0];
  app["volumeMounts"] = json::parse(R"([{"name": "tmp", "mountPath": "/tmp"},
                                        {"name": "auth", "mountPath": "/etc/auth", "readOnly": true}])");
  ASSERT_EQ(apply(kDeployments + "/d", with_mounts, "helm").status, 201);
  json fewer = with_mounts;
  fewer["spec"]["template"]["spec"]["containers"][0]["volumeMounts"].erase(1);
  auto applied = apply(kDeployments + "/d", fewer, "helm");
  ASSERT_EQ(applied.status, 200);
  EXPECT_EQ(applied.body["spec"]["template"]["spec"]["containers"][0]["volumeMounts"],
            json::parse(R"([{"name": "tmp", "mountPath": "/tmp"}])"));
}

TEST_F(KubeApplyTest, ReapplyingTheSameConfigurationWritesNothing) {
  auto first = apply(kDeployments + "/d", deployment(2), "helm");
  auto again = apply(kDeployments + "/d", deployment(2), "helm");
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.body["metadata"]["resourceVersion"], first.body["metadata"]["resourceVersion"]);
}

TEST_F(KubeApplyTest, BadApplyBodiesAreRefused) {
  json wrong_name = deployment(1);
  wrong_name["metadata"]["name"] = "other";
  EXPECT_EQ(apply(kDeployments + "/d", wrong_name, "m").status, 400);
  json with_fields = deployment(1);
  with_fields["metadata"]["managedFields"] = json::array({json::object()});
  auto refused = apply(kDeployments + "/d", with_fields, "m");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.body["message"], "metadata.managedFields must be nil");
  json no_kind = deployment(1);
  no_kind.erase("kind");
  EXPECT_EQ(apply(kDeployments + "/d", no_kind, "m").status, 400);
  auto not_yaml = call_raw(api, "PATCH", kDeployments + "/d?fieldManager=m", "a: [",
                           {{"Content-Type", "application/apply-patch+yaml"}});
  EXPECT_EQ(not_yaml.status, 400);
  auto forced_merge = call(api, "PATCH", kDeployments + "/d?force=true", json::object(),
                           {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(forced_merge.status, 422);
  EXPECT_EQ(
      forced_merge.body["message"],
      "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch");
}

TEST_F(KubeApplyTest, ApplyOfACrdAndOfItsCustomResources) {
  json crd = testing::widget_crd();
  auto created =
      apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io", crd, "helm");
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["status"]["conditions"][1]["type"], "Established");
  auto widget = apply("/apis/example.io/v1/namespaces/default/widgets/w", testing::widget("w", 2), "helm");
  ASSERT_EQ(widget.status, 201) << widget.body.dump();
  EXPECT_EQ(widget.body["spec"]["color"], "red");  // defaulted from the schema
  auto invalid = apply("/apis/example.io/v1/namespaces/default/widgets/w", testing::widget("w", -1), "helm");
  EXPECT_EQ(invalid.status, 422);
  auto reapplied =
      apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io", crd, "helm");
  EXPECT_EQ(reapplied.status, 200);
  EXPECT_EQ(reapplied.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
}

TEST_F(KubeApplyTest, EveryWriteRecordsItsManager) {
  auto created = call(api, "POST", kConfigMaps, config_map({{"a", "1"}}),
                      {{"User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc"}});
  ASSERT_EQ(created.status, 201);
  EXPECT_EQ(owners(created.body, {"f:data", "f:a"}), std::vector<std::string>{"kubectl/Update"});
  auto updated = call(api, "PUT", kConfigMaps + "/c?fieldManager=tool", config_map({{"a", "1"}, {"b", "2"}}));
  ASSERT_EQ(updated.status, 200);
  EXPECT_EQ(owners(updated.body, {"f:data", "f:a"}), std::vector<std::string>{"kubectl/Update"});
  EXPECT_EQ(owners(updated.body, {"f:data", "f:b"}), std::vector<std::string>{"tool/Update"});
  // managedFields: [{}] clears them, as the API documents.
  json cleared = updated.body;
  cleared["metadata"]["managedFields"] = json::array({json::object()});
  auto reset = call(api, "PUT", kConfigMaps + "/c", cleared);
  ASSERT_EQ(reset.status, 200);
  EXPECT_FALSE(reset.body["metadata"].contains("managedFields")) << reset.body.dump();
}

}  // namespace
}  // namespace eslease::kubeemu
