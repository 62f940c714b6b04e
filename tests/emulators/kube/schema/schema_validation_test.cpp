#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_test_support.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using testing::claim_lease;
using ::testing::ElementsAre;
using ::testing::Field;
using testing::lease_schema;

auto IsCause(const std::string& type, const std::string& field, const std::string& message) {
  return ::testing::AllOf(Field(&Cause::type, type), Field(&Cause::field, field),
                          Field(&Cause::message, message));
}

std::vector<Cause> validate_lease(json lease) {
  prune_unknown(lease_schema(), lease);
  apply_defaults(lease_schema(), lease);
  return validate(lease_schema(), lease);
}

TEST(LeaseSchemaValidation, AcceptsClaimAndElectionModes) {
  EXPECT_THAT(validate_lease(claim_lease()), ElementsAre());
  json election = claim_lease();
  election["spec"]["holder"] = {
      {"podSelector",
       {{"matchLabels", {{"app", "reporter"}}},
        {"matchExpressions", {{{"key", "tier"}, {"operator", "In"}, {"values", {"a"}}}}}}}};
  EXPECT_THAT(validate_lease(election), ElementsAre());
}

TEST(LeaseSchemaValidation, RejectsUnknownPriorityWithKubeWording) {
  json lease = claim_lease();
  lease["spec"]["priority"] = "Urgent";
  const auto causes = validate_lease(lease);
  EXPECT_THAT(causes, ElementsAre(IsCause(
                          "FieldValueNotSupported", "spec.priority",
                          R"(Unsupported value: "Urgent": supported values: "Foreground", "Background")")));
  EXPECT_EQ(invalid_message("Lease.eslease.io", "report-a", causes),
            R"(Lease.eslease.io "report-a" is invalid: spec.priority: Unsupported value: "Urgent": )"
            R"(supported values: "Foreground", "Background")");
}

TEST(LeaseSchemaValidation, RejectsWrongTypeWithTypeInvalid) {
  json lease = claim_lease();
  lease["spec"]["leaseDurationSeconds"] = "30";
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueTypeInvalid", "spec.leaseDurationSeconds",
                          R"(Invalid value: "string": spec.leaseDurationSeconds in body must be of type )"
                          R"(integer: "string")")));
  lease["spec"]["leaseDurationSeconds"] = 1.5;
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueTypeInvalid", "spec.leaseDurationSeconds",
                          R"(Invalid value: "number": spec.leaseDurationSeconds in body must be of type )"
                          R"(integer: "number")")));
}

TEST(LeaseSchemaValidation, AcceptsWholeFloatForIntegerAsKubeOpenAPIDoes) {
  json lease = claim_lease();
  lease["spec"]["leaseDurationSeconds"] = 30.0;
  EXPECT_THAT(validate_lease(lease), ElementsAre());
}

TEST(LeaseSchemaValidation, RejectsOutOfRangeDurations) {
  json lease = claim_lease();
  lease["spec"]["leaseDurationSeconds"] = 0;
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueInvalid", "spec.leaseDurationSeconds",
                          "Invalid value: 0: spec.leaseDurationSeconds in body should be greater than or "
                          "equal to 1")));
  lease["spec"]["leaseDurationSeconds"] = 3601;
  lease["spec"]["livenessGraceSeconds"] = -1;
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueInvalid", "spec.leaseDurationSeconds",
                          "Invalid value: 3601: spec.leaseDurationSeconds in body should be less than or "
                          "equal to 3600"),
                  IsCause("FieldValueInvalid", "spec.livenessGraceSeconds",
                          "Invalid value: -1: spec.livenessGraceSeconds in body should be greater than or "
                          "equal to 0")));
}

TEST(LeaseSchemaValidation, RequiresSpecAndExactlyOneOfLockNameAndLockNames) {
  json lease = claim_lease();
  lease["spec"].erase("lockName");
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "spec" must validate one and only one schema )"
                                  R"((oneOf). Found none valid)"),
                          IsCause("FieldValueRequired", "spec.lockName", "Required value")));
  lease["spec"]["lockNames"] = {"a", "b"};
  EXPECT_THAT(validate_lease(lease), ElementsAre());
  lease["spec"]["lockName"] = "a";
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "spec" must validate one and only one schema )"
                                  R"((oneOf). Found 2 valid alternatives)")));
  lease.erase("spec");
  EXPECT_THAT(validate_lease(lease), ElementsAre(IsCause("FieldValueRequired", "spec", "Required value")));
}

