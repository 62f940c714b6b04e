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

// What the claim gauges are told on a scrape.
class ClaimCounts final : public Observer {
 public:
  void claims(const std::map<std::pair<std::string, std::string>, int>& counts, int waiters) override {
    std::lock_guard lock(mutex);
    pending = 0;
    for (const auto& [key, n] : counts)
      if (key.first == "Pending") pending += n;
    this->waiters = waiters;
  }
  void lock_slots(std::int64_t held, std::int64_t free) override {
    std::lock_guard lock(mutex);
    slots_held = held;
    slots_free = free;
  }
  std::mutex mutex;
  int pending = -1;
  int waiters = -1;
  std::int64_t slots_held = -1;
  std::int64_t slots_free = -1;
};

json pod_object(const std::string& name, const std::string& app) {
  json pod = kube::testing::make_object("batch", name, "1", "uid-" + name);
  pod["metadata"]["labels"] = {{"app", app}};
  pod["spec"] = {{"nodeName", "node-1"}};
  pod["status"] = {{"phase", "Running"}, {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
  return pod;
}

json lease_object(const std::string& name, const std::string& lock, const json& holder, const char* phase) {
  json lease = kube::testing::make_object("batch", name, "1", "uid-" + name);
  lease["spec"] = {{"lockName", lock}, {"holder", holder}};
  lease["status"] = {{"phase", phase}};
  return lease;
}

// One scrape of a controller whose caches hold what `api` holds. The in-memory API's watches
// stay quiet, so the caches keep the statuses put there.
void scrape(kube::testing::MemoryApi& api, FakeClock& clock, ClaimCounts& observer) {
  FakeDocumentApi documents;
  auto store = lock::make_es_lock_store(documents, clock);
  ASSERT_TRUE(store.ok());
  Controller controller(api, **store, nullptr, observer, clock, ControllerOptions{});
  std::jthread running([&](std::stop_token stop) { (void)controller.run(stop); });
  ASSERT_TRUE(wait_until([&] { return controller.synced(); }));
  controller.publish_claim_metrics();
}

// eslease_lock_waiters counts the claims a live pod could take the lock for: not a claim whose
// pod is gone, nor an election claim no live pod matches. Both stay Pending, without a place
// in the queue. Counted from the caches, as every replica counts.
TEST(Controller, ClaimsThatNoLivePodCanServeAreNotWaiters) {
  FakeClock clock;
  kube::testing::MemoryApi api;
  api.put_object(kube::resources::pods(), pod_object("worker-1", "worker"));
  api.put_object(kube::resources::pods(), pod_object("worker-2", "worker"));
  const json worker_1{{"podName", "worker-1"}};
  const json worker_2{{"podName", "worker-2"}};
  const json gone{{"podName", "gone"}};
  const json nobody{{"podSelector", {{"matchLabels", {{"app", "nobody"}}}}}};
  api.put_object(kube::resources::eslease_leases(), lease_object("first", "report", worker_1, "Held"));
  api.put_object(kube::resources::eslease_leases(), lease_object("second", "report", worker_2, "Pending"));
  api.put_object(kube::resources::eslease_leases(), lease_object("orphan", "report", gone, "Pending"));
  api.put_object(kube::resources::eslease_leases(), lease_object("nobody", "elect", nobody, "Pending"));
  ClaimCounts observer;
  scrape(api, clock, observer);
  std::lock_guard lock(observer.mutex);
  EXPECT_EQ(observer.pending, 3);
  EXPECT_EQ(observer.waiters, 1) << "only 'second' can be served";
}

// eslease_lock_slots counts every claimed lock's capacity, as its oldest live claim states it:
// a Shared holder holds one slot, an Exclusive one all of them, a set's holder one of each lock.
TEST(Controller, LockSlotsCountCapacityAndWhatHoldersTake) {
  FakeClock clock;
  kube::testing::MemoryApi api;
  for (const char* name : {"w-1", "w-2", "w-3", "w-4", "w-5"})
    api.put_object(kube::resources::pods(), pod_object(name, "worker"));
  auto claim = [&](const std::string& name, const std::string& lock, const char* pod, const char* phase,
                   int capacity, const char* access) {
    json lease = lease_object(name, lock, {{"podName", pod}}, phase);
    lease["spec"]["capacity"] = capacity;
    lease["spec"]["access"] = access;
    api.put_object(kube::resources::eslease_leases(), lease);
  };
  claim("sem-a", "pool", "w-1", "Held", 3, "Shared");  // pool: 3 slots, 2 held
  claim("sem-b", "pool", "w-2", "Held", 3, "Shared");
  claim("sem-c", "pool", "w-3", "Pending", 3, "Shared");
  claim("writer", "rw", "w-4", "Held", 2, "Exclusive");      // rw: 2 slots, both held
  claim("single", "one", "w-5", "Pending", 1, "Exclusive");  // one: 1 slot, free
  ClaimCounts observer;
  scrape(api, clock, observer);
  std::lock_guard lock(observer.mutex);
  EXPECT_EQ(observer.slots_held, 4);
  EXPECT_EQ(observer.slots_free, 2);
}

}  // namespace
}  // namespace eslease::controller
