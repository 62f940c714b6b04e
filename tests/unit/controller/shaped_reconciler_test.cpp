// The reconcile of a lock of capacity above 1 (the design's "Lock shapes"): what a user reads
// back after each reconcile, from the lock's slot documents and the Lease statuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "unit/controller/reconcile_fixture.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

class ShapedReconcilerTest : public fixture::ReconcileFixture {
 protected:
  void add_shaped_claim(const std::string& name, const std::string& pod, int age_seconds, int capacity,
                        const std::string& access) {
    add_claim(name, pod, age_seconds, {{"capacity", capacity}, {"access", access}});
  }
  // Slot k of the lock as Elasticsearch holds it (nullopt: none).
  std::optional<lock::LockState> slot(std::int64_t k) {
    auto read = store_->read_slots({*lock::parse_lock_id(kLock)}, k + 1);
    if (!read.ok()) return std::nullopt;
    return read->front()[static_cast<std::size_t>(k)];
  }
};

TEST_F(ShapedReconcilerTest, ASemaphoreGrantsUpToItsCapacityEachOnItsOwnSlot) {
  for (const char* name : {"a", "b", "c"}) {
    add_pod(std::string("pod-") + name);
    add_shaped_claim(name, std::string("pod-") + name, name[0] - 'a', 2, "Shared");
  }
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("a")["phase"], "Held");
  EXPECT_EQ(status("b")["phase"], "Held");
  EXPECT_EQ(status("c")["phase"], "Pending");
  EXPECT_EQ(status("c")["queuePosition"], 0);
  EXPECT_EQ(std::set<json>({status("a")["slot"], status("b")["slot"]}), std::set<json>({0, 1}));
  for (std::int64_t k : {0, 1}) {
    auto doc = slot(k);
    ASSERT_TRUE(doc) << "slot " << k;
    EXPECT_EQ(doc->doc.capacity, 2);
    EXPECT_EQ(doc->doc.access, lock::Access::kShared);
    EXPECT_EQ(doc->doc.slot, k);
  }
  EXPECT_NE(status("a")["fencingToken"], status("b")["fencingToken"]);
  EXPECT_EQ(holds("pod-a"), "a=" + status("a")["fencingToken"].get<std::string>());
}

// Grants made in one reconcile are shown in the order they were made: a watcher sees the
// lock's tokens grow.
TEST_F(ShapedReconcilerTest, GrantsOfOneReconcileAreShownInTheirTokensOrder) {
  // "a", first by name, is served last: it is the only Background claim.
  for (const char* name : {"a", "b", "c", "d"}) {
    add_pod(std::string("pod-") + name);
    add_claim(
        name, std::string("pod-") + name, 0,
        {{"capacity", 4}, {"access", "Shared"}, {"priority", name[0] == 'a' ? "Background" : "Foreground"}});
  }
  const std::size_t before = api_.writes().size();
  ASSERT_TRUE(reconcile().status.ok());
  std::vector<long long> shown;
  const auto writes = api_.writes();
  for (std::size_t i = before; i < writes.size(); ++i) {
    const json token = writes[i].second.value(json::json_pointer("/status/fencingToken"), json());
    if (token.is_string()) shown.push_back(std::stoll(token.get<std::string>()));
  }
  ASSERT_EQ(shown.size(), 4U);
  EXPECT_TRUE(std::is_sorted(shown.begin(), shown.end()));
}

TEST_F(ShapedReconcilerTest, AnExclusiveClaimHoldsEverySlotWithOneToken) {
  add_pod("pod-w");
  add_shaped_claim("writer", "pod-w", 0, 3, "Exclusive");
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("writer")["phase"], "Held");
  std::set<std::string> grants;
  for (std::int64_t k : {0, 1, 2}) {
    auto doc = slot(k);
    ASSERT_TRUE(doc) << "slot " << k;
    EXPECT_EQ(doc->doc.lease, "batch/writer");
    EXPECT_EQ(doc->doc.grant_docs.size(), 3U);
    grants.insert(doc->doc.grant);
    EXPECT_LE(doc->token, std::stoll(status("writer")["fencingToken"].get<std::string>()));
  }
  EXPECT_EQ(grants.size(), 1U) << "one grant";
  EXPECT_FALSE(grants.begin()->empty());
}

TEST_F(ShapedReconcilerTest, ADeletedHolderFreesItsSlotForTheNextClaimAtOnce) {
  for (const char* name : {"a", "b", "c"}) {
    add_pod(std::string("pod-") + name);
    add_shaped_claim(name, std::string("pod-") + name, name[0] - 'a', 2, "Shared");
  }
  ASSERT_TRUE(reconcile().status.ok());
  const json a_before = status("a");
  const json b_slot = status("b")["slot"];
  delete_pod("pod-b");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("c")["phase"], "Held");
  EXPECT_EQ(status("c")["slot"], b_slot);
  EXPECT_EQ(status("c")["lastTakeover"]["reason"], "PodDeleted");
  EXPECT_EQ(status("a")["fencingToken"], a_before["fencingToken"]) << "the other holder keeps its grant";
}

TEST_F(ShapedReconcilerTest, AWriterWaitsForTheReaderAndIsNotPassedByALaterOne) {
  add_pod("pod-r1");
  add_shaped_claim("r1", "pod-r1", 0, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  add_pod("pod-w");
  add_shaped_claim("w", "pod-w", 1, 2, "Exclusive");
  add_pod("pod-r2");
  add_shaped_claim("r2", "pod-r2", 2, 2, "Shared");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("w")["phase"], "Pending");
  EXPECT_EQ(status("r2")["phase"], "Pending");
  delete_pod("pod-r1");
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("w")["phase"], "Held");
  EXPECT_EQ(status("r2")["phase"], "Pending");
}

// The write budget of a hand-over holds for a semaphore as for any lock: however long the
// queue, only the first waiters' positions are rewritten.
TEST_F(ShapedReconcilerTest, AHandOverBehindALongQueueWritesAtMostFifteenObjects) {
  for (const char* holder : {"a0", "a1", "a2"}) {
    add_pod(holder);
    add_shaped_claim(holder, holder, 0, 3, "Shared");
  }
  for (int i = 0; i < 300; ++i) {
    char name[8];
    std::snprintf(name, sizeof(name), "w%03d", i);
    add_pod(name);
    add_shaped_claim(name, name, 1, 3, "Shared");
  }
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_TRUE(reconcile().status.ok());
  ASSERT_EQ(status("a1")["phase"], "Held");
  ASSERT_EQ(status("w299")["phase"], "Pending");
  delete_pod("a1");
  const std::size_t before = api_.writes().size();
  ASSERT_TRUE(reconcile().status.ok());
  EXPECT_EQ(status("w000")["phase"], "Held");
  EXPECT_EQ(status("w001")["queuePosition"], 0);
  // This fixture records no events: with the successor's one, at most 15 writes.
  EXPECT_LE(api_.writes().size() - before, 14U);
}

}  // namespace
}  // namespace eslease::controller
