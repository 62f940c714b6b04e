// The Api decorator: every call is forwarded and reported with its verb and HTTP status,
// and a token bucket (client-go's default limiter) paces calls on a fake clock.
#include "kube/instrumented_api.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "support/fake_clock.h"
#include "support/memory_api.h"

namespace eslease::kube {
namespace {

using testing::make_object;
using testing::MemoryApi;

const Resource kPods = resources::pods();

struct Call {
  std::string verb;
  int status;
  Millis duration;
};

class Calls {
 public:
  RequestObserver observer() {
    return [this](std::string_view verb, int status, Millis duration) {
      std::lock_guard lock(mutex_);
      calls_.push_back({std::string(verb), status, duration});
    };
  }
  std::vector<Call> all() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
};

InstrumentedApiOptions limit(double qps, int burst, RequestObserver observer) {
  InstrumentedApiOptions options;
  options.qps = qps;
  options.burst = burst;
  options.observer = std::move(observer);
  return options;
}

// Elapsed fake time since `start`.
Millis since(const eslease::testing::FakeClock& clock, MonoTime start) {
  return std::chrono::duration_cast<Millis>(clock.monotonic() - start);
}

// ------------------------------------------------------------------------------------------
// Forwarding and reporting.

TEST(InstrumentedApi, ForwardsEveryCallAndReportsItsVerbAndStatus) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApi api(memory, limit(1000, 1000, calls.observer()), clock);

  auto created = api.create(kPods, "ns", make_object("ns", "p"));
  ASSERT_TRUE(created.ok()) << created.error().describe();
  ASSERT_TRUE(api.get(kPods, "ns", "p").ok());
  ASSERT_TRUE(api.list(kPods, "ns").ok());
  json changed = *created;
  changed["spec"] = {{"a", 1}};
  auto updated = api.update(kPods, changed);
  ASSERT_TRUE(updated.ok());
  ASSERT_TRUE(api.update_status(kPods, *updated).ok());
  ASSERT_TRUE(api.patch(kPods, "ns", "p", PatchType::kMerge, {{"spec", {{"b", 2}}}}).ok());
  ASSERT_TRUE(api.remove(kPods, "ns", "p").ok());

  EXPECT_EQ(memory.writes().size(), 4u);  // create, update, update_status, patch reached the store
  EXPECT_FALSE(memory.get(kPods, "ns", "p", {}).ok());  // the delete did too
  const std::vector<std::string> verbs = {"create", "get", "list", "update", "update", "patch", "delete"};
  const auto seen = calls.all();
  ASSERT_EQ(seen.size(), verbs.size());
  for (std::size_t i = 0; i < verbs.size(); ++i) {
    EXPECT_EQ(seen[i].verb, verbs[i]) << i;
    EXPECT_EQ(seen[i].status, 200) << verbs[i];
  }
}

TEST(InstrumentedApi, ReportsTheErrorsHttpStatusOrZeroWithoutAnAnswer) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApi api(memory, limit(1000, 1000, calls.observer()), clock);

  EXPECT_EQ(api.get(kPods, "ns", "missing").error().code, ErrorCode::kNotFound);
  memory.fail_next("create", make_error(ErrorCode::kUnavailable, "connection refused"));
  EXPECT_EQ(api.create(kPods, "ns", make_object("ns", "p")).error().code, ErrorCode::kUnavailable);
  memory.fail_next("patch", make_error(ErrorCode::kInvalid, "rejected", 422));
  EXPECT_EQ(api.patch(kPods, "ns", "p", PatchType::kMerge, json::object()).error().http_status, 422);
  EXPECT_EQ(api.remove(kPods, "ns", "missing").error().code, ErrorCode::kNotFound);

  const auto seen = calls.all();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].status, 404);
  EXPECT_EQ(seen[1].status, 0);
  EXPECT_EQ(seen[2].status, 422);
  EXPECT_EQ(seen[3].verb, "delete");
  EXPECT_EQ(seen[3].status, 404);
}

