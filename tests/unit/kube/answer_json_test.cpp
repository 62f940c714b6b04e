#include "kube/answer_json.h"

#include <gtest/gtest.h>

namespace eslease::kube {
namespace {

using nlohmann::json;

const json kManaged = json::array({{{"manager", "kubectl"},
                                    {"operation", "Update"},
                                    {"time", "2026-11-29T11:00:00Z"},
                                    {"fieldsV1", {{"f:spec", {{"f:lockName", json::object()}}}}}},
                                   {{"manager", "odd \"]}[{\\ name"}, {"fieldsV1", json::object()}}});

json lease_with_managed_fields() {
  return {{"apiVersion", "eslease.io/v1alpha1"},
          {"kind", "Lease"},
          {"metadata",
           {{"name", "a"},
            {"resourceVersion", "7"},
            {"managedFields", kManaged},
            // A user's annotation may be named like the field, or hold its text: both stay.
            {"annotations", {{"managedFields", "mine"}, {"note", ",\"managedFields\":[1]"}}}}},
          {"spec", {{"lockName", "k"}}},
          {"status", {{"phase", "Held"}}}};
}

json without(json object) {
  object["metadata"].erase("managedFields");
  return object;
}

TEST(AnswerJsonTest, AnObjectLosesItsManagedFieldsAndNothingElse) {
  const json object = lease_with_managed_fields();
  EXPECT_EQ(parse_answer(object.dump()), without(object));
  EXPECT_EQ(parse_answer(object.dump(2)), without(object)) << "indented, as kubectl prints";
}

TEST(AnswerJsonTest, EveryItemOfAListLosesThem) {
  const json list = {{"kind", "LeaseList"},
                     {"metadata", {{"resourceVersion", "9"}, {"continue", "c"}}},
                     {"items", {lease_with_managed_fields(), lease_with_managed_fields()}}};
  const json parsed = parse_answer(list.dump());
  ASSERT_EQ(parsed["items"].size(), 2U);
  for (const json& item : parsed["items"]) EXPECT_EQ(item, without(lease_with_managed_fields()));
  EXPECT_EQ(parsed["metadata"]["resourceVersion"], "9");
}

TEST(AnswerJsonTest, AWatchEventsObjectLosesThem) {
  const json event = {{"type", "MODIFIED"}, {"object", lease_with_managed_fields()}};
  EXPECT_EQ(parse_answer(event.dump())["object"], without(lease_with_managed_fields()));
}

TEST(AnswerJsonTest, FirstLastOrOnlyMemberTheCommasStayRight) {
  EXPECT_EQ(parse_answer(R"({"metadata":{"managedFields":[{"a":1}],"name":"x"}})"),
            json::parse(R"({"metadata":{"name":"x"}})"));
  EXPECT_EQ(parse_answer(R"({"metadata":{"name":"x", "managedFields" : [ ] }})"),
            json::parse(R"({"metadata":{"name":"x"}})"));
  EXPECT_EQ(parse_answer(R"({"metadata":{"managedFields":[[],[{}]]}})"), json::parse(R"({"metadata":{}})"));
  EXPECT_EQ(parse_answer(R"({"metadata":{"managedFields":[1],"managedFields":[2]}})"),
            json::parse(R"({"metadata":{}})"))
      << "a key given twice";
}

TEST(AnswerJsonTest, AMemberOfThatNameThatIsNoArrayStays) {
  EXPECT_EQ(parse_answer(R"({"metadata":{"managedFields":null,"name":"x"}})"),
            json::parse(R"({"metadata":{"managedFields":null,"name":"x"}})"));
}

TEST(AnswerJsonTest, TextThatIsNotJsonStaysInvalid) {
  EXPECT_TRUE(parse_answer(R"({"metadata":{"managedFields":[)").is_discarded());
  EXPECT_TRUE(parse_answer(R"({"metadata":{"managedFields":["]"}})").is_discarded());
  EXPECT_TRUE(parse_answer(R"({"metadata":{"managedFields":[1]],"name":"x"}})").is_discarded());
  EXPECT_TRUE(parse_answer(R"({"metadata":{"managedFields":[1},"name":"x"}]})").is_discarded())
      << "a bracket closed by the other kind";
  EXPECT_TRUE(parse_answer("").is_discarded());
}

TEST(AnswerJsonTest, TextWithoutThemIsParsedAsItIs) {
  std::string scratch;
  const std::string text = R"({"kind":"Status","code":410})";
  EXPECT_EQ(without_managed_fields(text, scratch).data(), text.data()) << "no copy";
  EXPECT_EQ(parse_answer(text)["code"], 410);
}

// A write's answer read for its resourceVersion: the metadata comes out (without its
// managedFields) wherever it sits among the members, whatever the others hold.
TEST(AnswerJsonTest, MetadataOnlyKeepsTheMetadataAndNothingElse) {
  const json lease = lease_with_managed_fields();
  EXPECT_EQ(parse_answer_metadata(lease.dump()), (json{{"metadata", without(lease)["metadata"]}}));
  EXPECT_EQ(parse_answer_metadata(lease.dump(2)), (json{{"metadata", without(lease)["metadata"]}}))
      << "indented";
  const std::string last =
      R"({"spec":{"a":[1,{"b":"}]\"{"}],"c":-1.5e3,"d":true,"e":null},"metadata":{"resourceVersion":"9"}})";
  EXPECT_EQ(parse_answer_metadata(last)["metadata"]["resourceVersion"], "9");
  EXPECT_EQ(parse_answer_metadata(R"({"kind":"Status"})"), json::object()) << "no metadata: nothing";
}

TEST(AnswerJsonTest, MetadataOnlyRefusesWhatIsNotAnObject) {
  for (const char* text :
       {"", "[]", "{", R"({"metadata":{"resourceVersion":"9"})", R"({"metadata":{"resourceVersion":"9"}}})",
        R"({"spec":{"a":[}],"metadata":{}})", R"({"metadata":{"resourceVersion":"9",}})",
        R"({"metadata" {}})", R"({"spec":"unterminated,"metadata":{}})", R"({"metadata":{}} x)"})
    EXPECT_TRUE(parse_answer_metadata(text).is_discarded()) << text;
}

}  // namespace
}  // namespace eslease::kube
