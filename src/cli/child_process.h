// Starting a command from a process that has other threads: its argv and environment are
// built before fork(), because after it the child may only make async-signal-safe calls until
// it executes the command. `eslease run` starts its command so, and `eslease sidecar` its hooks.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace eslease::cli {

class ChildCommand {
 public:
  // `command` is the program and its arguments (the program is looked up on PATH);
  // `environment` replaces inherited values of the same names and adds the others.
  ChildCommand(const std::vector<std::string>& command,
               const std::vector<std::pair<std::string, std::string>>& environment);

  // Forks and executes the command in a process group of its own, so a signal to the group
  // reaches everything it starts. The child's pid, or -1 with errno set. In the child, a
  // command that cannot be executed says so on stderr and exits 127.
  pid_t start_in_own_group();

 private:
  std::vector<std::string> storage_;
  std::vector<char*> argv_;
  std::vector<char*> envp_;
};

// A wait status as an exit code: the code itself, or 128 + N when signal N ended it.
int exit_code_of(int wait_status);

}  // namespace eslease::cli
