// The running controller on an in-memory Kubernetes API and Elasticsearch, timed by a fake
// clock: what it does with leadership.
#include "controller/controller.h"

#include <gtest/gtest.h>

#include <thread>

#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/memory_api.h"
#include "support/wait.h"

namespace eslease::controller {
namespace {

using nlohmann::json;
using testing::FakeClock;
using testing::FakeDocumentApi;
using testing::wait_until;

TEST(Controller, AStandbyTakesLeadershipOnceTheLeaderLeaseExpiresOnItsClock) {
  FakeClock clock;
  kube::testing::MemoryApi api;
  // Another replica led and went silent: its record must stay unchanged for 15 s on our
  // clock before we may take over.
  api.put_object(kube::resources::coordination_leases(),
                 {{"metadata", {{"namespace", "eslease-system"}, {"name", "eslease-controller"}}},
                  {"spec",
                   {{"holderIdentity", "replica-b"},
                    {"leaseDurationSeconds", 15},
                    {"renewTime", "2027-01-15T08:00:00.000000Z"}}}});
  FakeDocumentApi documents;
  auto store = lock::make_es_lock_store(documents, clock);
  ASSERT_TRUE(store.ok());
  Observer observer;
  ControllerOptions options;
  options.leader_elect = true;
  options.leader_election.ns = "eslease-system";
  options.leader_election.name = "eslease-controller";
  options.leader_election.identity = "replica-a";
  Controller controller(api, **store, nullptr, observer, clock, options);
  std::jthread running([&](std::stop_token stop) { (void)controller.run(stop); });

  // The elector's retries sleep on the fake clock, which moves its time: the lease expires
  // in fake time, at once in real time. On the system clock this would take 15 s.
  ASSERT_TRUE(wait_until([&] { return controller.leading(); }, std::chrono::seconds(5)));
  EXPECT_GE(clock.monotonic() - MonoTime{}, std::chrono::seconds(15));
  running.request_stop();
  running.join();
  EXPECT_FALSE(controller.leading());
}

}  // namespace
}  // namespace eslease::controller
