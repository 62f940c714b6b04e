// Records core/v1 Events about objects (what `kubectl describe` shows) without slowing the
// caller: record() only queues; a background thread writes. Repeats of the same event
// (same object, type, reason and message) within the correlation window are folded into
// one Event whose count and lastTimestamp are patched, as client-go's correlator does.
// Failures are logged, never thrown; a full queue drops events (counted). Events wait while
// the client's rate limit is busy (Api::patch_unless_busy), so in a burst of hand-overs
// they never hold up a grant.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/clock.h"
#include "kube/api.h"

namespace eslease::kube {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
};

// The reference to an object as read from the API (apiVersion, kind, metadata).
ObjectReference reference_to(const json& object);

enum class EventType { kNormal, kWarning };

struct EventRecorderOptions {
  std::string component = "eslease-controller";
  std::string host;  // the reporting instance (pod name)
  std::size_t queue_capacity = 1000;
  std::chrono::minutes correlation_window{10};
  std::size_t max_correlated = 4096;  // distinct events remembered for aggregation
};

class EventRecorder {
 public:
  // `clock` stamps events and times the correlation window; it must outlive the recorder.
  EventRecorder(Api& api, Clock& clock, EventRecorderOptions options = {});
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void record(const ObjectReference& object, EventType type, std::string reason, std::string message);
  // Waits until everything queued so far is written (or failed); false when `timeout`
  // passes first on the recorder's clock.
  bool flush(Millis timeout);
  // Writes what is queued, then stops the background thread.
  void stop();
  std::uint64_t dropped() const { return dropped_.load(); }

 private:
  struct Pending {
    ObjectReference object;
    EventType type = EventType::kNormal;
    std::string reason;
    std::string message;
    WallTime time;
  };
  struct Correlated {
    std::string ns;
    std::string name;
    int count = 0;
    MonoTime last_seen;
  };
  // While the rate limit defers events, the event thread tries the same event again this
  // often: a retry costs one look at the limiter and nothing else waits on this thread.
  static constexpr Millis kBusyLimiterPoll{200};

  void loop(std::stop_token stop);
  // False when the write was deferred (only when `may_wait`): nothing was sent.
  bool write(const Pending& event, bool may_wait);

  Api& api_;
  EventRecorderOptions options_;
  Clock& clock_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  std::unordered_map<std::string, Correlated> correlated_;  // only touched by the thread
  std::atomic<std::uint64_t> dropped_{0};
  std::uint64_t sequence_ = 0;
  std::jthread thread_;
};

}  // namespace eslease::kube
