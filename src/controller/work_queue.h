// A rate-limited delaying work queue keyed by lock, with client-go's guarantees:
// - repeated adds of a waiting key collapse into one;
// - a key being processed is never handed to a second worker: an add meanwhile marks it
//   dirty, and done() queues it again;
// - add_after() wakes a key later (the earliest pending wake-up wins);
// - add_rate_limited() backs a failing key off exponentially (base doubling to max), and
//   forget() resets it after a success.
// All timing goes through the Clock seam; ready keys come out first in, first out.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "common/clock.h"

namespace eslease::controller {

struct WorkQueueOptions {
  Millis base_delay{5};
  Millis max_delay{std::chrono::seconds(60)};
};

class WorkQueue {
 public:
  explicit WorkQueue(Clock& clock, WorkQueueOptions options = {});

  void add(const std::string& key);
  void add_after(const std::string& key, Millis delay);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  int num_requeues(const std::string& key) const;

  // Blocks until a key is ready; nullopt after shut_down() or when `stop` is requested.
  std::optional<std::string> get(std::stop_token stop);
  void done(const std::string& key);
  void shut_down();
  std::size_t len() const;

 private:
  void add_locked(const std::string& key);
  // Drops the key's planned wake-up, if it has one.
  void unschedule_locked(const std::string& key);
  // Moves due delayed keys to the ready queue; returns the next due time, if any.
  std::optional<MonoTime> promote_due_locked(MonoTime now);

  Clock& clock_;
  WorkQueueOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable_any cv_;
  std::deque<std::string> ready_;
  // Hashed where nothing walks the keys in order: a cold start queues every lock at once.
  std::unordered_set<std::string> dirty_;                // queued or to be queued once processing ends
  std::unordered_set<std::string> processing_;           // handed to a worker
  std::unordered_map<std::string, MonoTime> waiting_;    // delayed key -> due time
  std::multimap<MonoTime, std::string> waiting_by_due_;  // the same, by due time
  std::unordered_map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace eslease::controller
