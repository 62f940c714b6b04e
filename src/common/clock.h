// Time as a seam: logic asks a Clock, so tests drive time with a FakeClock.
// Wall time is for timestamps written to documents and objects; monotonic time is for
// every decision about durations (expiry, backoff, leader election), as in client-go's
// leaderelection, which never trusts another machine's clock.
//
// Every wait goes through the clock too: sleep_for, and wait_until for a condition variable
// with a deadline. A fake clock wakes those waits when its time moves, so code that waits
// for "a key due in 5 s" is tested by moving time 5 s, with no real waiting and no polling.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>

namespace eslease {

using WallTime = std::chrono::system_clock::time_point;
using MonoTime = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime now() const = 0;
  virtual MonoTime monotonic() const = 0;
  // Waits for `d` or until `stop` is requested. Returns false when stopped.
  virtual bool sleep_for(Millis d, std::stop_token stop) = 0;
  // Waits on `cv` until `ready()` holds, this clock's monotonic time reaches `deadline`
  // (MonoTime::max(): no deadline) or `stop` is requested, as
  // std::condition_variable_any::wait_until does; returns ready(). `lock` holds the mutex
  // that guards what `ready` reads; whoever changes that state does so under the mutex and
  // then notifies `cv`. (condition_variable_any, so a stop request wakes the wait too.)
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                          MonoTime deadline, std::stop_token stop, const std::function<bool()>& ready) = 0;
};

class SystemClock final : public Clock {
 public:
  WallTime now() const override { return std::chrono::system_clock::now(); }
  MonoTime monotonic() const override { return std::chrono::steady_clock::now(); }
  bool sleep_for(Millis d, std::stop_token stop) override;
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv, MonoTime deadline,
                  std::stop_token stop, const std::function<bool()>& ready) override;

  // The process-wide real clock.
  static SystemClock& instance();

 private:
  std::mutex mutex_;
  std::condition_variable_any cv_;
};

}  // namespace eslease
