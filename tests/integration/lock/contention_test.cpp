#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "integration/lock/lock_fixture.h"
#include "lock/acquirer.h"

namespace eslease::lock {
namespace {

using testing::EsTestServer;
using testing::StoreOnServer;

// Many contenders hammer one lock with acquire/release cycles. A shared slot is set only
// after a grant and cleared before the release is sent: finding it taken means two
// holders at once. Tokens, read in grant order, must strictly increase.
TEST(LockContention, ThreadsNeverHoldTogetherAndTokensGrow) {
  EsTestServer server;
  const std::string index = EsTestServer::unique_index("eslease-contention");
  const LockKey key = *make_lock_key("batch", "hot-lock");
  {
    StoreOnServer setup(server.url(), index);
    ASSERT_TRUE(setup.store->prepare().ok());
  }
  constexpr int kThreads = 8;
  constexpr int kCyclesPerThread = 15;
  std::atomic<int> holder_slot{-1};
  std::atomic<int> overlaps{0};
  std::atomic<int> grants{0};
  std::mutex tokens_mutex;
  std::vector<std::int64_t> tokens;
  std::atomic<int> failures{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      StoreOnServer backend(server.url(), index);
      for (int cycle = 0; cycle < kCyclesPerThread; ++cycle) {
        WaitOptions wait{Millis(60000), BackoffPolicy{Millis(2), Millis(40), 2.0}};
        auto grant =
            lock::acquire(*backend.store, SystemClock::instance(),
                          Claim{{key}, ClaimShape{}, direct_grantee("thread-" + std::to_string(t))}, wait);
        if (!grant.ok()) {
          ++failures;
          ADD_FAILURE() << grant.error().describe();
          return;
        }
        int expected = -1;
        if (!holder_slot.compare_exchange_strong(expected, t)) ++overlaps;
        {
          std::lock_guard lock(tokens_mutex);
          tokens.push_back(grant->token);
        }
        ++grants;
        std::this_thread::yield();
        holder_slot.store(-1);
        auto released = backend.store->release(*grant, ReleaseScope::kGrant);
        if (!released.ok() || *released != ReleaseOutcome::kReleased) {
          ++failures;
          ADD_FAILURE() << "release failed";
          return;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(grants.load(), kThreads * kCyclesPerThread);
  for (std::size_t i = 1; i < tokens.size(); ++i) ASSERT_GT(tokens[i], tokens[i - 1]) << i;
}

}  // namespace
}  // namespace eslease::lock
