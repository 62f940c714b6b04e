// What the controller reports as it works, for metrics. An interface so the controller's
// logic does not depend on the metrics library and tests can count what happened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace eslease::controller {

class Observer {
 public:
  virtual ~Observer() = default;
  // A new grant (a new fencing token): an acquire of a free lock or a takeover.
  virtual void granted(double acquire_wait_seconds) {}
  // A takeover: `latency` from the holder seen dead to the successor's grant, when known.
  virtual void taken_over(std::string_view reason, std::optional<double> latency_seconds) {}
  virtual void released() {}
  // A claim gave up waiting: its status turned TimedOut (once per claim).
  virtual void claim_timed_out(std::string_view priority) {}
  virtual void expired() {}
  virtual void renewal_failed() {}
  virtual void backend_conflict(std::string_view op) {}
  virtual void reconciled(std::string_view result, double seconds) {}
  virtual void queue_depth(std::size_t depth) {}
  virtual void leading(bool leader) {}
  // Claims by (phase, priority), and how many wait.
  virtual void claims(const std::map<std::pair<std::string, std::string>, int>& by_phase_priority,
                      int waiters) {}
  // The slots of every claimed lock (a lock of capacity N has N), held and free.
  virtual void lock_slots(std::int64_t held, std::int64_t free) {}
};

}  // namespace eslease::controller
