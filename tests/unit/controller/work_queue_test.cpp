// The work queue's guarantees, on a fake clock: adds collapse, a key is never held by two
// workers, delayed adds wake at their time (earliest wins), failures back off and forget()
// resets them, shut_down() wakes blocked workers.
#include "controller/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "support/fake_clock.h"
#include "support/wait.h"

namespace eslease::controller {
namespace {

using eslease::testing::FakeClock;
using eslease::testing::wait_until;

// What a worker gets now: the key handed out, or nullopt once the worker is seen blocked on
// the clock (nothing is ready, and the fake time does not move meanwhile).
std::optional<std::string> get_now(WorkQueue& queue, FakeClock& clock) {
  std::stop_source stop;
  std::optional<std::string> out;
  std::atomic<bool> returned{false};
  std::jthread getter([&] {
    out = queue.get(stop.get_token());
    returned = true;
  });
  EXPECT_TRUE(wait_until([&] { return returned.load() || clock.waiters() > 0; }));
  stop.request_stop();
  getter.join();
  return out;
}

TEST(WorkQueue, RepeatedAddsCollapseAndOrderIsFirstInFirstOut) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.add("a");
  queue.add("b");
  queue.add("a");
  EXPECT_EQ(queue.len(), 2u);
  EXPECT_EQ(get_now(queue, clock), "a");
  EXPECT_EQ(get_now(queue, clock), "b");
}

TEST(WorkQueue, KeyAddedWhileProcessingIsQueuedAgainOnlyWhenDone) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.add("a");
  ASSERT_EQ(get_now(queue, clock), "a");
  queue.add("a");
  EXPECT_EQ(queue.len(), 0u);  // not handed to a second worker
  EXPECT_FALSE(get_now(queue, clock).has_value());
  queue.done("a");
  EXPECT_EQ(get_now(queue, clock), "a");
}

TEST(WorkQueue, DelayedAddsWakeAtTheirTimeAndTheEarliestWins) {
  FakeClock clock;
  WorkQueue queue(clock);
  queue.add_after("late", Millis(5000));
  queue.add_after("late", Millis(1000));  // earlier: replaces
  queue.add_after("late", Millis(3000));  // later: ignored
  EXPECT_FALSE(get_now(queue, clock).has_value());
  clock.advance(Millis(999));
  EXPECT_FALSE(get_now(queue, clock).has_value());
  clock.advance(Millis(1));
  EXPECT_EQ(get_now(queue, clock), "late");
}

TEST(WorkQueue, ABlockedWorkerWaitsOnTheClockForTheNextDueKey) {
  FakeClock clock;
  WorkQueue queue(clock);
  const MonoTime start = clock.monotonic();
  queue.add_after("late", Millis(5000));
  std::optional<std::string> got;
  std::atomic<bool> returned{false};
  std::jthread worker([&](std::stop_token stop) {
    got = queue.get(stop);
    returned = true;
  });
  // The worker sleeps until exactly the key's time on the queue's clock, not in slices.
  ASSERT_TRUE(wait_until([&] { return clock.deadlines() == std::vector<MonoTime>{start + Millis(5000)}; }));
  queue.add_after("sooner", Millis(1000));  // an earlier key shortens the wait
  ASSERT_TRUE(wait_until([&] { return clock.deadlines() == std::vector<MonoTime>{start + Millis(1000)}; }));
  EXPECT_FALSE(returned.load());
  clock.advance(Millis(1000));  // moving the clock is what wakes it
  ASSERT_TRUE(wait_until([&] { return returned.load(); }));
  EXPECT_EQ(got, "sooner");
}

TEST(WorkQueue, FailuresBackOffExponentiallyAndForgetResets) {
  FakeClock clock;
  WorkQueue queue(clock, WorkQueueOptions{Millis(10), Millis(1000)});
  for (int i = 0; i < 3; ++i) {
    queue.add_rate_limited("k");
    const Millis expected = Millis(10) * (1 << i);
    clock.advance(expected - Millis(1));
    EXPECT_FALSE(get_now(queue, clock).has_value()) << "attempt " << i;
    clock.advance(Millis(1));
    ASSERT_EQ(get_now(queue, clock), "k") << "attempt " << i;
    queue.done("k");
  }
  EXPECT_EQ(queue.num_requeues("k"), 3);
  queue.forget("k");
  EXPECT_EQ(queue.num_requeues("k"), 0);
}

TEST(WorkQueue, ShutDownWakesBlockedWorkers) {
  FakeClock clock;
  WorkQueue queue(clock);
  std::atomic<bool> returned{false};
  std::jthread worker([&] {
    EXPECT_FALSE(queue.get(std::stop_token()).has_value());
    returned = true;
  });
  queue.shut_down();
  EXPECT_TRUE(wait_until([&] { return returned.load(); }));
}

TEST(WorkQueue, NoKeyIsEverHeldByTwoWorkers) {
  SystemClock& clock = SystemClock::instance();
  WorkQueue queue(clock);
  std::mutex mutex;
  std::set<std::string> held;
  std::atomic<int> processed{0};
  std::atomic<bool> overlap{false};
  std::vector<std::jthread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&](std::stop_token stop) {
      while (auto key = queue.get(stop)) {
        {
          std::lock_guard lock(mutex);
          if (!held.insert(*key).second) overlap = true;
        }
        std::this_thread::yield();
        {
          std::lock_guard lock(mutex);
          held.erase(*key);
        }
        ++processed;
        queue.done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) queue.add("key-" + std::to_string(i % 7));
  EXPECT_TRUE(wait_until([&] { return queue.len() == 0 && processed.load() >= 7; }));
  queue.shut_down();
  workers.clear();
  EXPECT_FALSE(overlap.load());
}

}  // namespace
}  // namespace eslease::controller
