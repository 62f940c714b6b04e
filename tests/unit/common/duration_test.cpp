// Durations as users write them, shared by the eslease tool and the controller's
// configuration.
#include "common/duration.h"

#include <gtest/gtest.h>

namespace eslease {
namespace {

TEST(Durations, ParseUnitsAndCombinations) {
  EXPECT_EQ(*parse_duration("500ms"), Millis(500));
  EXPECT_EQ(*parse_duration("30s"), Millis(30000));
  EXPECT_EQ(*parse_duration("5m"), Millis(300000));
  EXPECT_EQ(*parse_duration("1h"), Millis(3600000));
  EXPECT_EQ(*parse_duration("1m30s"), Millis(90000));
  EXPECT_EQ(*parse_duration("0s"), Millis(0));
  EXPECT_EQ(*parse_duration("0"), Millis(0)) << "a bare zero needs no unit, as in Go";
}

TEST(Durations, RejectBareNumbersAndGarbage) {
  for (const char* bad : {"", "30", "00", "s", "-5s", "5x", "1.5s", "5 s", "99999999999999999999h", "ms"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("e.g. 500ms"), std::string::npos);
  }
}

TEST(Durations, FormatInLargestWholeUnit) {
  EXPECT_EQ(format_duration(Millis(1500)), "1500ms");
  EXPECT_EQ(format_duration(Millis(30000)), "30s");
  EXPECT_EQ(format_duration(Millis(300000)), "5m");
}

}  // namespace
}  // namespace eslease