// An Api whose reads take a fixed time on the fake clock.
class SlowApi final : public Api {
 public:
  SlowApi(Api& inner, eslease::testing::FakeClock& clock, Millis latency)
      : inner_(inner), clock_(clock), latency_(latency) {}
  Result<json> get(const Resource& r, const std::string& ns, const std::string& name,
                   const CallOptions& call) override {
    clock_.advance(latency_);
    return inner_.get(r, ns, name, call);
  }
  Result<ListPage> list(const Resource& r, const std::string& ns, const ListOptions& o) override {
    return inner_.list(r, ns, o);
  }
  Result<json> create(const Resource& r, const std::string& ns, const json& o,
                      const CallOptions& c) override {
    return inner_.create(r, ns, o, c);
  }
  Result<json> update(const Resource& r, const json& o, const CallOptions& c) override {
    return inner_.update(r, o, c);
  }
  Result<json> update_status(const Resource& r, const json& o, const CallOptions& c) override {
    return inner_.update_status(r, o, c);
  }
  Result<json> patch(const Resource& r, const std::string& ns, const std::string& n, PatchType t,
                     const json& p, bool s, const CallOptions& c) override {
    return inner_.patch(r, ns, n, t, p, s, c);
  }
  Status remove(const Resource& r, const std::string& ns, const std::string& n,
                const DeleteOptions& o) override {
    return inner_.remove(r, ns, n, o);
  }
  Status watch(const Resource& r, const std::string& ns, const WatchOptions& o, const WatchHandler& h,
               std::stop_token s) override {
    return inner_.watch(r, ns, o, h, s);
  }

 private:
  Api& inner_;
  eslease::testing::FakeClock& clock_;
  Millis latency_;
};

TEST(InstrumentedApi, DurationIsTheCallItselfNotTheWaitForAToken) {
  MemoryApi memory;
  memory.put_object(kPods, make_object("ns", "p"));
  eslease::testing::FakeClock clock;
  SlowApi slow(memory, clock, Millis(7));
  Calls calls;
  InstrumentedApi api(slow, limit(10, 1, calls.observer()), clock);

  ASSERT_TRUE(api.get(kPods, "ns", "p").ok());
  ASSERT_TRUE(api.get(kPods, "ns", "p").ok());  // waits for a token first (93 ms left of 100)
  const auto seen = calls.all();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].duration, Millis(7));
  EXPECT_EQ(seen[1].duration, Millis(7));
  EXPECT_EQ(clock.sleeps(), 1);
}

TEST(InstrumentedApi, AWatchIsReportedWhenItsFirstEventArrives) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApi api(memory, limit(1000, 1000, calls.observer()), clock);
  memory.push_watch([&](const WatchOptions&, const WatchHandler& handler) -> Status {
    clock.advance(Millis(3));  // the stream takes 3 ms to start
    for (int i = 0; i < 5; ++i) {
      handler(WatchEvent{WatchEvent::Type::kAdded, make_object("ns", "p" + std::to_string(i))});
      clock.advance(Millis(1000));  // then stays open for a long time
    }
    return {};
  });
  int events = 0;
  ASSERT_TRUE(api.watch(kPods, "ns", {}, [&](const WatchEvent&) { return ++events > 0; }, {}).ok());
  EXPECT_EQ(events, 5);
  const auto seen = calls.all();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].verb, "watch");
  EXPECT_EQ(seen[0].status, 200);
  EXPECT_EQ(seen[0].duration, Millis(3));  // not the five seconds the stream stayed open
}

TEST(InstrumentedApi, AWatchWithoutEventsIsReportedWithHowItEnded) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApi api(memory, limit(1000, 1000, calls.observer()), clock);
  memory.push_watch([](const WatchOptions&, const WatchHandler&) -> Status {
    return make_error(ErrorCode::kGone, "too old resource version", 410);
  });
  memory.push_watch([](const WatchOptions&, const WatchHandler&) -> Status {
    return make_error(ErrorCode::kUnavailable, "connection reset");
  });
  memory.push_watch([](const WatchOptions&, const WatchHandler&) -> Status { return {}; });
  auto ignore = [](const WatchEvent&) { return true; };
  EXPECT_EQ(api.watch(kPods, "", {}, ignore, {}).error().code, ErrorCode::kGone);
  EXPECT_EQ(api.watch(kPods, "", {}, ignore, {}).error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(api.watch(kPods, "", {}, ignore, {}).ok());
  const auto seen = calls.all();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].status, 410);
  EXPECT_EQ(seen[1].status, 0);
  EXPECT_EQ(seen[2].status, 200);
}

