// The hold `eslease run` keeps in Kubernetes mode, on a fake clock: how it waits for the
// namespace's session to publish the grant's validity.
#include "cli/lease_hold.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <thread>

#include "api/session.h"
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
  auto hold = make_lease_hold(api, clock, held, "pod-uid", LeaseHoldOptions{}, messages);

  const MonoTime start = clock.monotonic();
  std::optional<Status> waited;
  std::atomic<bool> returned{false};
  std::jthread waiter([&] {
    waited = hold->wait_until_confirmed(Millis(1000), Millis(10000));
    returned = true;
  });
  // It sleeps until exactly its limit on the hold's clock, not in slices of real time.
  EXPECT_TRUE(wait_until([&] { return clock.deadlines() == std::vector<MonoTime>{start + Millis(10000)}; }));
  EXPECT_FALSE(returned.load());
  clock.advance(Millis(10000));  // moving the clock is what ends the wait
  ASSERT_TRUE(wait_until([&] { return returned.load(); }));
  ASSERT_TRUE(waited.has_value());
  ASSERT_FALSE(waited->ok());
  EXPECT_EQ(waited->error().code, ErrorCode::kTimeout);
  EXPECT_NE(waited->error().message.find("no validity for Lease job-p1"), std::string::npos)
      << waited->error().message;
}

}  // namespace
}  // namespace eslease::cli
