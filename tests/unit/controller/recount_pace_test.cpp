#include "controller/recount_pace.h"

#include <gtest/gtest.h>

namespace eslease::controller {
namespace {

using std::chrono::milliseconds;

const MonoTime kStart{std::chrono::seconds(1000)};

TEST(RecountPace, TheFirstRecountIsAlwaysDue) {
  const RecountPace pace(20);
  EXPECT_TRUE(pace.due(kStart));
}

// A scrape asks for a recount; whether it runs depends on how long the last one took.
TEST(RecountPace, ARecountWaitsTwentyTimesAsLongAsTheLastTook) {
  struct Row {
    const char* what;
    milliseconds took;
    milliseconds asked_after;  // after the last recount finished
    bool due;
  };
  const Row rows[] = {
      {"an instant recount: every scrape recounts", milliseconds(0), milliseconds(0), true},
      {"1 ms: due again after 20 ms", milliseconds(1), milliseconds(19), false},
      {"1 ms: due at 20 ms", milliseconds(1), milliseconds(20), true},
      {"100 ms (100,000 Leases): a scrape 0.5 s later reports the last figures", milliseconds(100),
       milliseconds(500), false},
      {"100 ms: due 2 s after it finished", milliseconds(100), milliseconds(2000), true},
  };
  for (const Row& row : rows) {
    RecountPace pace(20);
    pace.ran(kStart, kStart + row.took);
    EXPECT_EQ(pace.due(kStart + row.took + row.asked_after), row.due) << row.what;
  }
}

TEST(RecountPace, TheLastRecountSetsThePace) {
  RecountPace pace(20);
  pace.ran(kStart, kStart + milliseconds(100));
  const MonoTime later = kStart + milliseconds(3000);
  pace.ran(later, later + milliseconds(1));  // the cluster shrank: recounts are cheap again
  EXPECT_TRUE(pace.due(later + milliseconds(21)));
}

}  // namespace
}  // namespace eslease::controller
