#include "cli/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

}  // namespace

int supervise(Hold& hold, Clock& clock, const SuperviseOptions& options, std::ostream& err) {
  ChildArguments child = child_arguments(options.command, options.environment);
  SignalCatcher signals;  // forwarded to the command below
  const pid_t pid = fork();
  if (pid < 0) {
    err << "eslease: cannot start " << options.command[0] << ": " << std::strerror(errno) << "\n";
    hold.finish(false);
    return 127;
  }
  if (pid == 0) {
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

  setpgid(pid, pid);  // also here: whichever runs first, the group exists before any kill
  const auto signal_command = [pid](int signal_number) { kill(-pid, signal_number); };

  bool stopping = false;  // stopped because of the lock
  bool lost = false;
  bool killed = false;
  MonoTime kill_at{};
  int wait_status = 0;

  // SIGTERM now, SIGKILL at `deadline` at the latest.
  const auto stop_child = [&](MonoTime deadline) {
    if (stopping) {
      kill_at = std::min(kill_at, deadline);
      return;
    }
    stopping = true;
    kill_at = deadline;
    signal_command(SIGTERM);
  };

  for (;;) {
    const pid_t waited = waitpid(pid, &wait_status, WNOHANG);
    if (waited == pid) break;
    if (waited < 0 && errno != EINTR) {
      err << "eslease: lost track of the command: " << std::strerror(errno) << "\n";
      wait_status = 1 << 8;
      break;
    }
    if (const int forwarded = signals.take(); forwarded != 0) signal_command(forwarded);

    const Hold::State state = hold.check();
    const MonoTime now = clock.monotonic();
    if (state.lost && !lost) {
      lost = true;
      err << "eslease: " << state.why << "; stopping the command\n";
      stop_child(std::min(now + options.grace, state.confirmed_until));
    }
    if (!stopping && now + options.grace >= state.confirmed_until) {
      err << "eslease: cannot confirm lock " << options.lock_id
          << " before it expires; stopping the command\n";
      stop_child(state.confirmed_until);
    }
    if (stopping && !killed && now >= kill_at) {
      signal_command(SIGKILL);
      killed = true;
    }
    clock.sleep_for(Millis(20), {});
  }

  // The command is gone; anything it started must not outlive a lock we no longer confirm.
  if (stopping) signal_command(SIGKILL);
  hold.finish(lost);
  return stopping ? kExitLockLost : exit_code_of(wait_status);
}

}  // namespace eslease::cli
