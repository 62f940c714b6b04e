#include "common/json_fields.h"

#include <gtest/gtest.h>

namespace eslease::json_fields {
namespace {

using nlohmann::json;

TEST(JsonFields, MissingNullAndMistypedFieldsReadAsAbsent) {
  const json object = {{"s", "text"}, {"n", nullptr}, {"i", 7}, {"f", 30.0}, {"half", 1.5}, {"t", "x"}};
  EXPECT_EQ(find(object, "n"), nullptr);
  EXPECT_EQ(find(object, "missing"), nullptr);
  EXPECT_EQ(find(json::array({1}), "s"), nullptr);  // not an object
  EXPECT_EQ(string_at(object, "s"), "text");
  EXPECT_EQ(string_at(object, "i"), "");
  EXPECT_EQ(integer_at(object, "i"), 7);
  EXPECT_EQ(integer_at(object, "f"), 30);  // 30.0 is an integer to kube-openapi
  EXPECT_FALSE(integer_at(object, "half"));
  EXPECT_FALSE(integer_at(object, "s"));
  EXPECT_FALSE(time_at(object, "t"));
}

TEST(JsonFields, TimesAreRfc3339) {
  const json object = {{"at", "2026-11-23T10:00:00Z"}};
  auto at = time_at(object, "at");
  ASSERT_TRUE(at);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(at->time_since_epoch()).count(), 1795428000);
}

}  // namespace
}  // namespace eslease::json_fields
