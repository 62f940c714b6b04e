// What the pod tracker remembers on the controller's own clock: how long a pod has been there
// without ever being Ready, counted from when it was seen bound to its node; and its memory of
// deaths: a pod seen gone or replaced is remembered with when it was seen; past 1,024 deaths
// those older than five minutes are forgotten on the next pod event, and a name that died
// again keeps its latest death.
#include "controller/pod_tracker.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"

namespace eslease::controller {
namespace {

using eslease::testing::FakeClock;
using std::chrono::seconds;

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

NodeLeaseRecord heartbeat(const std::string& node, int second) {
  NodeLeaseRecord lease;
  lease.meta = {"kube-node-lease", node, "lease-uid-" + node, std::to_string(second)};
  // The kubelet's clock: the tracker times heartbeats on its own.
  lease.renew_time = std::chrono::system_clock::from_time_t(1'000'000'000 + second);
  return lease;
}

// A node whose kubelet stops renewing its node Lease is silent once the grace has passed on
// our clock since the last renewal we saw; it is reported once when it turns silent and once
// when it beats again.
TEST(PodTracker, ANodeIsSilentOnceItsHeartbeatIsNotSeenRenewedForTheGrace) {
  FakeClock clock;
  PodTracker tracker(clock, seconds(12));
  tracker.pod_seen(pod("node-1", ReadyState::kTrue));
  tracker.node_heartbeat(heartbeat("node-1", 0));
  std::optional<MonoTime> next;
  EXPECT_TRUE(tracker.nodes_whose_heartbeat_changed(clock.monotonic(), next).empty());
  EXPECT_EQ(next, clock.monotonic() + seconds(12));

  clock.advance(seconds(10));
  tracker.node_heartbeat(heartbeat("node-1", 10));  // renewed: counts from now
  const MonoTime last_beat = clock.monotonic();
  clock.advance(seconds(11));
  tracker.node_heartbeat(heartbeat("node-1", 10));  // the same renewTime again: no heartbeat
  EXPECT_FALSE(tracker.state_of(pod("node-1", ReadyState::kTrue)).node_silent_since);
  clock.advance(seconds(1));
  EXPECT_EQ(tracker.state_of(pod("node-1", ReadyState::kTrue)).node_silent_since, last_beat + seconds(12));
  next.reset();
  EXPECT_EQ(tracker.nodes_whose_heartbeat_changed(clock.monotonic(), next),
            std::vector<std::string>{"node-1"});
  EXPECT_TRUE(tracker.nodes_whose_heartbeat_changed(clock.monotonic(), next).empty()) << "reported once";

  tracker.node_heartbeat(heartbeat("node-1", 40));  // back
  EXPECT_FALSE(tracker.state_of(pod("node-1", ReadyState::kTrue)).node_silent_since);
  EXPECT_EQ(tracker.nodes_whose_heartbeat_changed(clock.monotonic(), next),
            std::vector<std::string>{"node-1"});
}

// Without a grace, or for a node whose heartbeat was never seen, heartbeats do not count.
TEST(PodTracker, HeartbeatsCountOnlyWithAGraceAndForNodesThatHaveThem) {
  FakeClock clock;
  PodTracker off(clock);
  off.node_heartbeat(heartbeat("node-1", 0));
  clock.advance(seconds(3600));
  EXPECT_FALSE(off.state_of(pod("node-1", ReadyState::kTrue)).node_silent_since);

  PodTracker on(clock, seconds(12));
  clock.advance(seconds(3600));
  EXPECT_FALSE(on.state_of(pod("node-2", ReadyState::kTrue)).node_silent_since);
  on.node_heartbeat(heartbeat("node-1", 0));
  on.node_heartbeat_gone(heartbeat("node-1", 0));  // the node was removed
  clock.advance(seconds(60));
  EXPECT_FALSE(on.state_of(pod("node-1", ReadyState::kTrue)).node_silent_since);
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

PodRecord named_pod(const std::string& name, const std::string& uid) {
  PodRecord out;
  out.meta.ns = "ns";
  out.meta.name = name;
  out.meta.uid = uid;
  out.phase = "Running";
  out.ready = ReadyState::kTrue;
  return out;
}

TEST(PodTracker, ADeathIsRememberedWithWhenItWasSeen) {
  FakeClock clock;
  PodTracker tracker(clock);
  tracker.pod_seen(named_pod("gone", "u1"));
  tracker.pod_seen(named_pod("replaced", "u2"));
  clock.advance(Millis(100));
  const MonoTime seen = clock.monotonic();
  tracker.pod_gone(named_pod("gone", "u1"));
  tracker.pod_seen(named_pod("replaced", "u3"));  // a new pod under the same name
  EXPECT_EQ(tracker.death_seen_at("ns/gone"), seen);
  EXPECT_EQ(tracker.death_seen_at("ns/replaced"), seen);
  EXPECT_EQ(tracker.death_seen_at("ns/never-seen"), std::nullopt);
}

// Only a pod seen going proves a holder gone: a pod never seen may be one the cache has not
// caught up with.
TEST(PodTracker, APodIsProvenGoneOnlyByItsOwnUidSeenGoing) {
  FakeClock clock;
  PodTracker tracker(clock);
  tracker.pod_seen(named_pod("gone", "u1"));
  tracker.pod_seen(named_pod("replaced", "u2"));
  tracker.pod_seen(named_pod("alive", "u4"));
  tracker.pod_gone(named_pod("gone", "u1"));
  tracker.pod_seen(named_pod("replaced", "u3"));
  EXPECT_TRUE(tracker.saw_gone("ns/gone", "u1"));
  EXPECT_TRUE(tracker.saw_gone("ns/replaced", "u2"));
  EXPECT_TRUE(tracker.saw_gone("ns/gone", ""));         // no UID: any pod of that name
  EXPECT_FALSE(tracker.saw_gone("ns/replaced", "u3"));  // the pod that replaced it runs
  EXPECT_FALSE(tracker.saw_gone("ns/gone", "u9"));      // a later pod of that name, never seen
  EXPECT_FALSE(tracker.saw_gone("ns/alive", "u4"));
  EXPECT_FALSE(tracker.saw_gone("ns/never-seen", ""));
}

TEST(PodTracker, PastManyDeathsTheOldOnesAreForgottenAndTheYoungKept) {
  FakeClock clock;
  PodTracker tracker(clock);
  for (int i = 0; i < 1000; ++i) tracker.pod_gone(named_pod("old-" + std::to_string(i), "u"));
  tracker.pod_gone(named_pod("again", "u"));
  clock.advance(std::chrono::minutes(4));
  const MonoTime young = clock.monotonic();
  for (int i = 0; i < 100; ++i) tracker.pod_gone(named_pod("young-" + std::to_string(i), "u"));
  tracker.pod_gone(named_pod("again", "u"));  // died again, later

  tracker.pod_seen(named_pod("other", "u"));
  EXPECT_TRUE(tracker.death_seen_at("ns/old-0")) << "nothing is older than five minutes yet";

  clock.advance(std::chrono::minutes(2));
  tracker.pod_seen(named_pod("other", "u"));
  EXPECT_EQ(tracker.death_seen_at("ns/old-0"), std::nullopt);
  EXPECT_EQ(tracker.death_seen_at("ns/old-999"), std::nullopt);
  EXPECT_EQ(tracker.death_seen_at("ns/young-0"), young);
  EXPECT_EQ(tracker.death_seen_at("ns/young-99"), young);
  EXPECT_EQ(tracker.death_seen_at("ns/again"), young) << "the later death is kept";
}

TEST(PodTracker, FewDeathsAreKeptHoweverOld) {
  FakeClock clock;
  PodTracker tracker(clock);
  const MonoTime seen = clock.monotonic();
  tracker.pod_gone(named_pod("gone", "u"));
  clock.advance(std::chrono::hours(1));
  tracker.pod_seen(named_pod("other", "u"));
  EXPECT_EQ(tracker.death_seen_at("ns/gone"), seen);
}

TEST(PodTracker, ANameThatDiesOverAndOverKeepsItsLatestDeath) {
  FakeClock clock;
  PodTracker tracker(clock);
  for (int i = 0; i < 5000; ++i) {
    clock.advance(Millis(10));
    tracker.pod_seen(named_pod("web-0", "u" + std::to_string(i)));
  }
  const MonoTime last = clock.monotonic();
  EXPECT_EQ(tracker.death_seen_at("ns/web-0"), last);
  for (int i = 0; i < 1100; ++i) tracker.pod_gone(named_pod("other-" + std::to_string(i), "u"));
  clock.advance(std::chrono::minutes(6));
  tracker.pod_seen(named_pod("web-0", "u4999"));
  EXPECT_EQ(tracker.death_seen_at("ns/web-0"), std::nullopt);
  EXPECT_EQ(tracker.death_seen_at("ns/other-0"), std::nullopt);
}

}  // namespace
}  // namespace eslease::controller
