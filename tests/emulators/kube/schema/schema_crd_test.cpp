#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_test_support.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Field;
using testing::lease_crd;

auto IsCause(const std::string& type, const std::string& field, const std::string& message) {
  return ::testing::AllOf(Field(&Cause::type, type), Field(&Cause::field, field),
                          Field(&Cause::message, message));
}

TEST(CrdValidation, ProjectCrdIsValidAndStructural) {
  EXPECT_THAT(validate_crd(lease_crd()), ElementsAre());
}

TEST(CrdValidation, NameMustBePluralDotGroup) {
  json crd = lease_crd();
  crd["metadata"]["name"] = "leases.example.com";
  EXPECT_THAT(validate_crd(crd), ElementsAre(IsCause("FieldValueInvalid", "metadata.name",
                                                     R"(Invalid value: "leases.example.com": must be )"
                                                     R"(spec.names.plural+"."+spec.group)")));
}

TEST(CrdValidation, GroupScopeAndNames) {
  json crd = lease_crd();
  crd["spec"]["group"] = "eslease";
  crd["metadata"]["name"] = "leases.eslease";
  crd["spec"]["scope"] = "Global";
  crd["spec"]["names"]["listKind"] = "Lease";
  EXPECT_THAT(
      validate_crd(crd),
      ElementsAre(IsCause("FieldValueInvalid", "spec.group",
                          R"(Invalid value: "eslease": should be a domain with at least one dot)"),
                  IsCause("FieldValueInvalid", "spec.names.listKind",
                          R"(Invalid value: "Lease": kind and listKind may not be the same)"),
                  IsCause("FieldValueNotSupported", "spec.scope",
                          R"(Unsupported value: "Global": supported values: "Cluster", "Namespaced")")));
}

TEST(CrdValidation, ExactlyOneStorageVersionAndSchemasRequired) {
  json crd = lease_crd();
  crd["spec"]["versions"][0]["storage"] = false;
  crd["spec"]["versions"][0].erase("schema");
  const auto causes = validate_crd(crd);
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_THAT(causes[0], IsCause("FieldValueRequired", "spec.versions[0].schema.openAPIV3Schema",
                                 "Required value: schemas are required"));
  EXPECT_EQ(causes[1].field, "spec.versions");
  EXPECT_THAT(causes[1].message,
              ::testing::EndsWith(": must have exactly one version marked as storage version"));
  crd["spec"]["versions"] = json::array();
  EXPECT_THAT(validate_crd(crd), ElementsAre(Field(&Cause::field, "spec.versions")));
}

TEST(CrdValidation, SchemaMustBeStructural) {
  json crd = lease_crd();
  auto& spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
  spec_schema["properties"]["lockName"].erase("type");
  spec_schema["properties"]["holder"]["oneOf"][0]["type"] = "object";
  spec_schema["properties"]["tags"] =
      json::parse(R"({"type": "array", "uniqueItems": true, "items": {"type": "string"}})");
  const std::string root = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
  const auto causes = validate_crd(crd);
  EXPECT_THAT(causes, Contains(IsCause("FieldValueRequired", root + ".properties[lockName].type",
                                       "Required value: must not be empty for specified object fields")));
  EXPECT_THAT(causes, Contains(IsCause("FieldValueForbidden", root + ".properties[holder].oneOf[0].type",
                                       "Forbidden: must be empty to be structural")));
  EXPECT_THAT(causes,
              Contains(IsCause("FieldValueForbidden", root + ".properties[tags].uniqueItems",
                               "Forbidden: uniqueItems cannot be set to true since the runtime complexity "
                               "becomes quadratic")));
  EXPECT_EQ(causes.size(), 3u);
}

TEST(CrdValidation, DefaultsMustValidateAgainstTheirSchema) {
  json crd = lease_crd();
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["priority"]
     ["default"] = "Urgent";
  EXPECT_THAT(validate_crd(crd),
              ElementsAre(IsCause(
                  "FieldValueNotSupported",
                  "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[priority].default",
                  R"(Unsupported value: "Urgent": supported values: "Foreground", "Background")")));
}

TEST(CrdValidation, SetItemsMustBeAtomic) {
  json crd = lease_crd();
  auto& properties =
      crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
  EXPECT_EQ(properties["lockNames"]["x-kubernetes-list-type"], "set");
  properties["pairs"] = json::parse(R"({"type": "array", "x-kubernetes-list-type": "set",
      "items": {"type": "object", "properties": {"a": {"type": "string"}}}})");
  properties["lists"] = json::parse(R"({"type": "array", "x-kubernetes-list-type": "set",
      "items": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}})");
  properties["atomic"] = json::parse(R"({"type": "array", "x-kubernetes-list-type": "set",
      "items": {"type": "object", "x-kubernetes-map-type": "atomic"}})");
  const std::string root = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
  EXPECT_THAT(
      validate_crd(crd),
      ElementsAre(IsCause("FieldValueInvalid", root + ".properties[lists].items.x-kubernetes-list-type",
                          R"(Invalid value: "set": must be atomic as item of a list with )"
                          "x-kubernetes-list-type=set"),
                  IsCause("FieldValueInvalid", root + ".properties[pairs].items.x-kubernetes-map-type",
                          R"(Invalid value: "null": must be atomic as item of a list with )"
                          "x-kubernetes-list-type=set")));
}

TEST(CrdValidation, ListMapNeedsKeysAndNotAnObject) {
  json crd = lease_crd();
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["conditions"]
      .erase("x-kubernetes-list-map-keys");
  EXPECT_THAT(
      validate_crd(crd),
      ElementsAre(IsCause("FieldValueRequired",
                          "spec.versions[0].schema.openAPIV3Schema.properties[status].properties[conditions]"
                          ".x-kubernetes-list-map-keys",
                          "Required value: must not be empty if x-kubernetes-list-type is map")));
  EXPECT_THAT(validate_crd(json::array()), ElementsAre(Field(&Cause::type, "FieldValueInvalid")));
}

}  // namespace
}  // namespace eslease::kubeemu::schema
