#include "common/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace eslease::log {
namespace {

TEST(Log, TextRendersKeyValuesAndQuotesWhenNeeded) {
  EXPECT_EQ(render(Format::kText, "lock acquired", {{"lock", "batch/a"}, {"token", 42}}),
            "lock acquired lock=batch/a token=42");
  EXPECT_EQ(render(Format::kText, "m", {{"k", "two words"}}), "m k=\"two words\"");
}

TEST(Log, EmptyFieldsAreLeftOut) {
  EXPECT_EQ(render(Format::kText, "lock released", {{"lock", "batch/a"}, {"reason", ""}, {"from", ""}}),
            "lock released lock=batch/a");
  auto j = nlohmann::json::parse(render(Format::kJson, "m", {{"reason", ""}, {"lock", "a"}}));
  EXPECT_FALSE(j.contains("reason")) << j.dump();
  EXPECT_EQ(j["lock"], "a");
}

TEST(Log, HostileValuesCannotForgeALine) {
  const std::string line = render(Format::kText, "m", {{"name", "x\nlevel=error forged"}});
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(Log, JsonRendersOneObject) {
  auto j = nlohmann::json::parse(render(Format::kJson, "renewed", {{"count", 3}, {"lock", "a\"b"}}));
  EXPECT_EQ(j["msg"], "renewed");
  EXPECT_EQ(j["count"], "3");
  EXPECT_EQ(j["lock"], "a\"b");
}

TEST(Log, ParsesFormatAndLevelNames) {
  Format f;
  Level l;
  EXPECT_TRUE(parse_format("json", f));
  EXPECT_EQ(f, Format::kJson);
  EXPECT_FALSE(parse_format("xml", f));
  EXPECT_TRUE(parse_level("warn", l));
  EXPECT_EQ(l, Level::kWarn);
  EXPECT_FALSE(parse_level("loud", l));
}

}  // namespace
}  // namespace eslease::log