TEST(InstrumentedApi, AWatchStoppedBeforeAnyEventIsNotAServerAnswer) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApi api(memory, limit(1000, 1000, calls.observer()), clock);
  std::stop_source stop;
  memory.push_watch([&](const WatchOptions&, const WatchHandler&) -> Status {
    stop.request_stop();
    return make_error(ErrorCode::kCancelled, "stopped");
  });
  EXPECT_EQ(api.watch(
                   kPods, "", {}, [](const WatchEvent&) { return true; }, stop.get_token())
                .error()
                .code,
            ErrorCode::kCancelled);
  EXPECT_TRUE(calls.all().empty());
}

TEST(InstrumentedApi, WorksWithoutAnObserver) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(10, 1, nullptr), clock);
  EXPECT_EQ(api.get(kPods, "ns", "missing").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(api.get(kPods, "ns", "missing").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(clock.sleeps(), 1);
}

// ------------------------------------------------------------------------------------------
// The rate limit.

TEST(InstrumentedApi, ABurstPassesAtOnceThenCallsArePacedAtQps) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(10, 5, nullptr), clock);
  const MonoTime start = clock.monotonic();
  for (int i = 0; i < 5; ++i) (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(clock.sleeps(), 0);
  EXPECT_EQ(since(clock, start), Millis(0));
  for (int i = 0; i < 10; ++i) (void)api.get(kPods, "ns", "p");  // 10 more at 10 per second
  EXPECT_EQ(clock.sleeps(), 10);
  EXPECT_EQ(since(clock, start), Millis(1000));
}

TEST(InstrumentedApi, TokensRefillOverTimeUpToTheBurst) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(10, 5, nullptr), clock);
  for (int i = 0; i < 5; ++i) (void)api.get(kPods, "ns", "p");
  clock.advance(Millis(300));  // three tokens back
  for (int i = 0; i < 3; ++i) (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(clock.sleeps(), 0);
  (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(clock.sleeps(), 1);

  clock.advance(std::chrono::hours(1));  // idle for an hour: still only `burst` tokens
  const int before = clock.sleeps();
  for (int i = 0; i < 5; ++i) (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(clock.sleeps(), before);
  (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(clock.sleeps(), before + 1);
}

TEST(InstrumentedApi, WritesAndReadsShareOneBucket) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(1, 3, nullptr), clock);
  (void)api.create(kPods, "ns", make_object("ns", "a"));
  (void)api.get(kPods, "ns", "a");
  (void)api.patch(kPods, "ns", "a", PatchType::kMerge, json::object());
  EXPECT_EQ(clock.sleeps(), 0);
  const MonoTime before = clock.monotonic();
  (void)api.remove(kPods, "ns", "a");
  EXPECT_EQ(since(clock, before), Millis(1000));
}

TEST(InstrumentedApi, AWatchTakesATokenOnlyToStart) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(1, 1, nullptr), clock);
  memory.set_watch_fallback([](const WatchOptions&, const WatchHandler& handler) -> Status {
    for (int i = 0; i < 1000; ++i) handler(WatchEvent{WatchEvent::Type::kModified, make_object("ns", "p")});
    return {};
  });
  int events = 0;
  auto count = [&](const WatchEvent&) { return ++events > 0; };
  ASSERT_TRUE(api.watch(kPods, "", {}, count, {}).ok());
  EXPECT_EQ(events, 1000);
  EXPECT_EQ(clock.sleeps(), 0);  // a thousand events, one token
  ASSERT_TRUE(api.watch(kPods, "", {}, count, {}).ok());
  EXPECT_EQ(clock.sleeps(), 1);  // the next watch waits for the next token
}

