// A Clock whose time moves only when a test says so (or when code sleeps on it).
#pragma once

#include <atomic>
#include <mutex>

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

  void advance(Millis d) {
    std::lock_guard lock(mutex_);
    wall_ += d;
    mono_ += d;
  }
  int sleeps() const { return sleeps_.load(); }

 private:
  mutable std::mutex mutex_;
  WallTime wall_;
  MonoTime mono_{};
  std::atomic<int> sleeps_{0};
};

}  // namespace eslease::testing
