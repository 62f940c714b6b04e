#include "common/backoff.h"

#include <gtest/gtest.h>

namespace eslease {
namespace {

TEST(Backoff, GrowsWithJitterAndStaysUnderTheCap) {
  Backoff backoff({.initial = Millis(100), .max = Millis(1000), .multiplier = 2.0}, 42);
  const Millis caps[] = {Millis(100), Millis(200), Millis(400), Millis(800), Millis(1000), Millis(1000)};
  for (Millis cap : caps) {
    const Millis d = backoff.next();
    EXPECT_GE(d, cap / 2);
    EXPECT_LE(d, cap);
  }
  EXPECT_EQ(backoff.attempts(), 6);
}

TEST(Backoff, ResetStartsOver) {
  Backoff backoff({.initial = Millis(10), .max = Millis(10000), .multiplier = 10.0}, 7);
  backoff.next();
  backoff.next();
  backoff.reset();
  EXPECT_LE(backoff.next(), Millis(10));
  EXPECT_EQ(backoff.attempts(), 1);
}

}  // namespace
}  // namespace eslease
