// Signals are acted on outside signal context: what a signal starts may take mutexes, even
// one the thread the signal interrupted holds.
#include "common/signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

#include "support/wait.h"

namespace eslease {
namespace {

using testing::wait_until;

std::unique_ptr<SignalCatcher> catching(
    std::function<void(int)> on_signal = {},
    SignalCatcher::Afterwards afterwards = SignalCatcher::Afterwards::kRestore) {
  auto started = SignalCatcher::start(std::move(on_signal), afterwards);
  EXPECT_TRUE(started.ok()) << started.error().message;
  return started.ok() ? std::move(*started) : nullptr;
}

// A stop callback needs a mutex that the interrupted thread holds. Run inside the signal
// handler, it would wait for that thread, which waits for the handler: a deadlock.
TEST(SignalCatcher, AStopCallbackThatNeedsAMutexTheInterruptedThreadHoldsStillRuns) {
  std::mutex mutex;
  std::stop_source stop;
  std::atomic<bool> stopped{false};
  std::stop_callback callback(stop.get_token(), [&] {
    std::lock_guard lock(mutex);
    stopped = true;
  });
  auto catcher = catching([&](int) { stop.request_stop(); });
  ASSERT_TRUE(catcher);
  {
    std::lock_guard held(mutex);
    ASSERT_EQ(raise(SIGTERM), 0);  // handled on this thread, which holds the mutex
    EXPECT_FALSE(stopped.load());
  }
  ASSERT_TRUE(wait_until([&] { return stopped.load(); }));
  EXPECT_EQ(catcher->last(), SIGTERM);
}

TEST(SignalCatcher, EachSignalIsTakenOnceAndTheLatestIsRemembered) {
  auto catcher = catching();
  ASSERT_TRUE(catcher);
  EXPECT_EQ(catcher->take(), 0);
  ASSERT_EQ(raise(SIGINT), 0);
  ASSERT_TRUE(wait_until([&] { return catcher->last() == SIGINT; }));
  EXPECT_EQ(catcher->take(), SIGINT);
  EXPECT_EQ(catcher->take(), 0);
  EXPECT_EQ(catcher->last(), SIGINT);
}

TEST(SignalCatcher, TheNewestCatcherCatchesAndThePreviousDispositionsComeBack) {
  struct sigaction before {};
  sigaction(SIGTERM, nullptr, &before);
  {
    auto outer = catching();
    ASSERT_TRUE(outer);
    {
      auto inner = catching();
      ASSERT_TRUE(inner);
      ASSERT_EQ(raise(SIGTERM), 0);
      ASSERT_TRUE(wait_until([&] { return inner->last() == SIGTERM; }));
      EXPECT_EQ(outer->last(), 0);
    }
    ASSERT_EQ(raise(SIGTERM), 0);
    ASSERT_TRUE(wait_until([&] { return outer->last() == SIGTERM; }));
  }
  struct sigaction after {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

// A process that has stopped on a signal ends with the exit code it chose, however many
// more signals arrive while it exits.
TEST(SignalCatcher, AnEndingProcessIgnoresLateSignals) {
  EXPECT_EXIT(
      {
        { auto catcher = SignalCatcher::start({}, SignalCatcher::Afterwards::kIgnore); }
        raise(SIGTERM);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// A process out of file descriptors cannot catch signals: it is told so, as an error it can
// report, and keeps running.
TEST(SignalCatcher, NoFileDescriptorLeftIsAnError) {
  EXPECT_EXIT(
      {
        struct rlimit before {};
        getrlimit(RLIMIT_NOFILE, &before);
        struct rlimit none = before;
        none.rlim_cur = 0;
        setrlimit(RLIMIT_NOFILE, &none);
        auto started = SignalCatcher::start();
        // Back to the limit before: a sanitizer's checks at exit open files under /proc.
        setrlimit(RLIMIT_NOFILE, &before);
        std::exit(!started.ok() && started.error().code == ErrorCode::kInternal &&
                          started.error().message.find("cannot catch signals") != std::string::npos
                      ? 0
                      : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace eslease
