// A generic informer, as client-go's reflector + indexer: LIST (paginated), then WATCH from
// the list's resourceVersion with bookmarks, keeping a local cache (an InformerStore, e.g.
// a RecordCache of typed records) that calls handlers on changes. Re-lists on 410 Expired (HTTP answer or
// ERROR event) and when a watch cannot be started at all (e.g. the server restarted); a re-list is diffed
// against the cache so handlers see exactly one delete for each vanished object and one update for each
// changed one. Failures back off with jitter; a watch silent past the idle timeout is reconnected.
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
#include <type_traits>

#include "common/backoff.h"
#include "common/clock.h"
#include "kube/api.h"
#include "kube/record_cache.h"

namespace eslease::kube {

// Why the informer started over; labels for eslease_watch_restarts_total{resource,reason}.
enum class RestartReason { kExpired, kClosed, kIdle, kError };
const char* to_string(RestartReason reason);

struct InformerOptions {
  std::string ns;  // empty = all namespaces
  std::string label_selector;
  std::string field_selector;
  int page_size = 500;
  // No bytes (not even a bookmark) for this long: reconnect.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(2)};
  // Each watch asks the server to end it after a random time in [min, 2*min), as client-go
  // does, so many clients do not reconnect at once.
  std::chrono::seconds min_watch_timeout{std::chrono::minutes(5)};
  BackoffPolicy backoff{std::chrono::milliseconds(800), std::chrono::seconds(30), 2.0};
  std::function<void(RestartReason)> on_restart;
};

class Informer {
 public:
  // `store` receives everything listed and watched; it and `clock` must outlive the informer.
  Informer(Api& api, Clock& clock, Resource resource, InformerOptions options, InformerStore& store);
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
  // Waits until the first list has been delivered; false when `timeout` passes on the
  // informer's clock, or `stop` is requested, first.
  bool wait_for_sync(Millis timeout, std::stop_token stop = {}) const;

  std::string resource_version() const;
  int restarts(RestartReason reason) const { return restarts_[static_cast<int>(reason)].load(); }

 private:
  // Says why a list failed: in words when the resource is not served (a CRD not installed).
  void log_list_failure(const Error& error) const;
  Status relist(std::stop_token stop);
  // One watch; returns how it ended and how many events (other than an error) arrived.
  struct WatchOutcome {
    Status status;
    int events = 0;
    std::optional<json> error_event;
  };
  WatchOutcome watch_once(std::stop_token stop);
  void apply(const WatchEvent& event);
  void count_restart(RestartReason reason);
  void set_resource_version(std::string rv);

  Api& api_;
  Resource resource_;
  InformerOptions options_;
  InformerStore& store_;
  Clock& clock_;
  std::atomic<bool> synced_{false};
  mutable std::mutex mutex_;
  mutable std::condition_variable_any sync_cv_;
  std::string resource_version_;
  std::array<std::atomic<int>, 4> restarts_{};
  std::jthread thread_;
};

// The cache must be built before the informer that fills it and outlive it: a base
// declared first does both.
template <typename Record>
struct CacheHolder {
  RecordCache<Record> cache_;
};

// An informer together with the RecordCache it fills. `decode` turns each API object into the
// Record kept; for json it may be omitted (objects are kept whole) or trim them.
template <typename Record>
class TypedInformer : private CacheHolder<Record>, public Informer {
 public:
  TypedInformer(Api& api, Clock& clock, Resource resource, InformerOptions options,
                RecordHandlers<Record> handlers, typename RecordCache<Record>::Decode decode = {})
      : CacheHolder<Record>{RecordCache<Record>(with_default(std::move(decode)), std::move(handlers))},
        Informer(api, clock, std::move(resource), std::move(options), this->cache_) {}
  ~TypedInformer() { stop(); }  // before the cache goes

  const RecordCache<Record>& cache() const { return this->cache_; }

 private:
  static typename RecordCache<Record>::Decode with_default(typename RecordCache<Record>::Decode decode) {
    if constexpr (std::is_same_v<Record, json>) {
      if (!decode) return [](const json& object) { return object; };
    }
    return decode;
  }
};

using JsonInformer = TypedInformer<json>;

}  // namespace eslease::kube
