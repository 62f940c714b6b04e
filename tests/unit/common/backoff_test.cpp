#include "common/backoff.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <vector>

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

// Clients that retry together must not retry in step: every Backoff gets its own seed, on
// every thread, without reading the system's entropy each time.
TEST(Backoff, SeedsDifferFromCallToCallAndFromThreadToThread) {
  std::set<std::uint64_t> here;
  for (int i = 0; i < 1000; ++i) here.insert(jitter_seed());
  EXPECT_EQ(here.size(), 1000u);
  std::vector<std::uint64_t> there;
  std::thread([&] {
    for (int i = 0; i < 1000; ++i) there.push_back(jitter_seed());
  }).join();
  for (std::uint64_t seed : there) EXPECT_FALSE(here.contains(seed));

  std::set<Millis::rep> first_delays;
  for (int i = 0; i < 20; ++i) first_delays.insert(Backoff({.initial = Millis(10000)}).next().count());
  EXPECT_GT(first_delays.size(), 1u);
}

}  // namespace
}  // namespace eslease
