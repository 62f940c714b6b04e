// The hold `eslease run` keeps in direct mode, on a fake clock and a store whose renewal
// answers only when the test says: a slow renewal never delays the command's deadline.
#include "cli/store_hold.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <sstream>

#include "support/fake_clock.h"
#include "support/wait.h"

namespace eslease::cli {
namespace {

using testing::FakeClock;
using testing::wait_until;

// Renewals block until `answer` is called, as one does while Elasticsearch times out and
// the client retries; every other call fails.
class SlowRenewalStore final : public lock::LockStore {
 public:
  Status prepare() override { return {}; }
  Result<std::optional<lock::LockState>> get(const lock::LockKey&) override { return unused(); }
  Result<std::vector<lock::LockState>> list() override { return unused(); }
  Result<lock::AcquireOutcome> acquire(const lock::LockKey&, const lock::Grantee&) override {
    return unused();
  }
  Result<lock::AcquireOutcome> take_over(const lock::LockKey&, const lock::LockState&,
                                         const lock::Grantee&) override {
    return unused();
  }
  Result<lock::RenewOutcome> renew(const lock::LockKey&, const lock::Grant& held, Millis) override {
    renewals_started.fetch_add(1);
    std::unique_lock lock(mutex_);
    answered_.wait(lock, [this] { return answer_.has_value(); });
    lock::Grant renewed = held;
    renewed.valid_until = *answer_;
    answer_.reset();
    return lock::RenewOutcome{renewed, true, std::nullopt};
  }
  Result<lock::ReleaseOutcome> release(const lock::LockKey&, const lock::Grant&,
                                       lock::ReleaseScope) override {
    released.fetch_add(1);
    return lock::ReleaseOutcome::kReleased;
  }
  std::vector<lock::BatchRenewal> renew_all(const std::vector<lock::HeldLock>&) override { return {}; }

  // Lets the renewal in flight return, confirming the grant until `valid_until`.
  void answer(MonoTime valid_until) {
    std::lock_guard lock(mutex_);
    answer_ = valid_until;
    answered_.notify_all();
  }

  std::atomic<int> renewals_started{0};
  std::atomic<int> released{0};

 private:
  static Error unused() { return make_error(ErrorCode::kUnavailable, "not used by the hold"); }
  std::mutex mutex_;
  std::condition_variable answered_;
  std::optional<MonoTime> answer_;
};

TEST(StoreHold, ASlowRenewalNeverDelaysTheDeadline) {
  FakeClock clock;
  SlowRenewalStore store;
  std::ostringstream err;
  const MonoTime granted_until = clock.monotonic() + Millis(4000);
  auto hold = make_store_hold(store, clock, *lock::make_lock_key("direct", "job"),
                              lock::Grant{lock::LockState{}, granted_until}, Millis(4000), err);

  clock.advance(Millis(1400));  // a renewal is due (every third of the TTL)
  auto checked = std::async(std::launch::async, [&] { return hold->check(); });
  const bool answered = checked.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  store.answer(granted_until);  // lets a renewal that check() waits for return, so the test ends
  ASSERT_TRUE(answered) << "check() waited for the renewal";
  EXPECT_EQ(checked.get().confirmed_until, granted_until);

  // The next renewal goes out, and stays out past the deadline: the supervisor still learns it.
  ASSERT_TRUE(wait_until([&] {  // the renewer waits for its next turn
    const auto waits = clock.deadlines();
    return !waits.empty() && waits.front() > clock.monotonic();
  }));
  clock.advance(Millis(1400));
  ASSERT_TRUE(wait_until([&] { return store.renewals_started.load() == 2; }));
  clock.advance(Millis(1300));
  Hold::State state = hold->check();
  EXPECT_FALSE(state.lost);
  EXPECT_LE(state.confirmed_until, clock.monotonic());

  // Its answer, late, revives nothing: the command has been stopped by then.
  store.answer(clock.monotonic() + Millis(4000));
  hold->finish(false);
  EXPECT_EQ(hold->check().confirmed_until, granted_until);
  EXPECT_NE(err.str().find("expired before it could be renewed"), std::string::npos) << err.str();
  EXPECT_EQ(store.released.load(), 1);  // the document is let go at once
}

}  // namespace
}  // namespace eslease::cli
