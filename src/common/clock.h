// Time as a seam: logic asks a Clock, so tests drive time with a FakeClock.
// Wall time is for timestamps written to documents and objects; monotonic time is for
// every decision about durations (expiry, backoff, leader election), as in client-go's
// leaderelection, which never trusts another machine's clock.
#pragma once

#include <chrono>
#include <condition_variable>
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
};

class SystemClock final : public Clock {
 public:
  WallTime now() const override { return std::chrono::system_clock::now(); }
  MonoTime monotonic() const override { return std::chrono::steady_clock::now(); }
  bool sleep_for(Millis d, std::stop_token stop) override;

  // The process-wide real clock.
  static SystemClock& instance();

 private:
  std::mutex mutex_;
  std::condition_variable_any cv_;
};

}  // namespace eslease
