#include "cli/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

extern char** environ;

namespace eslease::cli {

ChildCommand::ChildCommand(const std::vector<std::string>& command,
                           const std::vector<std::pair<std::string, std::string>>& environment) {
  storage_.reserve(command.size() + 2);
  for (const std::string& arg : command) storage_.push_back(arg);
  const std::size_t env_start = storage_.size();
  const auto replaced = [&environment](std::string_view entry) {
    return std::any_of(environment.begin(), environment.end(),
                       [entry](const auto& variable) { return entry.starts_with(variable.first + "="); });
  };
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    if (!replaced(entry)) storage_.emplace_back(entry);
  }
  for (const auto& [name, value] : environment) storage_.push_back(name + "=" + value);
  for (std::size_t i = 0; i < env_start; ++i) argv_.push_back(storage_[i].data());
  argv_.push_back(nullptr);
  for (std::size_t i = env_start; i < storage_.size(); ++i) envp_.push_back(storage_[i].data());
  envp_.push_back(nullptr);
}

pid_t ChildCommand::start_in_own_group() {
  const pid_t pid = fork();
  if (pid != 0) {
    // Also here: whichever runs first, the group exists before anyone signals it.
    if (pid > 0) setpgid(pid, pid);
    return pid;
  }
  // In the child: only async-signal-safe calls from here on.
  setpgid(0, 0);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  execvpe(argv_[0], argv_.data(), envp_.data());
  static constexpr char kMessage[] = "eslease: cannot execute the command\n";
  (void)!write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  _exit(127);
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

}  // namespace eslease::cli
