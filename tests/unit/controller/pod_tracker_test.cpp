// What the pod tracker remembers on the controller's own clock: how long a pod has been there
// without ever being Ready, counted from when it was seen bound to its node.
#include "controller/pod_tracker.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"

namespace eslease::controller {
namespace {

using std::chrono::seconds;
using testing::FakeClock;

PodRecord pod(const std::string& node, ReadyState ready) {
  PodRecord p;
  p.meta = {"batch", "worker", "uid-1", "1"};
  p.phase = ready == ReadyState::kTrue ? "Running" : "Pending";
  p.node_name = node;
  p.ready = ready;
  p.shows_was_ready = ready == ReadyState::kTrue;
  // Created long ago by the API server's clock: the tracker does not trust that.
  p.creation_time = std::chrono::system_clock::from_time_t(1'000'000'000);
  return p;
}

TEST(PodTracker, ANeverReadyPodCountsFromWhenItWasSeenOnItsNode) {
  FakeClock clock;
  PodTracker tracker(clock);
  const MonoTime first_seen = clock.monotonic();
  tracker.pod_seen(pod("", ReadyState::kAbsent));
  EXPECT_EQ(tracker.state_of(pod("", ReadyState::kAbsent)).never_ready_since, first_seen);

  clock.advance(seconds(300));  // unschedulable for five minutes, then bound: it starts now
  const MonoTime bound = clock.monotonic();
  tracker.pod_seen(pod("node-1", ReadyState::kFalse));
  clock.advance(seconds(3));
  tracker.pod_seen(pod("node-1", ReadyState::kFalse));
  EXPECT_EQ(tracker.state_of(pod("node-1", ReadyState::kFalse)).never_ready_since, bound);

  tracker.pod_seen(pod("node-1", ReadyState::kTrue));
  EXPECT_FALSE(tracker.state_of(pod("node-1", ReadyState::kTrue)).never_ready_since);
  tracker.pod_seen(pod("node-1", ReadyState::kFalse));
  const PodState unready = tracker.state_of(pod("node-1", ReadyState::kFalse));
  EXPECT_FALSE(unready.never_ready_since) << "it was Ready once: the ordinary grace applies";
  EXPECT_EQ(unready.unready_since, clock.monotonic());
}

}  // namespace
}  // namespace eslease::controller