TEST(LeaseSchemaValidation, CapacityAndAccessHaveDefaultsRangesAndAnEnum) {
  json lease = claim_lease();
  prune_unknown(lease_schema(), lease);
  apply_defaults(lease_schema(), lease);
  EXPECT_EQ(lease["spec"]["capacity"], 1);
  EXPECT_EQ(lease["spec"]["access"], "Shared") << "capacity alone is a counting semaphore";
  lease["spec"]["capacity"] = 1000;
  lease["spec"]["access"] = "Exclusive";
  EXPECT_THAT(validate_lease(lease), ElementsAre());
  lease["spec"]["capacity"] = 0;
  lease["spec"]["access"] = "Read";
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueNotSupported", "spec.access",
                          R"(Unsupported value: "Read": supported values: "Exclusive", "Shared")"),
                  IsCause("FieldValueInvalid", "spec.capacity",
                          "Invalid value: 0: spec.capacity in body should be greater than or equal to 1")));
  lease["spec"]["capacity"] = 1001;
  lease["spec"].erase("access");
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause(
                  "FieldValueInvalid", "spec.capacity",
                  "Invalid value: 1001: spec.capacity in body should be less than or equal to 1000")));
}

TEST(LeaseSchemaValidation, LockNamesAreTwoToThirtyTwoDistinctLockNames) {
  json lease = claim_lease();
  lease["spec"].erase("lockName");
  lease["spec"]["lockNames"] = {"a"};
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause("FieldValueInvalid", "spec.lockNames",
                                  "Invalid value: 1: spec.lockNames in body should have at least 2 items")));
  json names = json::array();
  for (int i = 0; i < 33; ++i) names.push_back("lock-" + std::to_string(i));
  lease["spec"]["lockNames"] = names;
  EXPECT_THAT(validate_lease(lease), ElementsAre(IsCause("FieldValueTooMany", "spec.lockNames",
                                                         "Too many: 33: must have at most 32 items")));
  names.erase(names.size() - 1);
  lease["spec"]["lockNames"] = names;
  EXPECT_THAT(validate_lease(lease), ElementsAre());
  lease["spec"]["lockNames"] = {"a", "b", "a"};
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause("FieldValueDuplicate", "spec.lockNames[2]", R"(Duplicate value: "a")")));
  lease["spec"]["lockNames"] = {"a", "Bad/Name", std::string(254, 'b')};
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueInvalid", "spec.lockNames[1]",
                          R"(Invalid value: "Bad/Name": spec.lockNames[1] in body should match )"
                          R"('^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$')"),
                  IsCause("FieldValueTooLong", "spec.lockNames[2]", "Too long: may not be longer than 253")));
}

TEST(LeaseSchemaValidation, LockNameLengthAndPattern) {
  json lease = claim_lease();
  lease["spec"]["lockName"] = "";
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueInvalid", "spec.lockName",
                          R"(Invalid value: "": spec.lockName in body should be at least 1 chars long)")));
  lease["spec"]["lockName"] = std::string(254, 'a');
  EXPECT_THAT(validate_lease(lease), ElementsAre(IsCause("FieldValueTooLong", "spec.lockName",
                                                         "Too long: may not be longer than 253")));
  lease["spec"]["lockName"] = std::string(253, 'a');
  EXPECT_THAT(validate_lease(lease), ElementsAre());
  lease["spec"]["lockName"] = "Bad/Name";
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause("FieldValueInvalid", "spec.lockName",
                                  R"(Invalid value: "Bad/Name": spec.lockName in body should match )"
                                  R"('^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$')")));
}

