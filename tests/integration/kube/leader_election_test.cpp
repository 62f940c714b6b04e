#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include "integration/kube/kube_fixture.h"
#include "support/wait.h"

namespace eslease::kube::testing {
namespace {

using namespace std::chrono_literals;
using eslease::testing::wait_until;
using LeaderElectionIntegrationTest = KubeFixture;

// Candidates that campaign again and again, with a shared count of active leaders that must
// never exceed one.
class Candidates {
 public:
  Candidates(const RestConfig& config, const std::string& ns, int count, bool release_on_cancel) {
    lease_name_ = unique_name("leader");
    for (int i = 0; i < count; ++i) {
      apis_.push_back(HttpApi::connect(config));
      LeaderElectionConfig le;
      le.ns = ns;
      le.name = lease_name_;
      le.identity = "candidate-" + std::to_string(i);
      le.lease_duration = 1000ms;
      le.renew_deadline = 700ms;
      le.retry_period = 200ms;
      le.release_on_cancel = release_on_cancel;
      le.callbacks.on_started_leading = [this, i](std::stop_token stop) {
        int now = ++active_;
        int seen = max_active_.load();
        while (now > seen && !max_active_.compare_exchange_weak(seen, now)) {
        }
        current_ = i;
        ++terms_;
        eslease::testing::block_until_stopped(stop);
        --active_;
      };
      le.callbacks.on_stopped_leading = [this] { ++stops_; };
      auto elector = LeaderElector::create(*apis_.back(), SystemClock::instance(), le);
      EXPECT_TRUE(elector.ok());
      electors_.push_back(std::move(elector).value());
    }
    for (auto& elector : electors_) {
      threads_.emplace_back([e = elector.get()](std::stop_token stop) {
        while (!stop.stop_requested()) e->run(stop);
      });
    }
  }
  ~Candidates() { stop_all(); }

  void stop(int i) {
    threads_[i].request_stop();
    threads_[i].join();
  }
  void stop_all() {
    for (auto& t : threads_) t.request_stop();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  int current() const { return current_.load(); }
  int terms() const { return terms_.load(); }
  int active() const { return active_.load(); }
  int max_active() const { return max_active_.load(); }
  int stops() const { return stops_.load(); }

 private:
  std::string lease_name_;
  std::vector<std::unique_ptr<HttpApi>> apis_;
  std::vector<std::unique_ptr<LeaderElector>> electors_;
  std::vector<std::jthread> threads_;
  std::atomic<int> active_{0}, max_active_{0}, current_{-1}, terms_{0}, stops_{0};
};

TEST_F(LeaderElectionIntegrationTest, OneLeaderAmongThreeAndHandOverWhenTheLeaderGoes) {
  Candidates candidates(api_->config(), ns_, 3, /*release_on_cancel=*/false);
  ASSERT_TRUE(wait_until([&] { return candidates.terms() >= 1; }, 10s));
  for (int handover = 0; handover < 2; ++handover) {
    const int leader = candidates.current();
    const int terms = candidates.terms();
    candidates.stop(leader);  // the leader process goes away without releasing
    // Another candidate takes over once the lease expires (1 s), well within 10 s.
    ASSERT_TRUE(
        wait_until([&] { return candidates.terms() > terms && candidates.current() != leader; }, 10s));
  }
  candidates.stop_all();
  EXPECT_LE(candidates.max_active(), 1);
}

TEST_F(LeaderElectionIntegrationTest, ReleaseOnCancelHandsOverQuickly) {
  Candidates candidates(api_->config(), ns_, 2, /*release_on_cancel=*/true);
  ASSERT_TRUE(wait_until([&] { return candidates.terms() >= 1; }, 10s));
  const int leader = candidates.current();
  candidates.stop(leader);
  ASSERT_TRUE(wait_until([&] { return candidates.terms() >= 2; }, 10s));
  EXPECT_NE(candidates.current(), leader);
  candidates.stop_all();
  EXPECT_LE(candidates.max_active(), 1);
}

TEST_F(LeaderElectionIntegrationTest, LeaderThatCannotRenewStepsDown) {
  if (!has_admin()) GTEST_SKIP() << "needs the emulator's fault injection";
  Candidates candidates(api_->config(), ns_, 3, false);
  ASSERT_TRUE(wait_until([&] { return candidates.terms() >= 1; }, 10s));
  const int stops = candidates.stops();
  // Every lease write fails: nobody can renew or acquire.
  admin("POST", "/_emulator/faults",
        {{"verb", "update"}, {"resource", "leases"}, {"status", 500}, {"count", 100000}});
  ASSERT_TRUE(wait_until([&] { return candidates.stops() > stops && candidates.active() == 0; }, 5s));
  admin("DELETE", "/_emulator/faults");
  ASSERT_TRUE(wait_until([&] { return candidates.active() == 1; }, 10s));
  candidates.stop_all();
  EXPECT_LE(candidates.max_active(), 1);
}

TEST_F(LeaderElectionIntegrationTest, NeverTwoLeadersUnderApiFaults) {
  if (!has_admin()) GTEST_SKIP() << "needs the emulator's fault injection";
  Candidates candidates(api_->config(), ns_, 3, false);
  ASSERT_TRUE(wait_until([&] { return candidates.terms() >= 1; }, 10s));
  admin("POST", "/_emulator/faults",
        {{"verb", "*"}, {"resource", "leases"}, {"latency_ms", 400}, {"count", 15}});
  admin("POST", "/_emulator/faults",
        {{"verb", "get"}, {"resource", "leases"}, {"status", 500}, {"count", 10}});
  admin("POST", "/_emulator/faults",
        {{"verb", "update"}, {"resource", "leases"}, {"drop", true}, {"count", 10}});
  admin("POST", "/_emulator/watches/drop");
  const int leader = candidates.current();
  candidates.stop(leader);  // and the leader goes away while the API misbehaves
  ASSERT_TRUE(wait_until([&] { return candidates.terms() >= 2; }, 20s));
  ASSERT_TRUE(wait_until([&] { return candidates.active() == 1; }, 10s));
  candidates.stop_all();
  EXPECT_LE(candidates.max_active(), 1);
}

}  // namespace
}  // namespace eslease::kube::testing
