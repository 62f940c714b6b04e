// The hold `eslease run` keeps in direct mode, for a grant of any shape, on a fake clock and a
// store whose renewal answers only when the test says: a slow renewal never delays the
// command's deadline.
#include "cli/store_hold.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <sstream>

#include "lock/acquirer.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
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
  Status check_tokens(const lock::IssuedBeforeSource&) override { return {}; }
  std::optional<std::string> grants_refused() const override { return std::nullopt; }
  Result<std::vector<std::vector<lock::DocumentRead>>> read_slots(
      const std::vector<lock::SlotRange>&) override {
    return unused();
  }
  Result<std::vector<lock::LockState>> list() override { return unused(); }
  std::vector<Result<lock::GrantOutcome>> grant(const std::vector<lock::GrantRequest>& requests) override {
    return std::vector<Result<lock::GrantOutcome>>(requests.size(), Result<lock::GrantOutcome>(unused()));
  }
  std::vector<lock::BatchRenewal> renew_all(const std::vector<lock::Renewal>& renewals) override {
    renewals_started.fetch_add(1);
    std::unique_lock lock(mutex_);
    answered_.wait(lock, [this] { return answer_.has_value(); });
    std::vector<lock::BatchRenewal> out;
    for (const lock::Renewal& r : renewals) {
      lock::HeldDocument renewed = r.held;
      renewed.valid_until = *answer_;
      out.push_back(lock::BatchRenewal{lock::RenewalResult::kRenewed, renewed, std::nullopt, std::nullopt});
    }
    answer_.reset();
    return out;
  }
  Result<lock::ReleaseOutcome> release(const lock::HeldGrant&, lock::ReleaseScope) override {
    released.fetch_add(1);
    return lock::ReleaseOutcome::kReleased;
  }

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

// A grant of one lock, confirmed until `valid_until`.
lock::HeldGrant grant_until(MonoTime valid_until) {
  return lock::grant_of(
      {lock::HeldDocument{*lock::make_lock_key("direct", "job"), lock::LockState{}, valid_until}});
}

TEST(StoreHold, ASlowRenewalNeverDelaysTheDeadline) {
  FakeClock clock;
  SlowRenewalStore store;
  std::ostringstream err;
  const MonoTime granted_until = clock.monotonic() + Millis(4000);
  auto hold = make_store_hold(store, clock, grant_until(granted_until), Millis(4000), err);

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

// A set is held whole: when another writer takes one of its documents the hold is lost, says
// which, and gives the rest back at once.
TEST(StoreHold, ASetIsLostWhenAnyOfItsDocumentsIs) {
  FakeClock clock;
  testing::FakeDocumentApi api;
  auto store = std::move(lock::make_es_lock_store(api, clock).value());
  ASSERT_TRUE(store->prepare().ok());
  const lock::Claim claim{{*lock::make_lock_key("direct", "a"), *lock::make_lock_key("direct", "b")},
                          lock::ClaimShape{},
                          lock::direct_grantee("job", Millis(3000))};
  auto grant = lock::acquire(*store, clock, claim, lock::WaitOptions{});
  ASSERT_TRUE(grant.ok()) << grant.error().describe();
  std::ostringstream err;
  auto hold = make_store_hold(*store, clock, *grant, Millis(3000), err);
  nlohmann::json stolen = api.peek("direct/b")->source;
  stolen["holder"] = "thief";
  stolen["leaseUID"] = "thief-uid";
  api.put_raw("direct/b", stolen);

  clock.advance(Millis(1000));  // a renewal is due
  Hold::State state;
  ASSERT_TRUE(wait_until([&] {
    state = hold->check();
    return state.lost;
  }));
  EXPECT_EQ(state.why, "lock direct/a, direct/b was lost: document direct/b was lost to thief");
  EXPECT_FALSE(api.peek("direct/a")) << "the rest of the set is given back";
  hold->finish(true);
  EXPECT_EQ(api.peek("direct/b")->source["holder"], "thief");
}

}  // namespace
}  // namespace eslease::cli