TEST(LeaseSchemaValidation, HolderLabelIsALabelKey) {
  json lease = claim_lease();
  for (const char* good : {"leader", "example.com/leader", "Leader_1.a-b", "a"}) {
    lease["spec"]["holderLabel"] = good;
    EXPECT_THAT(validate_lease(lease), ElementsAre()) << good;
  }
  lease["spec"]["holderLabel"] = std::string(63, 'a');
  EXPECT_THAT(validate_lease(lease), ElementsAre());
  for (const std::string& bad : {std::string(64, 'a'), std::string("example.com/"), std::string("-leader"),
                                 std::string("a/b/c"), std::string("Example.com/leader")}) {
    lease["spec"]["holderLabel"] = bad;
    const auto causes = validate_lease(lease);
    ASSERT_EQ(causes.size(), 1u) << bad;
    EXPECT_EQ(causes[0].field, "spec.holderLabel") << bad;
  }
}

TEST(LeaseSchemaValidation, HolderMustBeExactlyOneOf) {
  json lease = claim_lease();
  lease["spec"]["holder"]["podSelector"] = {{"matchLabels", {{"app", "reporter"}}}};
  const auto both = validate_lease(lease);
  EXPECT_THAT(both,
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "spec.holder" must validate one and only one schema )"
                                  R"((oneOf). Found 2 valid alternatives)")));
  EXPECT_EQ(
      invalid_message("Lease.eslease.io", "a", both),
      R"(Lease.eslease.io "a" is invalid: <nil>: Invalid value: "": "spec.holder" must validate one and )"
      R"(only one schema (oneOf). Found 2 valid alternatives)");

  lease["spec"]["holder"] = json::object();
  EXPECT_THAT(validate_lease(lease),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "spec.holder" must validate one and only one schema )"
                                  R"((oneOf). Found none valid)"),
                          IsCause("FieldValueRequired", "spec.holder.podName", "Required value")));
}

TEST(LeaseSchemaValidation, NestedPathsInItemsAndMaps) {
  json lease = claim_lease();
  lease["spec"]["holder"] = {
      {"podSelector",
       {{"matchLabels", {{"app", 5}}}, {"matchExpressions", {{{"key", "tier"}, {"operator", "Near"}}}}}}};
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueNotSupported", "spec.holder.podSelector.matchExpressions[0].operator",
                          R"(Unsupported value: "Near": supported values: "In", "NotIn", "Exists", )"
                          R"("DoesNotExist")"),
                  IsCause("FieldValueTypeInvalid", "spec.holder.podSelector.matchLabels.app",
                          R"(Invalid value: "integer": spec.holder.podSelector.matchLabels.app in body )"
                          R"(must be of type string: "integer")")));
}

TEST(LeaseSchemaValidation, StatusFormatsPatternsAndListMapKeys) {
  json lease = claim_lease();
  lease["status"] = json::parse(R"({
    "phase": "Held", "fencingToken": "12a", "acquireTime": "yesterday",
    "renewTime": "2026-11-21T15:49:41.123Z", "expireTime": "2026-11-21T15:50:11+01:00",
    "conditions": [
      {"type": "Held", "status": "True", "reason": "Granted", "message": "", "lastTransitionTime": "2026-11-21T15:49:41Z"},
      {"type": "Held", "status": "False", "reason": "Lost", "message": "", "lastTransitionTime": "2026-11-21T15:49:42Z"}
    ]})");
  EXPECT_THAT(
      validate_lease(lease),
      ElementsAre(IsCause("FieldValueTypeInvalid", "status.acquireTime",
                          R"(Invalid value: "yesterday": status.acquireTime in body must be of type )"
                          R"(date-time: "yesterday")"),
                  IsCause("FieldValueInvalid", "status.fencingToken",
                          R"(Invalid value: "12a": status.fencingToken in body should match '^[0-9]+$')"),
                  IsCause("FieldValueDuplicate", "status.conditions[1]",
                          R"(Duplicate value: map[string]interface {}{"type":"Held"})")));
}

