// Waiting for a condition with a deadline: the only way tests wait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>

namespace eslease::testing {

// Polls `condition` until it holds or `deadline` passes. Returns whether it held.
inline bool wait_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return condition();
}

// Blocks until `stop` is requested, without polling: a leader's work, a quiet server.
inline void block_until_stopped(std::stop_token stop) {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::unique_lock lock(mutex);
  cv.wait(lock, stop, [] { return false; });
}

}  // namespace eslease::testing