TEST(InstrumentedApi, ZeroQpsTurnsTheLimitOff) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(0, 1, nullptr), clock);
  for (int i = 0; i < 100; ++i) (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(InstrumentedApi, AStopEndsTheWaitWithoutCallingTheServer) {
  MemoryApi memory;
  memory.put_object(kPods, make_object("ns", "p"));
  eslease::testing::FakeClock clock;
  std::stop_source stop;
  Calls calls;
  InstrumentedApiOptions options = limit(1, 1, calls.observer());
  options.stop = stop.get_token();
  InstrumentedApi api(memory, options, clock);
  ASSERT_TRUE(api.get(kPods, "ns", "p").ok());
  stop.request_stop();
  auto stopped = api.get(kPods, "ns", "p");
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code, ErrorCode::kCancelled);
  EXPECT_EQ(calls.all().size(), 1u);  // the stopped call never reached the server
}

TEST(InstrumentedApi, AnAbandonedWaitDoesNotCostTheNextCaller) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(1, 1, nullptr), clock);
  (void)api.get(kPods, "ns", "p");  // the only token
  std::stop_source watch_stop;
  watch_stop.request_stop();
  EXPECT_EQ(api.watch(
                   kPods, "", {}, [](const WatchEvent&) { return true; }, watch_stop.get_token())
                .error()
                .code,
            ErrorCode::kCancelled);
  EXPECT_TRUE(memory.watch_calls().empty());
  const MonoTime before = clock.monotonic();
  (void)api.get(kPods, "ns", "p");
  EXPECT_EQ(since(clock, before), Millis(1000));  // one token's wait, not two
}

TEST(InstrumentedApi, AWaitLongerThanAllowedFailsAtOnce) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApiOptions options = limit(1, 1, calls.observer());
  options.max_wait = Millis(500);
  InstrumentedApi api(memory, options, clock);
  (void)api.get(kPods, "ns", "p");
  const MonoTime before = clock.monotonic();
  auto throttled = api.get(kPods, "ns", "p");
  ASSERT_FALSE(throttled.ok());
  EXPECT_EQ(throttled.error().code, ErrorCode::kTooManyRequests);
  EXPECT_TRUE(throttled.error().unavailable());
  EXPECT_NE(throttled.error().message.find("rate limit"), std::string::npos);
  EXPECT_EQ(since(clock, before), Millis(0));
  EXPECT_EQ(calls.all().size(), 1u);
  clock.advance(Millis(1000));  // nothing was taken: the next token is there on time
  EXPECT_EQ(api.get(kPods, "ns", "p").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(clock.sleeps(), 0);
}

TEST(InstrumentedApi, ACallsOwnTimeoutBoundsItsWait) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(1, 1, nullptr), clock);
  (void)api.get(kPods, "ns", "p");
  CallOptions quick;
  quick.timeout = Millis(200);
  EXPECT_EQ(api.get(kPods, "ns", "p", quick).error().code, ErrorCode::kTooManyRequests);
  ListOptions list;
  list.call.timeout = Millis(200);
  EXPECT_EQ(api.list(kPods, "ns", list).error().code, ErrorCode::kTooManyRequests);
  CallOptions patient;
  patient.timeout = Millis(5000);
  EXPECT_EQ(api.get(kPods, "ns", "p", patient).error().code, ErrorCode::kNotFound);
}

TEST(InstrumentedApi, ConcurrentCallersAllGetThrough) {
  MemoryApi memory;
  eslease::testing::FakeClock clock;
  Calls calls;
  InstrumentedApi api(memory, limit(100, 10, calls.observer()), clock);
  const MonoTime start = clock.monotonic();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) (void)api.get(kPods, "ns", "p");
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(calls.all().size(), 200u);
  // However the threads interleave, 190 tokens beyond the burst take 1.9 s to refill.
  EXPECT_GE(since(clock, start), Millis(1900));
}

TEST(TokenBucket, WaitersQueueInOrder) {
  eslease::testing::FakeClock clock;
  TokenBucket bucket(2, 1, clock);  // one token per 500 ms
  const MonoTime start = clock.monotonic();
  ASSERT_TRUE(bucket.take(Millis(10000), {}).ok());
  ASSERT_TRUE(bucket.take(Millis(10000), {}).ok());
  EXPECT_EQ(since(clock, start), Millis(500));
  ASSERT_TRUE(bucket.take(Millis(10000), {}).ok());
  EXPECT_EQ(since(clock, start), Millis(1000));
}