TEST(LeaseSchemaValidation, SeveralCausesAreBracketedAndDeduplicated) {
  json lease = claim_lease();
  lease["spec"]["priority"] = "Urgent";
  lease["spec"]["leaseDurationSeconds"] = 0;
  const auto causes = validate_lease(lease);
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(
      invalid_message("Lease.eslease.io", "a", causes),
      R"(Lease.eslease.io "a" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: )"
      R"(spec.leaseDurationSeconds in body should be greater than or equal to 1, spec.priority: Unsupported )"
      R"(value: "Urgent": supported values: "Foreground", "Background"])");
  EXPECT_EQ(
      invalid_message("Pod", "p", {causes[0], causes[0]}),
      R"(Pod "p" is invalid: spec.leaseDurationSeconds: Invalid value: 0: spec.leaseDurationSeconds in )"
      R"(body should be greater than or equal to 1)");
  EXPECT_EQ(invalid_message("Pod", "p", {}), R"(Pod "p" is invalid)");
}

// Keywords the Lease schema does not use, on small schemas.
TEST(SchemaKeywords, NumberBoundsAndMultipleOf) {
  const json schema =
      json::parse(R"({"type": "number", "multipleOf": 0.5, "minimum": 1, "exclusiveMinimum": true,
                                      "maximum": 1e21, "exclusiveMaximum": true})");
  EXPECT_THAT(validate(schema, 2.5), ElementsAre());
  EXPECT_THAT(validate(schema, 1),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  "Invalid value: 1:  in body should be greater than 1")));
  EXPECT_THAT(validate(schema, 1.25),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  "Invalid value: 1.25:  in body should be a multiple of 0.5")));
  EXPECT_THAT(validate(schema, 2e21),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  "Invalid value: 2e+21:  in body should be less than 1e+21")));
}

TEST(SchemaKeywords, ArraysItemsAndUniqueness) {
  const json schema =
      json::parse(R"({"type": "object", "properties": {"list": {"type": "array", "minItems": 1,
      "maxItems": 2, "uniqueItems": true, "items": {"type": "string"}}}})");
  EXPECT_THAT(validate(schema, json::parse(R"({"list": []})")),
              ElementsAre(IsCause("FieldValueInvalid", "list",
                                  "Invalid value: 0: list in body should have at least 1 items")));
  EXPECT_THAT(validate(schema, json::parse(R"({"list": ["a", "b", "c"]})")),
              ElementsAre(IsCause("FieldValueTooMany", "list", "Too many: 3: must have at most 2 items")));
  EXPECT_THAT(validate(schema, json::parse(R"({"list": ["a", "a"]})")),
              ElementsAre(IsCause("FieldValueInvalid", "list",
                                  R"(Invalid value: "": list in body shouldn't contain duplicates)")));
  EXPECT_THAT(
      validate(schema, json::parse(R"({"list": ["a", 1]})")),
      ElementsAre(IsCause("FieldValueTypeInvalid", "list[1]",
                          R"(Invalid value: "integer": list[1] in body must be of type string: "integer")")));
}

TEST(SchemaKeywords, ListTypeSetReportsEachRepeatedValueOnce) {
  const json schema = json::parse(R"({"type": "object", "properties": {"tags": {"type": "array",
      "x-kubernetes-list-type": "set", "items": {"type": "string"}}}})");
  EXPECT_THAT(validate(schema, json::parse(R"({"tags": ["a", "b", "a", "a"]})")),
              ElementsAre(IsCause("FieldValueDuplicate", "tags[2]", R"(Duplicate value: "a")")));
}

TEST(SchemaKeywords, ObjectPropertyCountsAndAdditionalProperties) {
  const json schema = json::parse(R"({"type": "object", "minProperties": 1, "maxProperties": 2,
      "additionalProperties": {"type": "integer", "maximum": 9}})");
  EXPECT_THAT(validate(schema, json::object()),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  "Invalid value: 0:  in body should have at least 1 properties")));
  EXPECT_THAT(validate(schema, json::parse(R"({"a": 1, "b": 2, "c": 3})")),
              ElementsAre(IsCause("FieldValueTooMany", "<nil>", "Too many: 3: must have at most 2 items")));
  EXPECT_THAT(validate(schema, json::parse(R"({"a": 10})")),
              ElementsAre(IsCause("FieldValueInvalid", "a",
                                  "Invalid value: 10: .a in body should be less than or equal to 9")));
  const json closed = json::parse(
      R"({"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": false})");
  EXPECT_THAT(validate(closed, json::parse(R"({"y": "1"})")),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "y": .y in body is a forbidden property)")));
}

