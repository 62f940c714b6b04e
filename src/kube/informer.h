// A generic informer, as client-go's reflector + indexer: LIST (paginated), then WATCH from
// the list's resourceVersion with bookmarks, keeping a local cache and calling handlers on
// changes. Re-lists on 410 Expired (HTTP answer or ERROR event) and when a watch cannot be
// started at all (e.g. the server restarted); a re-list is diffed against the cache so
// handlers see exactly one delete for each vanished object and one update for each changed
// one. Failures back off with jitter; a watch silent past the idle timeout is reconnected.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "common/backoff.h"
#include "common/clock.h"
#include "kube/api.h"
#include "kube/object_cache.h"

namespace eslease::kube {

// Why the informer started over; labels for eslease_watch_restarts_total{resource,reason}.
enum class RestartReason { kExpired, kClosed, kIdle, kError };
const char* to_string(RestartReason reason);

struct InformerHandlers {
  std::function<void(const json& object)> on_add;
  std::function<void(const json& old_object, const json& new_object)> on_update;
  std::function<void(const json& last_known)> on_delete;
};

struct InformerOptions {
  std::string ns;  // empty = all namespaces
  std::string label_selector;
  std::string field_selector;
  int page_size = 500;
  // Applied to every object before it is cached and handed to handlers (e.g.
  // keep_pod_liveness_fields), so memory holds only what the controller reads.
  std::function<json(json)> transform;
  // No bytes (not even a bookmark) for this long: reconnect.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(2)};
  // Each watch asks the server to end it after a random time in [min, 2*min), as client-go
  // does, so many clients do not reconnect at once.
  std::chrono::seconds min_watch_timeout{std::chrono::minutes(5)};
  BackoffPolicy backoff{std::chrono::milliseconds(800), std::chrono::seconds(30), 2.0};
  Clock* clock = nullptr;  // SystemClock when null
  std::function<void(RestartReason)> on_restart;
};

class Informer {
 public:
  Informer(Api& api, Resource resource, InformerOptions options, InformerHandlers handlers);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Runs the informer on its own thread until stop() (or destruction).
  void start();
  // Requests a stop and waits for the thread; prompt even mid-watch.
  void stop();
  // The loop itself, for callers that bring their own thread.
  void run(std::stop_token stop);

  bool has_synced() const { return synced_.load(); }
  // Waits until the first list has been delivered; false on timeout.
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  const ObjectCache& cache() const { return cache_; }
  std::string resource_version() const;
  int restarts(RestartReason reason) const { return restarts_[static_cast<int>(reason)].load(); }

 private:
  Status relist(std::stop_token stop);
  // One watch; returns how it ended and whether anything at all arrived.
  struct WatchOutcome {
    Status status;
    int events = 0;
    std::optional<json> error_event;
  };
  WatchOutcome watch_once(std::stop_token stop);
  void apply(const WatchEvent& event);
  void count_restart(RestartReason reason);
  void set_resource_version(std::string rv);
  json prepare(json object) const;

  Api& api_;
  Resource resource_;
  InformerOptions options_;
  InformerHandlers handlers_;
  Clock& clock_;
  ObjectCache cache_;
  std::atomic<bool> synced_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable sync_cv_;
  std::string resource_version_;
  std::array<std::atomic<int>, 4> restarts_{};
  std::jthread thread_;
};

}  // namespace eslease::kube
