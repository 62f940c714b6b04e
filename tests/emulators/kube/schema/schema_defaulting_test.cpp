#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_test_support.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using testing::claim_lease;
using ::testing::ElementsAre;
using testing::lease_schema;

TEST(LeaseDefaulting, FillsPriorityDurationAndGrace) {
  json lease = claim_lease();
  apply_defaults(lease_schema(), lease);
  EXPECT_EQ(lease["spec"]["priority"], "Foreground");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 16);
  EXPECT_EQ(lease["spec"]["livenessGraceSeconds"], 10);
  EXPECT_FALSE(lease["spec"].contains("acquireTimeoutSeconds"));
  EXPECT_FALSE(lease.contains("status")) << "defaults never create absent objects";
}

TEST(LeaseDefaulting, KeepsExplicitValuesAndReplacesNonNullableNull) {
  json lease = claim_lease();
  lease["spec"]["priority"] = "Background";
  lease["spec"]["leaseDurationSeconds"] = nullptr;
  lease["spec"]["acquireTimeoutSeconds"] = nullptr;
  apply_defaults(lease_schema(), lease);
  EXPECT_EQ(lease["spec"]["priority"], "Background");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 16);
  EXPECT_FALSE(lease["spec"].contains("acquireTimeoutSeconds")) << "a null without default is dropped";
}

TEST(SchemaDefaulting, DefaultsInsideArrayItemsAndDefaultedObjects) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "ports": {"type": "array", "items": {"type": "object", "properties": {
          "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
      "tuning": {"type": "object", "default": {}, "properties": {"level": {"type": "integer", "default": 3}}},
      "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}},
      "maybe": {"type": "string", "nullable": true, "default": "d"}}})");
  json object = json::parse(R"({"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
                                "labels": {"a": null}, "maybe": null})");
  apply_defaults(schema, object);
  EXPECT_EQ(object,
            json::parse(R"({"ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
                                    "tuning": {"level": 3}, "labels": {"a": "x"}, "maybe": null})"));
}

TEST(LeasePruning, DropsUnknownFieldsAndReportsPaths) {
  json lease = claim_lease();
  lease["spec"]["colour"] = "blue";
  lease["spec"]["holder"]["podName2"] = "x";
  lease["status"] = {{"phase", "Held"}, {"holder", {{"podName", "p"}, {"extra", 1}}}};
  lease["extra"] = true;
  lease["metadata"]["labels"] = {{"a", "b"}};
  EXPECT_THAT(prune_unknown(lease_schema(), lease),
              ElementsAre("extra", "spec.colour", "spec.holder.podName2", "status.holder.extra"));
  EXPECT_EQ(lease["apiVersion"], "eslease.io/v1alpha1");
  EXPECT_EQ(lease["kind"], "Lease");
  EXPECT_EQ(lease["metadata"]["labels"]["a"], "b") << "metadata is not pruned by the schema";
  EXPECT_FALSE(lease["spec"].contains("colour"));
  EXPECT_EQ(lease["status"]["holder"], json({{"podName", "p"}}));
}

TEST(SchemaPruning, PreserveUnknownFieldsEmbeddedResourcesAndItems) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
               "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
      "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                   "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
      "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}}})");
  json object = json::parse(R"({
      "free": {"anything": {"goes": 1}, "known": {"a": "1", "b": 2}},
      "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": "1", "y": 2}, "z": 3},
      "list": [{"a": "1", "b": 2}]})");
  EXPECT_THAT(prune_unknown(schema, object),
              ElementsAre("free.known.b", "list[0].b", "template.spec.y", "template.z"));
  EXPECT_EQ(object["free"]["anything"], json({{"goes", 1}}));
  EXPECT_EQ(object["template"]["metadata"], json({{"name", "p"}}));
  EXPECT_EQ(object["template"]["kind"], "Pod");
}

TEST(YamlConversion, ResolvesPlainScalarsLikeKubectl) {
  auto converted =
      yaml_to_json("a: 30\nb: '30'\nc: true\nd: yes\ne: ~\nf: 1.5\ng: 0x1F\nh: [x, 2]\ni: \"true\"\n");
  ASSERT_TRUE(converted);
  EXPECT_EQ(*converted,
            json::parse(R"({"a": 30, "b": "30", "c": true, "d": true, "e": null, "f": 1.5, "g": 31,
                                        "h": ["x", 2], "i": "true"})"));
  EXPECT_FALSE(yaml_to_json("a: [unclosed"));
  auto documents = yaml_documents_to_json("---\na: 1\n---\n---\nb: 2\n");
  ASSERT_TRUE(documents);
  EXPECT_EQ(documents->size(), 2u);
}

TEST(LeaseExamples, EveryExampleLeaseIsValidAfterDefaulting) {
  int leases = 0;
  for (const char* file : {"/examples/claim-mode.yaml", "/examples/election-mode.yaml"}) {
    auto documents = yaml_documents_to_json(testing::read_text(testing::source_dir() + file));
    ASSERT_TRUE(documents) << file;
    for (auto& document : *documents) {
      if (document.value("kind", "") != "Lease") continue;
      ++leases;
      EXPECT_THAT(prune_unknown(lease_schema(), document), ElementsAre()) << file;
      apply_defaults(lease_schema(), document);
      EXPECT_THAT(validate(lease_schema(), document), ElementsAre()) << file;
    }
  }
  EXPECT_EQ(leases, 3);
}

}  // namespace
}  // namespace eslease::kubeemu::schema
