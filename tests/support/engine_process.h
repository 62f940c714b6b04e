// A real OpenSearch node as a child process (tests/engines/opensearch/run.sh), for a C++
// harness that has no engine started for it: started on 127.0.0.1 port 0, its URL read from
// the line it prints, stopped (SIGTERM, then SIGKILL after 60 s) when this object goes.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"

extern char** environ;

namespace eslease::testing {

class EngineProcess {
 public:
  // run.sh of this source tree, or ESLEASE_OPENSEARCH_RUN_SH; its log goes to `log_path`.
  static Result<std::unique_ptr<EngineProcess>> start(
      const std::string& run_sh, const std::string& log_path,
      std::chrono::seconds timeout = std::chrono::seconds(600)) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return make_error(ErrorCode::kInternal, "pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<std::string> args{run_sh, "--listen", "127.0.0.1:0"};
    if (const char* version = std::getenv("ESLEASE_TEST_OPENSEARCH_VERSION");
        version != nullptr && *version) {
      args.insert(args.end(), {"--version", version});
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, run_sh.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (spawned != 0) {
      close(out[0]);
      return make_error(ErrorCode::kInternal, "cannot start " + run_sh);
    }
    auto engine = std::unique_ptr<EngineProcess>(new EngineProcess(pid, out[0]));
    const std::regex listening("opensearch listening on (\\S+)");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string text;
    std::smatch found;
    while (!std::regex_search(text, found, listening)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd readable{out[0], POLLIN, 0};
      if (left.count() <= 0 || poll(&readable, 1, static_cast<int>(left.count())) <= 0) {
        return make_error(ErrorCode::kTimeout, "OpenSearch did not start in time; its log: " + log_path);
      }
      char buffer[4096];
      const ssize_t n = read(out[0], buffer, sizeof buffer);
      if (n <= 0)
        return make_error(ErrorCode::kUnavailable,
                          "OpenSearch exited before listening; its log: " + log_path);
      text.append(buffer, static_cast<std::size_t>(n));
    }
    engine->url_ = found[1];
    return engine;
  }

  ~EngineProcess() {
    kill(pid_, SIGTERM);
    bool exited = false;
    for (int i = 0; i < 600 && !exited; ++i) {
      exited = waitpid(pid_, nullptr, WNOHANG) == pid_;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!exited) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(fd_);
  }
  EngineProcess(const EngineProcess&) = delete;
  EngineProcess& operator=(const EngineProcess&) = delete;

  const std::string& url() const { return url_; }

 private:
  EngineProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  pid_t pid_;
  int fd_;
  std::string url_;
};

}  // namespace eslease::testing