TEST(TokenBucket, AWriteThatCanWaitIsDeferredWhileNoTokenIsFree) {
  eslease::testing::FakeClock clock;
  TokenBucket bucket(2, 1, clock);  // one token per 500 ms
  const MonoTime start = clock.monotonic();
  ASSERT_TRUE(bucket.take_unless_busy()) << "a free token is taken";
  EXPECT_FALSE(bucket.take_unless_busy());
  EXPECT_EQ(since(clock, start), Millis(0)) << "a deferred write does not wait";
  // It took nothing: an urgent write waits only for the one token being refilled.
  ASSERT_TRUE(bucket.take(Millis(10000), {}).ok());
  EXPECT_EQ(since(clock, start), Millis(500));
}

TEST(TokenBucket, WritesThatCanWaitLeaveHalfTheBurstToWritesThatCannot) {
  eslease::testing::FakeClock clock;
  TokenBucket bucket(2, 4, clock);
  const MonoTime start = clock.monotonic();
  ASSERT_TRUE(bucket.take_unless_busy());
  ASSERT_TRUE(bucket.take_unless_busy());
  EXPECT_FALSE(bucket.take_unless_busy()) << "two tokens are left, and they are kept for urgent writes";
  ASSERT_TRUE(bucket.take(Millis(10000), {}).ok());
  ASSERT_TRUE(bucket.take(Millis(10000), {}).ok());
  EXPECT_EQ(since(clock, start), Millis(0)) << "the urgent writes found their tokens waiting";
}

// A GET held in flight on the memory API until release(): the call a write that can wait
// meets while it is under way.
class CallInFlight {
 public:
  CallInFlight(MemoryApi& memory, InstrumentedApi& api, CallOptions options) {
    memory.before_each_get([this] {
      std::unique_lock lock(mutex_);
      in_flight_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return answered_; });
    });
    thread_ = std::thread([&api, options] { (void)api.get(kPods, "ns", "p", options); });
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [this] { return in_flight_; });
  }
  ~CallInFlight() { release(); }
  CallInFlight(const CallInFlight&) = delete;
  CallInFlight& operator=(const CallInFlight&) = delete;
  void release() {
    {
      std::lock_guard lock(mutex_);
      answered_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool in_flight_ = false;
  bool answered_ = false;
  std::thread thread_;
};

Result<std::optional<json>> patch_that_can_wait(InstrumentedApi& api) {
  return api.patch_unless_busy(kPods, "ns", "p", PatchType::kMerge, {{"spec", {{"a", 1}}}});
}

TEST(InstrumentedApi, AWriteThatCanWaitIsDeferredWhileAHandOverIsInFlight) {
  MemoryApi memory;
  ASSERT_TRUE(memory.create(kPods, "ns", make_object("ns", "p"), {}).ok());
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(100, 100, {}), clock);
  CallOptions hand_over;
  hand_over.hands_over = true;
  CallInFlight call(memory, api, hand_over);
  auto deferred = patch_that_can_wait(api);
  ASSERT_TRUE(deferred.ok()) << "being left for later is not an error";
  EXPECT_FALSE(*deferred);
  call.release();
  auto sent = patch_that_can_wait(api);
  ASSERT_TRUE(sent.ok());
  EXPECT_TRUE(*sent) << "once the hand-over is answered, the write goes";
}

TEST(InstrumentedApi, AWriteThatCanWaitSharesTheServerWithOtherCalls) {
  MemoryApi memory;
  ASSERT_TRUE(memory.create(kPods, "ns", make_object("ns", "p"), {}).ok());
  eslease::testing::FakeClock clock;
  InstrumentedApi api(memory, limit(100, 100, {}), clock);
  CallInFlight grant(memory, api, CallOptions{});  // urgent, but no hand-over
  auto sent = patch_that_can_wait(api);
  ASSERT_TRUE(sent.ok());
  EXPECT_TRUE(*sent);
}

}  // namespace
}  // namespace eslease::kube
