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

#include "cli/exit_codes.h"
#include "common/signals.h"

extern char** environ;

namespace eslease::cli {
namespace {

// argv/envp are built before fork(): after it, the child may only call async-signal-safe
// functions (the parent has other threads).
struct ChildArguments {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ChildArguments child_arguments(const std::vector<std::string>& command,
                               const std::vector<std::pair<std::string, std::string>>& environment) {
  ChildArguments out;
  out.storage.reserve(command.size() + 2);
  for (const std::string& arg : command) out.storage.push_back(arg);
  const std::size_t env_start = out.storage.size();
  const auto replaced = [&environment](std::string_view entry) {
    for (const auto& [name, value] : environment) {
      if (entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=')
        return true;
    }
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!replaced(entry)) out.storage.emplace_back(entry);
  }
  for (const auto& [name, value] : environment) out.storage.push_back(name + "=" + value);
  for (std::size_t i = 0; i < env_start; ++i) out.argv.push_back(out.storage[i].data());
  out.argv.push_back(nullptr);
  for (std::size_t i = env_start; i < out.storage.size(); ++i) out.envp.push_back(out.storage[i].data());
  out.envp.push_back(nullptr);
  return out;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

// In the child after fork(): only async-signal-safe calls from here on.
[[noreturn]] void exec_command(ChildArguments& child) {
  // Its own process group, so stopping reaches every process the command started: a
  // grandchild left running after the lock is lost would break mutual exclusion.
  setpgid(0, 0);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  execvpe(child.argv[0], child.argv.data(), child.envp.data());
  static constexpr char kMessage[] = "eslease: cannot execute the command\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  _exit(127);
}

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

}  // namespace

int supervise(Hold& hold, Clock& clock, const SuperviseOptions& options, std::ostream& err) {
  ChildArguments child = child_arguments(options.command, options.environment);
  SignalCatcher signals;  // forwarded to the command below
  // Processes the command starts and leaves behind become our children when it exits, so we
  // can see them go and reap them, whatever the container's init does.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGCHLD, SIG_DFL);  // an inherited SIG_IGN would reap the command before we see its status
  const pid_t pid = fork();
  if (pid < 0) {
    err << "eslease: cannot start " << options.command[0] << ": " << std::strerror(errno) << "\n";
    hold.finish(false);
    return 127;
  }
  if (pid == 0) exec_command(child);

  setpgid(pid, pid);  // also here: whichever runs first, the group exists before any kill
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
  hold.finish(lost);
  return command.stopped_for_lock() ? kExitLockLost : exit_code_of(*wait_status);
}

}  // namespace eslease::cli
