#include "common/clock.h"

namespace eslease {

bool SystemClock::sleep_for(Millis d, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  // wait_for with a stop_token wakes up as soon as a stop is requested.
  cv_.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

bool SystemClock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable_any& cv,
                             MonoTime deadline, std::stop_token stop, const std::function<bool()>& ready) {
  // No deadline is a plain wait: a time point at the end of the clock's range is not one
  // every platform's timed wait converts without overflow.
  if (deadline == MonoTime::max()) return cv.wait(lock, stop, ready);
  return cv.wait_until(lock, stop, deadline, ready);
}

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace eslease
