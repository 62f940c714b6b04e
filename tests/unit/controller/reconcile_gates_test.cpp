#include "controller/reconcile_gates.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/wait.h"

namespace eslease::controller {
namespace {

TEST(ReconcileGates, OverlappingLocksWaitAndDisjointOnesPass) {
  ReconcileGates gates;
  std::optional<ReconcileGates::Passage> first(gates.enter({"ns/a", "ns/b"}));
  {
    // Disjoint: enters at once.
    const ReconcileGates::Passage other = gates.enter({"ns/c"});
    EXPECT_EQ(gates.held(), 3U);
    EXPECT_FALSE(other.waited());
  }
  std::atomic<bool> entered{false};
  std::atomic<bool> waited{false};
  std::thread overlapping([&] {
    const ReconcileGates::Passage passage = gates.enter({"ns/c", "ns/b"});
    waited = passage.waited();
    entered = true;
  });
  ASSERT_TRUE(testing::wait_until([&] { return gates.waiting() == 1; })) << "it waits at the gate of ns/b";
  // It waits for ns/b and holds nothing meanwhile: ns/c stays free for others.
  for (int i = 0; i < 100; ++i) {
    const ReconcileGates::Passage c = gates.enter({"ns/c"});
    EXPECT_FALSE(entered.load());
  }
  first.reset();
  overlapping.join();
  EXPECT_TRUE(entered.load());
  EXPECT_TRUE(waited.load()) << "it knows another reconcile went first, and reads its claims again";
  EXPECT_EQ(gates.held(), 0U) << "nothing is remembered once left";
  EXPECT_EQ(gates.waiting(), 0U);
}

}  // namespace
}  // namespace eslease::controller
