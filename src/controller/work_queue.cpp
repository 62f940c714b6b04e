#include "controller/work_queue.h"

#include <algorithm>
#include <cmath>

namespace eslease::controller {

WorkQueue::WorkQueue(Clock& clock, WorkQueueOptions options) : clock_(clock), options_(options) {}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mutex_);
  add_locked(key);
}

void WorkQueue::add_locked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key)) return;
  dirty_.insert(key);
  unschedule_locked(key);
  if (processing_.count(key)) return;  // queued again by done()
  ready_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::unschedule_locked(const std::string& key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  auto range = waiting_by_due_.equal_range(it->second);
  auto w = std::find_if(range.first, range.second, [&](const auto& entry) { return entry.second == key; });
  if (w != range.second) waiting_by_due_.erase(w);
  waiting_.erase(it);
}

void WorkQueue::add_after(const std::string& key, Millis delay) {
  if (delay <= Millis(0)) {
    add(key);
    return;
  }
  std::lock_guard lock(mutex_);
  if (shutting_down_ || dirty_.count(key)) return;  // already due now
  const MonoTime due = clock_.monotonic() + delay;
  if (auto it = waiting_.find(key); it != waiting_.end() && it->second <= due)
    return;  // an earlier wake-up is already planned
  unschedule_locked(key);
  waiting_[key] = due;
  waiting_by_due_.emplace(due, key);
  cv_.notify_all();
}

void WorkQueue::add_rate_limited(const std::string& key) {
  Millis delay;
  {
    std::lock_guard lock(mutex_);
    const int failures = failures_[key]++;
    const double factor = std::pow(2.0, std::min(failures, 30));
    delay =
        std::min(options_.max_delay,
                 Millis(static_cast<Millis::rep>(static_cast<double>(options_.base_delay.count()) * factor)));
  }
  add_after(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  failures_.erase(key);
}

int WorkQueue::num_requeues(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<MonoTime> WorkQueue::promote_due_locked(MonoTime now) {
  while (!waiting_by_due_.empty() && waiting_by_due_.begin()->first <= now) {
    const std::string key = waiting_by_due_.begin()->second;
    waiting_by_due_.erase(waiting_by_due_.begin());
    waiting_.erase(key);
    add_locked(key);
  }
  if (waiting_by_due_.empty()) return std::nullopt;
  return waiting_by_due_.begin()->first;
}

std::optional<std::string> WorkQueue::get(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (true) {
    if (shutting_down_ || stop.stop_requested()) return std::nullopt;
    const std::optional<MonoTime> next_due = promote_due_locked(clock_.monotonic());
    if (!ready_.empty()) {
      std::string key = std::move(ready_.front());
      ready_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      return key;
    }
    // Until the next key is due, or something changes: a key becomes ready, or one is
    // delayed to an earlier time than the one waited for.
    clock_.wait_until(lock, cv_, next_due.value_or(MonoTime::max()), stop, [&] {
      return shutting_down_ || !ready_.empty() ||
             (!waiting_by_due_.empty() && (!next_due || waiting_by_due_.begin()->first < *next_due));
    });
  }
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mutex_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutting_down_) {
    ready_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shut_down() {
  std::lock_guard lock(mutex_);
  shutting_down_ = true;
  cv_.notify_all();
}

std::size_t WorkQueue::len() const {
  std::lock_guard lock(mutex_);
  return ready_.size();
}

}  // namespace eslease::controller
