// How a status write ranks among the controller's Kubernetes writes: in a burst of deaths
// the successors' grants go first, and the Leases of dead holders are told last.
#include "controller/lease_writer.h"

#include <gtest/gtest.h>

namespace eslease::controller {
namespace {

LeaseStatus held(const std::string& token, std::optional<Takeover> takeover = std::nullopt) {
  LeaseStatus s;
  s.phase = Phase::kHeld;
  s.fencing_token = token;
  s.last_takeover = std::move(takeover);
  return s;
}

LeaseStatus pending(int position) {
  LeaseStatus s;
  s.phase = Phase::kPending;
  s.queue_position = position;
  return s;
}

struct Case {
  const char* name;
  LeaseStatus now;
  LeaseStatus desired;
  bool holder_confirmed_dead;
  Urgency expected;
};

TEST(StatusWriteUrgency, RanksEachKindOfChange) {
  const Takeover from_a{"pod-a", "PodDeleted", WallTime{}};
  const Case cases[] = {
      {"a free lock granted", pending(0), held("7"), false, Urgency::kUrgent},
      {"a takeover's grant", pending(0), held("8", from_a), false, Urgency::kHandOver},
      {"taken from a holder that may still run", held("7"), pending(1), false, Urgency::kHandOver},
      {"taken from a holder whose pod is gone", held("7"), pending(1), true, Urgency::kCanWait},
      {"a queue position", pending(2), pending(1), false, Urgency::kCanWait},
      {"a renewal's condition on the same grant", held("7", from_a), held("7", from_a), false,
       Urgency::kCanWait},
  };
  for (const Case& c : cases)
    EXPECT_EQ(status_write_urgency(c.now, c.desired, c.holder_confirmed_dead), c.expected) << c.name;
}

}  // namespace
}  // namespace eslease::controller
