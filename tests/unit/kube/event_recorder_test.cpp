#include "kube/event_recorder.h"

#include <gtest/gtest.h>

#include "support/fake_clock.h"
#include "support/memory_api.h"
#include "support/wait.h"

namespace eslease::kube {
namespace {

using namespace std::chrono_literals;
using testing::MemoryApi;

ObjectReference lease_ref() {
  return reference_to({{"apiVersion", "eslease.io/v1alpha1"},
                       {"kind", "Lease"},
                       {"metadata", {{"name", "nightly-a"}, {"namespace", "batch"}, {"uid", "u-1"}}}});
}

TEST(EventRecorderTest, CreatesEventWithInvolvedObjectAndSource) {
  MemoryApi api;
  eslease::testing::FakeClock clock;
  EventRecorder recorder(api, clock, {.component = "eslease-controller", .host = "ctrl-0"});
  recorder.record(lease_ref(), EventType::kWarning, "Invalid", "holder pod missing");
  ASSERT_TRUE(recorder.flush(5s));
  auto writes = api.writes();
  ASSERT_EQ(writes.size(), 1u);
  const json& event = writes[0].second;
  EXPECT_EQ(writes[0].first, "create");
  EXPECT_EQ(event["involvedObject"]["kind"], "Lease");
  EXPECT_EQ(event["involvedObject"]["uid"], "u-1");
  EXPECT_EQ(event["metadata"]["namespace"], "batch");
  EXPECT_EQ(event["metadata"]["name"].get<std::string>().rfind("nightly-a.", 0), 0u);
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "Invalid");
  EXPECT_EQ(event["source"]["component"], "eslease-controller");
  EXPECT_EQ(event["count"], 1);
  EXPECT_EQ(event["firstTimestamp"], event["lastTimestamp"]);
}

TEST(EventRecorderTest, AggregatesRepeatsByPatchingCount) {
  MemoryApi api;
  eslease::testing::FakeClock clock;
  EventRecorder recorder(api, clock);
  for (int i = 0; i < 3; ++i) recorder.record(lease_ref(), EventType::kNormal, "Granted", "lock granted");
  recorder.record(lease_ref(), EventType::kNormal, "Granted", "a different message");
  ASSERT_TRUE(recorder.flush(5s));
  auto writes = api.writes();
  ASSERT_EQ(writes.size(), 4u);
  EXPECT_EQ(writes[0].first, "create");
  EXPECT_EQ(writes[1].first, "patch");
  EXPECT_EQ(writes[1].second["count"], 2);
  EXPECT_EQ(writes[2].second["count"], 3);
  EXPECT_EQ(writes[3].first, "create");
  // Past the correlation window a repeat starts a new Event.
  clock.advance(11min);
  recorder.record(lease_ref(), EventType::kNormal, "Granted", "lock granted");
  ASSERT_TRUE(recorder.flush(5s));
  EXPECT_EQ(api.writes().back().first, "create");
}

TEST(EventRecorderTest, FailuresAreSwallowedAndAFullQueueDrops) {
  MemoryApi api;
  api.fail_next("create", make_error(ErrorCode::kForbidden, "no", 403));
  eslease::testing::FakeClock clock;
  EventRecorderOptions options;
  options.queue_capacity = 2;
  EventRecorder recorder(api, clock, options);
  recorder.record(lease_ref(), EventType::kNormal, "A", "m");
  ASSERT_TRUE(recorder.flush(5s));
  EXPECT_TRUE(api.writes().empty());
  recorder.stop();  // nothing drains the queue from here on
  for (int i = 0; i < 5; ++i) recorder.record(lease_ref(), EventType::kNormal, "B", std::to_string(i));
  EXPECT_EQ(recorder.dropped(), 3u);
}

// In a burst of hand-overs the client's rate limit is busy with grants: an event waits for
// it to be free, and is neither lost nor sent twice.
class EventRecorderWhileBusyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.set_rate_limit_busy(true);
    recorder_.record(lease_ref(), EventType::kNormal, "Granted", "lock granted");
    ASSERT_TRUE(eslease::testing::wait_until([&] { return clock_.sleeps() >= 3; })) << "it is tried again";
    ASSERT_TRUE(api_.writes().empty());
  }
  MemoryApi api_;
  eslease::testing::FakeClock clock_;
  EventRecorder recorder_{api_, clock_};
};

TEST_F(EventRecorderWhileBusyTest, AnEventGoesOnceTheRateLimitIsFree) {
  api_.set_rate_limit_busy(false);
  ASSERT_TRUE(recorder_.flush(5s));
  ASSERT_EQ(api_.writes().size(), 1u);
  EXPECT_EQ(api_.writes()[0].second["reason"], "Granted");
}

TEST_F(EventRecorderWhileBusyTest, StoppingWritesAWaitingEventAtOnce) {
  recorder_.stop();
  ASSERT_EQ(api_.writes().size(), 1u);
}

TEST(EventRecorderTest, LongMessagesAreTruncatedOnACharacterBoundary) {
  MemoryApi api;
  eslease::testing::FakeClock clock;
  EventRecorder recorder(api, clock);
  std::string message(1023, 'a');
  message += "\xc3\xa9\xc3\xa9";  // two-byte characters straddling the 1024-byte limit
  recorder.record(lease_ref(), EventType::kNormal, "Long", message);
  ASSERT_TRUE(recorder.flush(5s));
  std::string stored = api.writes().at(0).second["message"];
  EXPECT_EQ(stored.size(), 1023u);
}

}  // namespace
}  // namespace eslease::kube
