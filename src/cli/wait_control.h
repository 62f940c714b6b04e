// Ends a blocking wait (a watch) from outside: when a time limit runs out, or when the
// process gets SIGINT or SIGTERM, so that the tool can clean up what it created before it
// exits instead of dying with a claim left in the queue.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <thread>

#include "common/clock.h"
#include "common/signals.h"

namespace eslease::cli {

class WaitControl {
 public:
  // `limit` unset: no time limit. `on_hint` runs once, on the control's own thread, when
  // `hint_after` has passed and the wait is still going (to say why it takes long).
  WaitControl(Clock& clock, std::optional<Millis> limit, bool catch_signals, Millis hint_after = Millis(0),
              std::function<void()> on_hint = {});
  ~WaitControl();
  WaitControl(const WaitControl&) = delete;
  WaitControl& operator=(const WaitControl&) = delete;

  // Set when signals were to be caught and could not be: the wait must not start.
  const std::optional<Error>& failure() const { return failure_; }
  std::stop_token token() const { return source_.get_token(); }
  bool timed_out() const { return timed_out_.load(); }
  int interrupted_by() const;  // the signal number, 0 when none

 private:
  Clock& clock_;
  std::stop_source source_;
  std::atomic<bool> timed_out_{false};
  std::unique_ptr<SignalCatcher> signals_;  // set when catching signals; goes before source_
  std::optional<Error> failure_;
  std::jthread thread_;
};

}  // namespace eslease::cli
