// The hold `eslease run` keeps in Kubernetes mode, on a fake clock: how it waits for the
// namespace's session to publish the grant's validity.
#include "cli/lease_hold.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "api/session.h"
#include "common/text.h"
#include "support/fake_clock.h"
#include "support/memory_api.h"
#include "support/wait.h"

namespace eslease::cli {
namespace {

using kube::testing::MemoryApi;
using nlohmann::json;
using testing::FakeClock;
using testing::wait_until;

TEST(LeaseHold, WaitsForAValidityOnItsClockUntilItsLimit) {
  MemoryApi api;
  FakeClock clock;
  const json held = api.put_object(
      kube::resources::eslease_leases(),
      {{"metadata", {{"namespace", "batch"}, {"name", "job-p1"}, {"uid", "lease-uid"}}},
       {"spec", {{"lockName", "job"}, {"holder", {{"podName", "p1"}}}, {"leaseDurationSeconds", 30}}},
       {"status",
        {{"phase", "Held"},
         {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}},
         {"fencingToken", "4294967299"}}}});
  // The namespace's session exists but has published nothing yet (never renewed).
  api::Session session;
  session.ns = "batch";
  session.holder_identity = "controller-1";
  api.put_object(kube::resources::coordination_leases(), api::session_object(session));
  std::ostringstream err;
  Messages messages(err);
  auto hold = make_lease_hold(api, clock, held, "pod-uid", Millis(2000), messages);

  const MonoTime start = clock.monotonic();
  std::optional<Status> waited;
  std::atomic<bool> returned{false};
  std::jthread waiter([&] {
    waited = hold->wait_until_confirmed(Millis(1000), Millis(10000));
    returned = true;
  });
  // It sleeps until exactly its limit on the hold's clock, not in slices of real time.
  EXPECT_TRUE(wait_until([&] { return clock.deadlines() == std::vector<MonoTime>{start + Millis(10000)}; }));
  // Both the Lease and the session were read (each is watched once it has been read).
  ASSERT_TRUE(wait_until([&] { return api.watch_calls().size() == 2; }));
  EXPECT_FALSE(returned.load());
  clock.advance(Millis(10000));  // moving the clock is what ends the wait
  ASSERT_TRUE(wait_until([&] { return returned.load(); }));
  ASSERT_TRUE(waited.has_value());
  ASSERT_FALSE(waited->ok());
  EXPECT_EQ(waited->error().code, ErrorCode::kTimeout);
  // It says what it saw, and does not ask whether a controller that granted the lock runs.
  const std::string& message = waited->error().message;
  EXPECT_NE(message.find("Lease job-p1 is Held with token 4294967299, but session eslease-session of "
                         "namespace batch published no validity for it within 10s"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find("running"), std::string::npos) << message;
}

TEST(LeaseHold, AValidityThatEndedIsNamedWhenTheGrantIsNotConfirmed) {
  MemoryApi api;
  FakeClock clock;
  const json held = api.put_object(
      kube::resources::eslease_leases(),
      {{"metadata", {{"namespace", "batch"}, {"name", "job-p1"}, {"uid", "lease-uid"}}},
       {"spec", {{"lockName", "job"}, {"holder", {{"podName", "p1"}}}, {"leaseDurationSeconds", 6}}},
       {"status",
        {{"phase", "Held"},
         {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}},
         {"fencingToken", "4294967299"}}}});
  // Renewed 15 s ago: the 6 s validity it publishes to this grant has already ended.
  api::Session session;
  session.ns = "batch";
  session.holder_identity = "controller-1";
  session.renew_time = clock.now() - Millis(15000);
  api.put_object(kube::resources::coordination_leases(), api::session_object(session));
  std::ostringstream err;
  Messages messages(err);
  auto hold = make_lease_hold(api, clock, held, "pod-uid", Millis(1000), messages);
  ASSERT_TRUE(wait_until([&] { return api.watch_calls().size() == 2; }));
  std::optional<Status> waited;
  std::jthread waiter([&] { waited = hold->wait_until_confirmed(Millis(2000), Millis(6000)); });
  ASSERT_TRUE(wait_until([&] { return !clock.deadlines().empty(); }));
  clock.advance(Millis(6000));
  waiter.join();
  ASSERT_TRUE(waited.has_value());
  ASSERT_FALSE(waited->ok());
  const std::string& message = waited->error().message;
  EXPECT_NE(
      message.find("the validity session eslease-session of namespace batch published for it (until " +
                   format_rfc3339_millis(*session.renew_time + Millis(6000)) + ") did not cover the next 3s"),
      std::string::npos)
      << message;
}

}  // namespace
}  // namespace eslease::cli
