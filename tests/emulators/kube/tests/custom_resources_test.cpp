// Custom resources and CRDs in the kube-emulator handler: generation, the status
// subresource, schema validation and pruning, CRD registration, printer columns.
#include <gtest/gtest.h>

#include "emulators/kube/tests/api_test_support.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;
using KubeCustomResourceTest = testing::ApiServerTest;

const std::string kWidgets = "/apis/example.io/v1/namespaces/default/widgets";

TEST_F(KubeCustomResourceTest, CustomResourceGenerationFollowsSpecOnly) {
  install_widgets();
  auto created = call(api, "POST", kWidgets, testing::widget("w", 1));
  ASSERT_EQ(created.status, 201) << created.body.dump();
  EXPECT_EQ(created.body["metadata"]["generation"], 1);
  EXPECT_EQ(created.body["spec"]["color"], "red") << "schema default applied";

  json labelled = created.body;
  labelled["metadata"]["labels"] = {{"team", "a"}};
  auto after_label = call(api, "PUT", kWidgets + "/w", labelled);
  ASSERT_EQ(after_label.status, 200);
  EXPECT_EQ(after_label.body["metadata"]["generation"], 1);

  json resized = after_label.body;
  resized["spec"]["size"] = 2;
  auto after_spec = call(api, "PUT", kWidgets + "/w", resized);
  EXPECT_EQ(after_spec.body["metadata"]["generation"], 2);

  json status = after_spec.body;
  status["status"] = {{"phase", "Ready"}};
  auto after_status = call(api, "PUT", kWidgets + "/w/status", status);
  ASSERT_EQ(after_status.status, 200) << after_status.body.dump();
  EXPECT_EQ(after_status.body["metadata"]["generation"], 2);
  EXPECT_EQ(after_status.body["status"]["phase"], "Ready");
}

