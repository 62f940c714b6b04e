// A Clock whose time moves only when a test says so (or when code sleeps on it).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "common/clock.h"

namespace eslease::testing {

class FakeClock final : public Clock {
 public:
  FakeClock() : wall_(std::chrono::system_clock::from_time_t(1'800'000'000)) {}

  WallTime now() const override {
    std::lock_guard lock(mutex_);
    return wall_;
  }
  MonoTime monotonic() const override {
    std::lock_guard lock(mutex_);
    return mono_;
  }
  // Sleeping advances fake time at once, so retry loops run instantly and deterministically.
  bool sleep_for(Millis d, std::stop_token stop) override {
    if (stop.stop_requested()) return false;
    advance(d);
    sleeps_.fetch_add(1);
    return !stop.stop_requested();
  }

  // Waits until `ready()`, the fake time reaching `deadline`, or `stop`. advance() wakes it.
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv, MonoTime deadline,
                  std::stop_token stop, const std::function<bool()>& ready) override {
    // The clock's mutex is held with the caller's from every check of the fake time until
    // `cv` has the waiter blocked (a condition variable releases both atomically), so
    // advance(), which notifies under the clock's mutex, cannot slip in between and be missed.
    std::unique_lock mine(mutex_);
    BothLocks both{lock, mine};
    const auto waiting = waiting_.emplace(deadline, &cv);
    cv.wait(both, stop, [&] { return ready() || mono_ >= deadline; });
    const bool result = ready();
    waiting_.erase(waiting);
    return result;
  }

  void advance(Millis d) {
    std::lock_guard lock(mutex_);
    wall_ += d;
    mono_ += d;
    for (const auto& [deadline, cv] : waiting_) cv->notify_all();
  }
  int sleeps() const { return sleeps_.load(); }
  // The deadlines of the waits in progress (MonoTime::max(): none), earliest first: what a
  // thread blocked on this clock is waiting for.
  std::vector<MonoTime> deadlines() const {
    std::lock_guard lock(mutex_);
    std::vector<MonoTime> out;
    for (const auto& [deadline, cv] : waiting_) out.push_back(deadline);
    return out;
  }
  std::size_t waiters() const { return deadlines().size(); }

 private:
  // Locks the caller's mutex, then the clock's, in the order every path takes them.
  struct BothLocks {
    std::unique_lock<std::mutex>& theirs;
    std::unique_lock<std::recursive_mutex>& mine;
    void lock() {
      theirs.lock();
      mine.lock();
    }
    void unlock() {
      mine.unlock();
      theirs.unlock();
    }
  };

  // Recursive: a waiter's predicate may read the time while the waiter holds the mutex.
  mutable std::recursive_mutex mutex_;
  WallTime wall_;
  MonoTime mono_{};
  std::multimap<MonoTime, std::condition_variable_any*> waiting_;
  std::atomic<int> sleeps_{0};
};

}  // namespace eslease::testing
