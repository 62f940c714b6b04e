#include "cli/wait_control.h"

namespace eslease::cli {

WaitControl::WaitControl(Clock& clock, std::optional<Millis> limit, bool catch_signals, Millis hint_after,
                         std::function<void()> on_hint)
    : clock_(clock) {
  if (catch_signals) {
    auto started = SignalCatcher::start([this](int) { source_.request_stop(); });
    if (!started.ok()) {
      failure_ = started.error();
      source_.request_stop();
      return;
    }
    signals_ = std::move(*started);
  }
  const MonoTime start = clock_.monotonic();
  thread_ = std::jthread([this, start, limit, hint_after, on_hint = std::move(on_hint)](std::stop_token own) {
    bool hinted = !on_hint;
    while (!own.stop_requested() && !source_.stop_requested()) {
      const MonoTime now = clock_.monotonic();
      if (limit && now - start >= *limit) {
        timed_out_.store(true);
        source_.request_stop();
        break;
      }
      if (!hinted && now - start >= hint_after) {
        hinted = true;
        on_hint();
      }
      Millis nap(20);
      if (limit) nap = std::min(nap, std::max(Millis(1), std::chrono::ceil<Millis>(start + *limit - now)));
      clock_.sleep_for(nap, own);
    }
  });
}

WaitControl::~WaitControl() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

int WaitControl::interrupted_by() const {
  return signals_ ? signals_->last() : 0;
}

}  // namespace eslease::cli
