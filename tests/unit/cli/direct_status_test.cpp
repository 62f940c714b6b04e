// What direct mode's status shows: holders counted by grant, against the lock's capacity.
#include "cli/direct_status.h"

#include <gtest/gtest.h>

#include <sstream>

namespace eslease::cli {
namespace {

lock::LockState doc(const std::string& lock, std::int64_t slot, std::int64_t capacity, lock::Access access,
                    const std::string& holder, const std::string& grant = "",
                    std::vector<std::string> grant_docs = {}) {
  lock::LockState s;
  s.doc.lock = lock;
  s.doc.slot = slot;
  s.doc.capacity = capacity;
  s.doc.access = access;
  s.doc.holder = holder;
  s.doc.lease_uid = "uid-" + holder;
  s.doc.grant = grant;
  s.doc.grant_docs = std::move(grant_docs);
  s.token = 100 + slot;
  return s;
}

// A writer on a lock of capacity 2 (both slots, one grant), beside a set holding one lock.
std::vector<lock::LockState> documents() {
  return {doc("batch/a", 0, 1, lock::Access::kExclusive, "job", "g-1", {"batch/a", "batch/b"}),
          doc("batch/rw", 0, 2, lock::Access::kExclusive, "writer", "g-2", {"batch/rw", "batch/rw#1"}),
          doc("batch/rw", 1, 2, lock::Access::kExclusive, "writer", "g-2", {"batch/rw", "batch/rw#1"})};
}

TEST(DirectStatus, HoldersAreGrantsNotDocuments) {
  const std::vector<LockHolders> locks = lock_holders(documents());
  ASSERT_EQ(locks.size(), 2u);
  EXPECT_EQ(locks[0].lock, "batch/a");
  EXPECT_EQ(locks[0].capacity, 1);
  EXPECT_EQ(locks[1].lock, "batch/rw");
  EXPECT_EQ(locks[1].capacity, 2);
  ASSERT_EQ(locks[1].holders.size(), 1u) << "one writer, however many slots it holds";
  EXPECT_EQ(locks[1].holders[0].size(), 2u);
}

TEST(DirectStatus, GrantsOfOneDocumentAreToldApartByGranteeAndTime) {
  lock::LockState a = doc("batch/db", 0, 3, lock::Access::kShared, "a");
  lock::LockState b = doc("batch/db", 1, 3, lock::Access::kShared, "a");
  b.doc.lease_uid = "uid-a-again";  // the same holder name, another acquire
  EXPECT_EQ(by_grant({a, b}).size(), 2u);
  b.doc.lease_uid = a.doc.lease_uid;
  EXPECT_EQ(by_grant({a, b}).size(), 1u);
  b.doc.acquired_at = a.doc.acquired_at + Millis(1);
  EXPECT_EQ(by_grant({a, b}).size(), 2u);
}

TEST(DirectStatus, TheTableCountsTheSlotsTakenAgainstTheCapacity) {
  std::ostringstream out;
  print_lock_holders(out, lock_holders(documents()));
  const std::string table = out.str();
  EXPECT_EQ(table.rfind("LOCK", 0), 0u) << table;
  EXPECT_NE(table.find("batch/a "), std::string::npos) << "capacity 1: no count\n" << table;
  EXPECT_EQ(table.find("batch/a ("), std::string::npos) << table;
  EXPECT_NE(table.find("batch/rw (2/2)"), std::string::npos) << table;
  EXPECT_NE(table.find("0,1"), std::string::npos) << table;
  EXPECT_NE(table.find("a+b"), std::string::npos) << "the set, by its locks' names\n" << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3) << "a header and one row per holder\n" << table;
}

TEST(DirectStatus, JsonIsKubernetesModesShape) {
  const nlohmann::json j = lock_holders_json(lock_holders(documents()));
  ASSERT_EQ(j["locks"].size(), 2u);
  const auto& rw = j["locks"][1];
  EXPECT_EQ(rw["namespace"], "batch");
  EXPECT_EQ(rw["lock"], "rw");
  EXPECT_EQ(rw["capacity"], 2);
  ASSERT_EQ(rw["holders"].size(), 1u);
  EXPECT_EQ(rw["holders"][0]["holder"], "writer");
  EXPECT_EQ(rw["holders"][0]["access"], "Exclusive");
  EXPECT_EQ(rw["holders"][0]["slots"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(rw["holders"][0]["fencingToken"], "101") << "the largest of its documents'";
  EXPECT_EQ(j["locks"][0]["holders"][0]["locks"], nlohmann::json::array({"a", "b"}));
}

}  // namespace
}  // namespace eslease::cli
