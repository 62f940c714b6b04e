#include "cli/supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ostream>

#include "common/backoff.h"

extern char** environ;

namespace eslease::cli {
namespace {

std::atomic<int> g_pending_signal{0};

extern "C" void remember_signal(int signal_number) {
  g_pending_signal.store(signal_number);
}

// argv/envp are built before fork(): after it, the child may only call async-signal-safe
// functions (the parent has other threads).
struct ChildArguments {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
};

ChildArguments child_arguments(const std::vector<std::string>& command, const std::string& token,
                               const std::string& lock_id) {
  ChildArguments out;
  out.storage.reserve(command.size() + 2);
  for (const std::string& arg : command) out.storage.push_back(arg);
  const std::size_t env_start = out.storage.size();
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (entry.rfind("ESLEASE_FENCING_TOKEN=", 0) == 0 || entry.rfind("ESLEASE_LOCK=", 0) == 0) continue;
    out.storage.emplace_back(entry);
  }
  out.storage.push_back("ESLEASE_FENCING_TOKEN=" + token);
  out.storage.push_back("ESLEASE_LOCK=" + lock_id);
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

class SignalForwarding {
 public:
  SignalForwarding() {
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalForwarding() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

int supervise(lock::LockStore& store, Clock& clock, const lock::LockKey& key, lock::Grant grant,
              const SuperviseOptions& options, std::ostream& err) {
  ChildArguments child = child_arguments(options.command, std::to_string(grant.state.token), key.id());
  SignalForwarding forwarding;
  const pid_t pid = fork();
  if (pid < 0) {
    err << "eslease: cannot start " << options.command[0] << ": " << std::strerror(errno) << "\n";
    (void)store.release(key, grant);
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

  const Millis renew_every = std::max(Millis(1), options.ttl / 3);
  Backoff retry(BackoffPolicy{Millis(100), std::max(Millis(100), options.ttl / 10), 2.0});
  MonoTime next_renew = clock.monotonic() + renew_every;
  bool held = true;   // we may still own the document (release it at the end)
  bool lost = false;  // another grant replaced ours
  bool stopping = false;
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
    if (const int forwarded = g_pending_signal.exchange(0); forwarded != 0) signal_command(forwarded);

    MonoTime now = clock.monotonic();
    if (held && !lost && now >= grant.valid_until) {
      // Past the deadline nobody may rely on our hold any more, confirmed or not.
      held = false;
      err << "eslease: lock " << key.id() << " expired before it could be renewed\n";
    }
    if (held && now >= next_renew) {
      auto renewed = store.renew(key, grant, options.ttl);
      now = clock.monotonic();
      if (renewed.ok() && renewed->grant) {
        grant = std::move(*renewed->grant);
        next_renew = renewed->renewed ? now + renew_every : now;
        if (renewed->renewed) retry.reset();
      } else if (renewed.ok()) {
        held = false;
        lost = true;
        err << "eslease: lock " << key.id() << " was lost"
            << (renewed->current ? " to " + renewed->current->doc.holder : std::string())
            << "; stopping the command\n";
        stop_child(now + options.grace);
      } else {
        err << "eslease: cannot renew " << key.id() << ": " << renewed.error().describe() << "\n";
        next_renew = now + retry.next();
      }
    }
    if (!stopping && !lost && now + options.grace >= grant.valid_until) {
      err << "eslease: cannot confirm lock " << key.id() << " before it expires; stopping the command\n";
      stop_child(grant.valid_until);
    }
    if (stopping && !killed && now >= kill_at) {
      signal_command(SIGKILL);
      killed = true;
    }
    Millis nap(20);
    if (held) nap = std::min(nap, std::max(Millis(1), std::chrono::ceil<Millis>(next_renew - now)));
    clock.sleep_for(nap, {});
  }

  // The command is gone; anything it started must not outlive a lock we no longer confirm.
  if (stopping) signal_command(SIGKILL);

  if (!lost) {
    auto released = store.release(key, grant);
    if (!released.ok()) {
      err << "eslease: cannot release " << key.id()
          << " (it expires on its own): " << released.error().describe() << "\n";
    }
  }
  return exit_code_of(wait_status);
}

}  // namespace eslease::cli
