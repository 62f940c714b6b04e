#include "cli/wait_control.h"

#include <signal.h>

namespace eslease::cli {
namespace {

std::atomic<int> g_wait_signal{0};
struct sigaction g_old_int {};
struct sigaction g_old_term {};

extern "C" void remember_wait_signal(int signal_number) {
  g_wait_signal.store(signal_number);
}

}  // namespace

WaitControl::WaitControl(Clock& clock, std::optional<Millis> limit, bool catch_signals, Millis hint_after,
                         std::function<void()> on_hint)
    : clock_(clock), catch_signals_(catch_signals) {
  if (catch_signals_) {
    g_wait_signal.store(0);
    struct sigaction action {};
    action.sa_handler = remember_wait_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &g_old_int);
    sigaction(SIGTERM, &action, &g_old_term);
  }
  const MonoTime start = clock_.monotonic();
  thread_ = std::jthread([this, start, limit, hint_after, on_hint = std::move(on_hint)](std::stop_token own) {
    bool hinted = !on_hint;
    // A short tick: a signal handler can only set a flag, and this is where it is noticed.
    while (!own.stop_requested() && !source_.stop_requested()) {
      const MonoTime now = clock_.monotonic();
      if (limit && now - start >= *limit) {
        timed_out_.store(true);
        source_.request_stop();
        break;
      }
      if (catch_signals_ && g_wait_signal.load() != 0) {
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
  if (catch_signals_) {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
  }
}

int WaitControl::interrupted_by() const {
  return catch_signals_ ? g_wait_signal.load() : 0;
}

}  // namespace eslease::cli