TEST(SchemaKeywords, NullableAndNull) {
  const json schema =
      json::parse(R"({"type": "object", "properties": {"a": {"type": "string", "nullable": true},
      "b": {"type": "string"}}})");
  EXPECT_THAT(validate(schema, json::parse(R"({"a": null})")), ElementsAre());
  EXPECT_THAT(validate(schema, json::parse(R"({"b": null})")),
              ElementsAre(IsCause("FieldValueTypeInvalid", "b",
                                  R"(Invalid value: "null": b in body must be of type string: "null")")));
}

TEST(SchemaKeywords, IntOrStringAndFormats) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "port": {"x-kubernetes-int-or-string": true},
      "big": {"type": "integer", "format": "int64"},
      "small": {"type": "integer", "format": "int32"},
      "id": {"type": "string", "format": "uuid"},
      "free": {"type": "string", "format": "something-kube-strips"}}})");
  EXPECT_THAT(validate(schema, json::parse(R"({"port": 8080, "big": 9007199254740993, "small": 5,
      "id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427", "free": "anything"})")),
              ElementsAre());
  EXPECT_THAT(validate(schema, json::parse(R"({"port": "http"})")), ElementsAre());
  EXPECT_THAT(
      validate(schema, json::parse(R"({"port": true, "big": "1", "id": "nope"})")),
      ElementsAre(
          IsCause("FieldValueTypeInvalid", "big",
                  R"(Invalid value: "string": big in body must be of type integer: "string")"),
          IsCause("FieldValueTypeInvalid", "id",
                  R"(Invalid value: "nope": id in body must be of type uuid: "nope")"),
          IsCause("FieldValueTypeInvalid", "port",
                  R"(Invalid value: "boolean": port in body must be of type integer,string: "boolean")")));
}

TEST(SchemaKeywords, AnyOfAllOfNot) {
  const json any_of = json::parse(R"({"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]})");
  EXPECT_THAT(validate(any_of, "bee"), ElementsAre());
  EXPECT_THAT(validate(any_of, "cat"),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "" must validate at least one schema (anyOf))"),
                          IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "cat":  in body should match '^a')")));
  const json all_of = json::parse(R"({"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]})");
  EXPECT_THAT(validate(all_of, "abcd"),
              ElementsAre(IsCause("FieldValueTooLong", "<nil>", "Too long: may not be longer than 3"),
                          IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "" must validate all the schemas (allOf))")));
  const json not_schema = json::parse(R"({"type": "string", "not": {"enum": ["root"]}})");
  EXPECT_THAT(validate(not_schema, "root"),
              ElementsAre(IsCause("FieldValueInvalid", "<nil>",
                                  R"(Invalid value: "": "" must not validate the schema (not))")));
}

TEST(SchemaKeywords, LengthsCountCodePointsAndValuesAreGoQuoted) {
  const json schema = json::parse(R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3,
      "enum": ["ééé"]}}})");
  EXPECT_THAT(validate(schema, json::parse(R"({"s": "ééé"})")), ElementsAre());
  EXPECT_THAT(validate(schema, json::parse(R"({"s": "\"\n\u0001"})")),
              ElementsAre(IsCause("FieldValueNotSupported", "s",
                                  R"(Unsupported value: "\"\n\x01": supported values: "ééé")")));
}

TEST(SchemaKeywords, EmbeddedResourceNeedsKindAndApiVersion) {
  const json schema = json::parse(R"({"type": "object", "properties": {"template": {"type": "object",
      "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}})");
  EXPECT_THAT(validate(schema, json::parse(R"({"template": {"apiVersion": "v1", "kind": "Pod"}})")),
              ElementsAre());
  EXPECT_THAT(
      validate(schema, json::parse(R"({"template": {"apiVersion": "v1"}})")),
      ElementsAre(IsCause("FieldValueRequired", "template.kind", "Required value: must not be empty")));
}

}  // namespace
}  // namespace eslease::kubeemu::schema
