#include "common/clock.h"

namespace eslease {

bool SystemClock::sleep_for(Millis d, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  // wait_for with a stop_token wakes up as soon as a stop is requested.
  cv_.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  return clock;
}

}  // namespace eslease
