// SIGINT and SIGTERM, acted on outside signal context. A signal handler may only do
// async-signal-safe things; stopping a process means running callbacks that take mutexes
// (std::stop_source::request_stop() runs every registered stop callback), and a handler that
// did so on a thread already holding one of those mutexes would deadlock. So the handler
// only writes the signal's number to a pipe, and a thread of the catcher's own reads it and
// acts. The controller and the tool both stop this way.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "common/result.h"

namespace eslease {

class SignalCatcher {
 public:
  // What SIGINT and SIGTERM do once the catcher goes.
  enum class Afterwards {
    kRestore,  // what they did before it came
    kIgnore,   // nothing: the process is ending, and a late signal must not change its exit code
  };

  // Catches SIGINT and SIGTERM while the catcher lives. `on_signal`, if set, runs on the
  // catcher's thread once per signal caught. Catchers nest: the newest one catches. An error
  // (kInternal) when the process has no file descriptor or thread left for it.
  static Result<std::unique_ptr<SignalCatcher>> start(std::function<void(int signal_number)> on_signal = {},
                                                      Afterwards afterwards = Afterwards::kRestore);
  ~SignalCatcher();
  SignalCatcher(const SignalCatcher&) = delete;
  SignalCatcher& operator=(const SignalCatcher&) = delete;

  // The latest signal caught, 0 when none.
  int last() const { return last_.load(); }
  // The latest signal caught and not taken yet (0 when none), taken: for forwarding each once.
  int take() { return pending_.exchange(0); }

 private:
  SignalCatcher(std::function<void(int)> on_signal, Afterwards afterwards, int read_fd, int write_fd);
  void read_signals();

  std::function<void(int)> on_signal_;
  Afterwards afterwards_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  int previous_fd_ = -1;  // the catcher this one nests in, or -1
  std::atomic<int> last_{0};
  std::atomic<int> pending_{0};
  struct Dispositions;
  std::unique_ptr<Dispositions> previous_;  // SIGINT's and SIGTERM's before
  std::thread thread_;
};

}  // namespace eslease
