#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_test_support.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using testing::lease_crd;

const json kLeaseGvk = {{"group", "eslease.io"}, {"kind", "Lease"}, {"version", "v1alpha1"}};

TEST(OpenApiV3, PublishesLeaseSchemaByGroupVersionKind) {
  const json document = openapi_v3_for_group_version("eslease.io", "v1alpha1", {lease_crd()});
  EXPECT_EQ(document["openapi"], "3.0.0");
  const json& lease = document["components"]["schemas"]["io.eslease.v1alpha1.Lease"];
  EXPECT_EQ(lease["x-kubernetes-group-version-kind"], json::array({kLeaseGvk}));
  EXPECT_EQ(lease["properties"]["spec"],
            lease_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]);
  EXPECT_EQ(lease["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  const json& list = document["components"]["schemas"]["io.eslease.v1alpha1.LeaseList"];
  EXPECT_EQ(list["properties"]["items"]["items"]["$ref"], "#/components/schemas/io.eslease.v1alpha1.Lease");
  EXPECT_EQ(list["x-kubernetes-group-version-kind"][0]["kind"], "LeaseList");
}

TEST(OpenApiV3, PatchOperationAdvertisesFieldValidationForTheGvk) {
  const json document = openapi_v3_for_group_version("eslease.io", "v1alpha1", {lease_crd()});
  for (const char* path : {"/apis/eslease.io/v1alpha1/namespaces/{namespace}/leases/{name}",
                           "/apis/eslease.io/v1alpha1/namespaces/{namespace}/leases/{name}/status"}) {
    ASSERT_TRUE(document["paths"].contains(path)) << path;
    const json& patch = document["paths"][path]["patch"];
    EXPECT_EQ(patch["x-kubernetes-group-version-kind"], kLeaseGvk);
    bool field_validation = false;
    for (const auto& parameter : patch["parameters"]) {
      field_validation |= parameter["name"] == "fieldValidation" && parameter["in"] == "query";
    }
    EXPECT_TRUE(field_validation) << path;
  }
  EXPECT_TRUE(document["paths"].contains("/apis/eslease.io/v1alpha1/leases"));
  EXPECT_TRUE(document["paths"].contains("/apis/eslease.io/v1alpha1/namespaces/{namespace}/leases"));
}

TEST(OpenApiV3, EveryReferenceResolves) {
  const json document = openapi_v3_for_group_version("eslease.io", "v1alpha1", {lease_crd()});
  const std::string prefix = "#/components/schemas/";
  int references = 0;
  std::function<void(const json&)> visit = [&](const json& node) {
    if (node.is_object()) {
      if (auto it = node.find("$ref"); it != node.end() && it->is_string()) {
        const std::string ref = *it;
        ASSERT_EQ(ref.rfind(prefix, 0), 0u) << ref;
        EXPECT_TRUE(document["components"]["schemas"].contains(ref.substr(prefix.size()))) << ref;
        ++references;
      }
      for (const auto& [key, child] : node.items()) visit(child);
    } else if (node.is_array()) {
      for (const auto& child : node) visit(child);
    }
  };
  visit(document);
  EXPECT_GT(references, 10);
}

TEST(OpenApiV3, OtherGroupVersionsAndUnservedVersionsHaveNoPaths) {
  EXPECT_TRUE(openapi_v3_for_group_version("example.com", "v1", {lease_crd()})["paths"].empty());
  json unserved = lease_crd();
  unserved["spec"]["versions"][0]["served"] = false;
  EXPECT_TRUE(openapi_v3_for_group_version("eslease.io", "v1alpha1", {unserved})["paths"].empty());
}

}  // namespace
}  // namespace eslease::kubeemu::schema
