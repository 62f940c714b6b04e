#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <regex>

#include "common/text.h"
#include "support/fake_clock.h"
#include "support/log_capture.h"
#include "support/memory_api.h"
#include "support/wait.h"

namespace eslease::kube {
namespace {

using namespace std::chrono_literals;
using testing::MemoryApi;

const Resource kLeases = resources::coordination_leases();
constexpr auto kTimeout = std::chrono::milliseconds(1000);

LeaderElectionConfig config_for(const std::string& identity) {
  LeaderElectionConfig config;
  config.ns = "eslease-system";
  config.name = "eslease-controller";
  config.identity = identity;
  config.lease_duration = 15s;
  config.renew_deadline = 10s;
  config.retry_period = 2s;
  return config;
}

std::unique_ptr<LeaderElector> elector(Api& api, Clock& clock, LeaderElectionConfig config) {
  auto created = LeaderElector::create(api, clock, std::move(config));
  EXPECT_TRUE(created.ok());
  return std::move(created).value();
}

json lease_spec(MemoryApi& api) {
  return (*api.get(kLeases, "eslease-system", "eslease-controller", {}))["spec"];
}

TEST(LeaderElectionTest, ValidatesTimings) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto check = [&](auto mutate, const std::string& expected) {
    auto config = config_for("a");
    mutate(config);
    auto created = LeaderElector::create(api, clock, config);
    ASSERT_FALSE(created.ok()) << expected;
    EXPECT_NE(created.error().message.find(expected), std::string::npos) << created.error().message;
  };
  check([](auto& c) { c.lease_duration = 10s; }, "leaseDuration must be greater than renewDeadline");
  check([](auto& c) { c.retry_period = 9s; }, "renewDeadline must be greater than retryPeriod*1.2");
  check([](auto& c) { c.retry_period = 0s; }, "retryPeriod must be greater than zero");
  check(
      [](auto& c) {
        c.renew_deadline = 0s;
        c.retry_period = -1s;
      },
      "renewDeadline must be greater than zero");
  check([](auto& c) { c.identity.clear(); }, "identity must not be empty");
  EXPECT_TRUE(validate(config_for("a")).ok());
}

TEST(LeaderElectionTest, AcquiresFreshLeaseWithMicroTime) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  EXPECT_TRUE(a->try_acquire_or_renew(kTimeout));
  json spec = lease_spec(api);
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_TRUE(std::regex_match(spec["renewTime"].get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")));
  EXPECT_EQ(a->leader(), "a");
}

TEST(LeaderElectionTest, RenewKeepsAcquireTimeAndTransitions) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  json first = lease_spec(api);
  clock.advance(2s);
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  json second = lease_spec(api);
  EXPECT_EQ(second["acquireTime"], first["acquireTime"]);
  EXPECT_NE(second["renewTime"], first["renewTime"]);
  EXPECT_EQ(second["leaseTransitions"], 0);
}

TEST(LeaderElectionTest, ExpiryIsMeasuredOnOurClockSinceWeObservedTheRecord) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  auto b = elector(api, clock, config_for("b"));
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  // b first sees the record now; the record's renewTime (another machine's clock) is
  // irrelevant, only how long it has stayed unchanged under b's eyes.
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  EXPECT_EQ(b->leader(), "a");
  clock.advance(14s);
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  clock.advance(1s + 1ms);
  EXPECT_TRUE(b->try_acquire_or_renew(kTimeout));
  json spec = lease_spec(api);
  EXPECT_EQ(spec["holderIdentity"], "b");
  EXPECT_EQ(spec["leaseTransitions"], 1);
}

TEST(LeaderElectionTest, ARenewalResetsOthersObservedTime) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  auto b = elector(api, clock, config_for("b"));
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  clock.advance(10s);
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  clock.advance(6s);  // 16 s since b first looked, but the record changed 6 s ago...
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));  // ...b sees the change now: 15 s from here
  clock.advance(14s);
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  clock.advance(2s);
  EXPECT_TRUE(b->try_acquire_or_renew(kTimeout));
}

TEST(LeaderElectionTest, ConflictOnUpdateRereadsAndDoesNotLead) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  auto b = elector(api, clock, config_for("b"));
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  clock.advance(16s);
  api.fail_next("update", make_error(ErrorCode::kConflict, "the object has been modified", 409));
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  EXPECT_EQ(lease_spec(api)["holderIdentity"], "a");
  // Real optimistic concurrency: a renews in between, so b's stale write is refused.
  clock.advance(16s);
  json stale = *api.get(kLeases, "eslease-system", "eslease-controller", {});
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  stale["spec"]["holderIdentity"] = "b";
  EXPECT_EQ(api.update(kLeases, stale, {}).error().code, ErrorCode::kConflict);
}

