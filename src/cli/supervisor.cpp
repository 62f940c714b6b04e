#include "cli/supervisor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <ostream>

#include "cli/child_process.h"
#include "cli/exit_codes.h"
#include "common/duration.h"
#include "common/signals.h"

namespace eslease::cli {
namespace {

// The command's process group, and how far stopping it has gone: SIGTERM first, SIGKILL at
// a deadline at the latest.
class RunningCommand {
 public:
  explicit RunningCommand(pid_t pid) : pid_(pid) {}

  void signal_group(int signal_number) const { kill(-pid_, signal_number); }
  bool stopping() const { return stopping_; }
  // Stopped because the lock was lost or could not be confirmed (not merely the leftovers of
  // a command that ended by itself).
  bool stopped_for_lock() const { return stopped_for_lock_; }
  void stop_for_lock(MonoTime deadline) {
    stopped_for_lock_ = true;
    stop(deadline);
  }
  // Some process of the group is still running (or not yet reaped).
  // A member we may not signal (it changed its user) still counts: we cannot stop it.
  bool group_alive() const { return kill(-pid_, 0) == 0 || errno == EPERM; }

  // SIGTERM now (once), SIGKILL at `deadline` at the latest.
  void stop(MonoTime deadline) {
    if (stopping_) {
      kill_at_ = std::min(kill_at_, deadline);
      return;
    }
    stopping_ = true;
    kill_at_ = deadline;
    signal_group(SIGTERM);
  }

  void kill_when_due(MonoTime now) {
    if (!stopping_ || killed_ || now < kill_at_) return;
    signal_group(SIGKILL);
    killed_ = true;
  }

 private:
  pid_t pid_;
  bool stopping_ = false;  // asked to stop
  bool killed_ = false;
  bool stopped_for_lock_ = false;
  MonoTime kill_at_{};
};

// One turn of the supervisor's loop: stops the command when the hold is lost (`lost` then
// set) or cannot be confirmed `grace` before it ends.
void check_hold(Hold& hold, Clock& clock, const SuperviseOptions& options, std::ostream& err,
                RunningCommand& command, bool& lost) {
  const Hold::State state = hold.check();
  const MonoTime now = clock.monotonic();
  if (state.lost && !lost) {
    lost = true;
    err << "eslease: " << state.why << "; stopping the command\n";
    command.stop_for_lock(std::min(now + options.grace, state.confirmed_until));
  }
  if (!command.stopped_for_lock() && now + options.grace >= state.confirmed_until) {
    err << "eslease: cannot confirm lock " << options.lock_id << " before it expires; stopping the command\n";
    command.stop_for_lock(state.confirmed_until);
  }
  command.kill_when_due(now);
}

// Reaps every child that has exited: the command, and (as a subreaper) whatever it started
// and left behind. Records the command's own status once it has exited.
void reap_children(pid_t command_pid, std::optional<int>& command_status) {
  for (;;) {
    int status = 0;
    const pid_t reaped = waitpid(-1, &status, WNOHANG);
    if (reaped <= 0) return;
    if (reaped == command_pid) command_status = status;
  }
}

// --hold-at-least: the command and all it started have ended before `until`; the grant is
// kept (the hold goes on renewing or following it) until then, unless it is lost first or a
// signal asks to let go now. Sets `lost` when it was lost meanwhile.
void hold_until(Hold& hold, Clock& clock, MonoTime until, const SuperviseOptions& options,
                SignalCatcher& signals, std::ostream& err, bool& lost) {
  if (clock.monotonic() >= until) return;
  err << "eslease: the command ended; keeping lock " << options.lock_id << " until "
      << format_duration(*options.hold_at_least) << " after it was granted (--hold-at-least)\n";
  err.flush();
  while (clock.monotonic() < until) {
    if (const int signal_number = signals.take(); signal_number != 0) {
      err << "eslease: interrupted by signal " << signal_number << "; letting go of lock " << options.lock_id
          << " now\n";
      return;
    }
    const Hold::State state = hold.check();
    if (state.lost || clock.monotonic() >= state.confirmed_until) {
      lost = true;
      err << "eslease: " << (state.lost ? state.why : "cannot confirm lock " + options.lock_id)
          << " while keeping it (--hold-at-least)\n";
      return;
    }
    clock.sleep_for(Millis(20), {});
  }
}

}  // namespace

int supervise(Hold& hold, Clock& clock, const SuperviseOptions& options, std::ostream& err) {
  ChildCommand child(options.command, options.environment);
  auto catcher = SignalCatcher::start();  // forwarded to the command below
  if (!catcher.ok()) {
    err << "eslease: " << catcher.error().message << "\n";
    hold.finish(false);
    return 1;
  }
  SignalCatcher& signals = **catcher;
  // Processes the command starts and leaves behind become our children when it exits, so we
  // can see them go and reap them, whatever the container's init does.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would reap the command before we see its status
  const MonoTime granted_at = options.granted_at.value_or(clock.monotonic());
  const pid_t pid = child.start_in_own_group();
  if (pid < 0) {
    err << "eslease: cannot start " << options.command[0] << ": " << std::strerror(errno) << "\n";
    hold.finish(false);
    return 127;
  }

  RunningCommand command(pid);
  bool lost = false;
  std::optional<int> wait_status;
  // The lock is let go of only when nothing of the command's group runs any more: a process
  // it left running in the background would otherwise work on beside the next holder.
  for (;;) {
    reap_children(pid, wait_status);
    if (!wait_status && !command.group_alive()) {
      err << "eslease: lost track of the command\n";
      wait_status = 1 << 8;
    }
    if (wait_status && !command.group_alive()) break;
    if (wait_status && !command.stopping()) {
      err << "eslease: the command exited, but processes it started still run; stopping them before "
             "letting go of lock "
          << options.lock_id << "\n";
      command.stop(std::min(clock.monotonic() + options.grace, hold.check().confirmed_until));
    }
    if (const int forwarded = signals.take(); forwarded != 0) command.signal_group(forwarded);
    check_hold(hold, clock, options, err, command, lost);
    clock.sleep_for(Millis(20), {});
  }
  // A grant lost while it is kept stopped nothing: the exit code stays the command's.
  if (options.hold_at_least && !lost)
    hold_until(hold, clock, granted_at + *options.hold_at_least, options, signals, err, lost);
  hold.finish(lost);
  return command.stopped_for_lock() ? kExitLockLost : exit_code_of(*wait_status);
}

}  // namespace eslease::cli