TEST_F(KubeCustomResourceTest, StatusSubresourceSeparatesSpecAndStatus) {
  install_widgets();
  json object = testing::widget("w", 1);
  object["status"] = {{"phase", "Ignored"}};
  auto created = call(api, "POST", kWidgets, object);
  EXPECT_FALSE(created.body.contains("status")) << "create drops status when the subresource exists";

  json main = created.body;
  main["status"] = {{"phase", "FromMain"}};
  main["spec"]["size"] = 5;
  auto updated = call(api, "PUT", kWidgets + "/w", main);
  EXPECT_EQ(updated.body["spec"]["size"], 5);
  EXPECT_FALSE(updated.body.contains("status"));

  json status = updated.body;
  status["status"] = {{"phase", "Ready"}};
  status["spec"]["size"] = 9;
  status["metadata"]["labels"] = {{"ignored", "yes"}};
  auto after = call(api, "PUT", kWidgets + "/w/status", status);
  EXPECT_EQ(after.body["status"]["phase"], "Ready");
  EXPECT_EQ(after.body["spec"]["size"], 5);
  EXPECT_FALSE(after.body["metadata"].contains("labels"));

  auto patched = call(api, "PATCH", kWidgets + "/w/status", {{"status", {{"phase", "Done"}}}},
                      {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_EQ(patched.status, 200);
  EXPECT_EQ(patched.body["status"]["phase"], "Done");
}

TEST_F(KubeCustomResourceTest, SchemaViolationIsInvalidWithCauses) {
  install_widgets();
  json object = testing::widget("w", -1);
  object["spec"]["color"] = "green";
  auto reply = call(api, "POST", kWidgets, object);
  EXPECT_EQ(reply.status, 422) << reply.body.dump();
  EXPECT_EQ(reply.body["reason"], "Invalid");
  EXPECT_EQ(reply.body["details"]["kind"], "Widget");
  EXPECT_EQ(reply.body["details"]["group"], "example.io");
  EXPECT_EQ(reply.body["details"]["causes"].size(), 2u);
}

TEST_F(KubeCustomResourceTest, UnknownFieldsArePrunedWithWarningOrRejectedWhenStrict) {
  install_widgets();
  json object = testing::widget("w", 1);
  object["spec"]["extra"] = true;
  auto strict = call(api, "POST", kWidgets + "?fieldValidation=Strict", object);
  EXPECT_EQ(strict.status, 400);
  EXPECT_NE(
      strict.body["message"].get<std::string>().find("strict decoding error: unknown field \"spec.extra\""),
      std::string::npos);
  auto warned = call(api, "POST", kWidgets, object);
  EXPECT_EQ(warned.status, 201);
  EXPECT_FALSE(warned.body["spec"].contains("extra"));
  EXPECT_EQ(warned.response->header("Warning").value_or(""), "299 - \"unknown field \\\"spec.extra\\\"\"");
}

TEST_F(KubeCustomResourceTest, StrategicMergePatchOnCustomResourceIsUnsupportedMediaType) {
  install_widgets();
  call(api, "POST", kWidgets, testing::widget("w"));
  auto reply = call(api, "PATCH", kWidgets + "/w", {{"spec", {{"size", 3}}}},
                    {{"Content-Type", "application/strategic-merge-patch+json"}});
  EXPECT_EQ(reply.status, 415);
  EXPECT_EQ(reply.body["reason"], "UnsupportedMediaType");
}

TEST_F(KubeCustomResourceTest, CrdRegistersResourceAndDeletionRemovesIt) {
  install_widgets();
  auto crd = call(api, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io");
  ASSERT_EQ(crd.status, 200);
  bool established = false;
  for (const auto& c : crd.body["status"]["conditions"])
    established |= c["type"] == "Established" && c["status"] == "True";
  EXPECT_TRUE(established);
  auto resources = call(api, "GET", "/apis/example.io/v1");
  ASSERT_EQ(resources.status, 200);
  EXPECT_EQ(resources.body["resources"][0]["name"], "widgets");
  EXPECT_EQ(resources.body["resources"][1]["name"], "widgets/status");
  auto groups = call(api, "GET", "/apis");
  EXPECT_NE(groups.body.dump().find("\"example.io\""), std::string::npos);

  ASSERT_EQ(call(api, "POST", kWidgets, testing::widget("w")).status, 201);
  EXPECT_EQ(call(api, "GET", kWidgets).body["items"].size(), 1u);
  auto deleted =
      call(api, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io");
  EXPECT_EQ(deleted.status, 200);
  EXPECT_EQ(call(api, "GET", kWidgets).status, 404);
  EXPECT_EQ(call(api, "GET", "/apis/example.io/v1").status, 404);
  install_widgets();
  EXPECT_EQ(call(api, "GET", kWidgets).body["items"].size(), 0u) << "objects went with their CRD";
}

TEST_F(KubeCustomResourceTest, InvalidCrdIsRejected) {
  json crd = testing::widget_crd();
  crd["metadata"]["name"] = "wrong.example.io";
  auto reply = call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.body["details"]["kind"], "CustomResourceDefinition");
}

TEST_F(KubeCustomResourceTest, TableForCustomResourcesUsesPrinterColumns) {
  install_widgets();
  call(api, "POST", kWidgets, testing::widget("w", 7));
  auto table = call(api, "GET", kWidgets, nullptr,
                    {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_EQ(table.status, 200);
  EXPECT_EQ(table.body["kind"], "Table");
  EXPECT_EQ(table.body["columnDefinitions"][0]["name"], "Name");
  EXPECT_EQ(table.body["columnDefinitions"][1]["name"], "Size");
  EXPECT_EQ(table.body["rows"][0]["cells"][0], "w");
  EXPECT_EQ(table.body["rows"][0]["cells"][1], 7);
  EXPECT_EQ(table.body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

// A string column shows a list as jsonpath prints it with fmt.Fprint ([a b]); a set rejects
// a repeated value with upstream's message.
TEST_F(KubeCustomResourceTest, StringColumnPrintsAListAsGoDoesAndASetRefusesDuplicates) {
  json crd = testing::widget_crd();
  auto& version = crd["spec"]["versions"][0];
  version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"] =
      json::parse(R"({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}})");
  version["additionalPrinterColumns"].push_back(
      {{"name", "Tags"}, {"type", "string"}, {"jsonPath", ".spec.tags"}});
  auto installed = call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  ASSERT_EQ(installed.status, 201) << installed.body.dump();

  json tagged = testing::widget("w", 7);
  tagged["spec"]["tags"] = {"a", "b", "a"};
  auto refused = call(api, "POST", kWidgets, tagged);
  EXPECT_EQ(refused.status, 422);
  EXPECT_EQ(refused.body["message"],
            R"(Widget.example.io "w" is invalid: spec.tags[2]: Duplicate value: "a")");
  tagged["spec"]["tags"] = {"a", "b"};
  ASSERT_EQ(call(api, "POST", kWidgets, tagged).status, 201);
  auto table = call(api, "GET", kWidgets, nullptr,
                    {{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}});
  ASSERT_EQ(table.status, 200);
  EXPECT_EQ(table.body["columnDefinitions"][3]["name"], "Tags");
  EXPECT_EQ(table.body["rows"][0]["cells"][3], "[a b]");
}

}  // namespace
}  // namespace eslease::kubeemu