// Two replicas starting at once both find no lease and both create it: the one that loses
// stands by. That is no error, and it logged "cannot create lease ... AlreadyExists (HTTP 409)".
TEST(LeaderElectionTest, LosingTheRaceToCreateTheLeaseIsNotAnError) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  auto b = elector(api, clock, config_for("b"));
  ASSERT_TRUE(a->try_acquire_or_renew(kTimeout));
  api.fail_next("get", make_error(ErrorCode::kNotFound, "not found", 404));  // b read before a created
  eslease::testing::LogCapture logs;
  EXPECT_FALSE(b->try_acquire_or_renew(kTimeout));
  EXPECT_EQ(b->leader(), "a") << "the standby knows who leads";
  EXPECT_EQ(logs.text().find("AlreadyExists"), std::string::npos) << logs.text();
  EXPECT_EQ(logs.text().find("cannot create lease"), std::string::npos) << logs.text();
  EXPECT_EQ(lease_spec(api)["holderIdentity"], "a");
}

TEST(LeaderElectionTest, ApiErrorsNeverGrantLeadership) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  auto a = elector(api, clock, config_for("a"));
  api.fail_next("get", make_error(ErrorCode::kUnavailable, "down", 503));
  EXPECT_FALSE(a->try_acquire_or_renew(kTimeout));
  api.fail_next("create", make_error(ErrorCode::kAlreadyExists, "exists", 409));
  EXPECT_FALSE(a->try_acquire_or_renew(kTimeout));
  EXPECT_TRUE(a->try_acquire_or_renew(kTimeout));
}

TEST(LeaderElectionTest, RunLeadsThenStepsDownWhenRenewalsFail) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  std::atomic<int> started{0}, stopped{0};
  std::vector<std::string> leaders;
  auto config = config_for("a");
  config.callbacks.on_started_leading = [&](std::stop_token stop) {
    started++;
    eslease::testing::block_until_stopped(stop);
  };
  config.callbacks.on_stopped_leading = [&] { stopped++; };
  config.callbacks.on_new_leader = [&](const std::string& id) { leaders.push_back(id); };
  auto a = elector(api, clock, config);
  // Three good renewals, then the API fails for longer than renewDeadline.
  for (int i = 0; i < 4; ++i) api.fail_next("get", make_error(ErrorCode::kUnavailable, "x", 503));
  // The failures above hit the first attempts; acquire retries through them.
  std::jthread runner([&](std::stop_token stop) { a->run(stop); });
  ASSERT_TRUE(eslease::testing::wait_until([&] { return started.load() == 1; }));
  EXPECT_TRUE(a->is_leader());
  for (int i = 0; i < 50; ++i) api.fail_next("get", make_error(ErrorCode::kUnavailable, "x", 503));
  ASSERT_TRUE(eslease::testing::wait_until([&] { return stopped.load() == 1; }));
  runner.join();
  EXPECT_FALSE(a->is_leader());
  EXPECT_EQ(leaders, std::vector<std::string>{"a"});
}

TEST(LeaderElectionTest, ReleaseOnCancelClearsHolder) {
  eslease::testing::FakeClock clock;
  MemoryApi api;
  std::atomic<bool> leading{false};
  auto config = config_for("a");
  config.release_on_cancel = true;
  config.callbacks.on_started_leading = [&](std::stop_token) { leading = true; };
  auto a = elector(api, clock, config);
  std::jthread runner([&](std::stop_token stop) { a->run(stop); });
  ASSERT_TRUE(eslease::testing::wait_until([&] { return leading.load(); }));
  runner.request_stop();
  runner.join();
  json spec = lease_spec(api);
  EXPECT_FALSE(spec.contains("holderIdentity"));
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);
  // A successor takes it at once instead of waiting a whole lease duration.
  auto b = elector(api, clock, config_for("b"));
  EXPECT_TRUE(b->try_acquire_or_renew(kTimeout));
}

TEST(LeaderElectionTest, MicroTimeFormat) {
  // The renewTime the elector writes: Kubernetes' MicroTime.
  auto t = std::chrono::system_clock::from_time_t(1'800'000'000) + std::chrono::microseconds(42);
  EXPECT_EQ(format_rfc3339_micros(t), "2027-01-15T08:00:00.000042Z");
}

}  // namespace
}  // namespace eslease::kube
