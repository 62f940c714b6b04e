#include "common/signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace eslease {
namespace {

// Where the handler writes: the newest catcher's pipe.
std::atomic<int> g_signal_fd{-1};

extern "C" void write_signal(int signal_number) {
  const int saved = errno;
  const int fd = g_signal_fd.load();
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  if (fd >= 0) (void)!write(fd, &byte, 1);  // a full pipe already says a signal came
  errno = saved;
}

constexpr unsigned char kStop = 0;  // written by the destructor: the reading thread ends

}  // namespace

struct SignalCatcher::Dispositions {
  struct sigaction int_action {};
  struct sigaction term_action {};
};

Result<std::unique_ptr<SignalCatcher>> SignalCatcher::start(std::function<void(int)> on_signal,
                                                            Afterwards afterwards) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return make_error(ErrorCode::kInternal,
                      std::string("cannot catch signals: no pipe: ") + std::strerror(errno));
  try {
    return std::unique_ptr<SignalCatcher>(
        new SignalCatcher(std::move(on_signal), afterwards, fds[0], fds[1]));
  } catch (const std::system_error& e) {  // no thread to read the pipe
    close(fds[0]);
    close(fds[1]);
    return make_error(ErrorCode::kInternal, std::string("cannot catch signals: ") + e.what());
  }
}

SignalCatcher::SignalCatcher(std::function<void(int)> on_signal, Afterwards afterwards, int read_fd,
                             int write_fd)
    : on_signal_(std::move(on_signal)),
      afterwards_(afterwards),
      read_fd_(read_fd),
      write_fd_(write_fd),
      previous_(std::make_unique<Dispositions>()) {
  // The handler must never block: a full pipe loses only repeats.
  fcntl(write_fd_, F_SETFL, fcntl(write_fd_, F_GETFL) | O_NONBLOCK);
  thread_ = std::thread([this] { read_signals(); });
  previous_fd_ = g_signal_fd.exchange(write_fd_);
  struct sigaction action {};
  action.sa_handler = write_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_->int_action);
  sigaction(SIGTERM, &action, &previous_->term_action);
}

SignalCatcher::~SignalCatcher() {
  if (afterwards_ == Afterwards::kIgnore) {
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
  } else {
    sigaction(SIGINT, &previous_->int_action, nullptr);
    sigaction(SIGTERM, &previous_->term_action, nullptr);
  }
  g_signal_fd.store(previous_fd_);
  const unsigned char stop = kStop;
  // The reading thread drains the pipe, so a full one has room again soon.
  while (write(write_fd_, &stop, 1) < 0 && (errno == EINTR || errno == EAGAIN)) {
  }
  thread_.join();
  close(read_fd_);
  close(write_fd_);
}

void SignalCatcher::read_signals() {
  for (;;) {
    unsigned char byte = 0;
    const ssize_t got = read(read_fd_, &byte, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || byte == kStop) return;
    const int signal_number = byte;
    last_.store(signal_number);
    pending_.store(signal_number);
    if (on_signal_) on_signal_(signal_number);
  }
}

}  // namespace eslease
