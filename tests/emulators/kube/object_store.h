// The emulator's etcd: every object of every resource under one global resourceVersion
// counter, a bounded history of change events for watch resumption, and the fan-out of
// new events to open watch streams.
//
// Not internally synchronised: the API server serialises all access with one mutex, as
// etcd serialises writes. Only WatchStream is shared with other threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace eslease::kubeemu {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED
  std::uint64_t resource_version = 0;
  std::string resource_id;
  std::string ns;
  ObjectPtr object;
  ObjectPtr previous;  // the object before a MODIFIED, for selector transitions
};
using EventPtr = std::shared_ptr<const WatchEvent>;

// The queue behind one open watch. The store pushes; the serving thread pops.
class WatchStream {
 public:
  explicit WatchStream(std::string resource_id, std::uint64_t start_rv)
      : resource_id_(std::move(resource_id)), progress_rv_(start_rv) {}

  enum class Next { kEvent, kIdle, kClosed };
  // Waits until an event is queued (kEvent, `out` set), `until` passes (kIdle) or the
  // stream is closed (kClosed).
  Next next(Clock& clock, EventPtr& out, MonoTime until);
  // The resourceVersion every queued-or-delivered event is at or below: safe for a bookmark
  // once the queue is empty.
  std::uint64_t progress() const;
  void close();
  bool closed() const;

  const std::string& resource_id() const { return resource_id_; }

 private:
  friend class ObjectStore;
  void deliver(const EventPtr& event);

  const std::string resource_id_;
  mutable std::mutex mutex_;
  std::condition_variable_any cv_;
  std::deque<EventPtr> queue_;
  std::uint64_t progress_rv_;
  bool closed_ = false;
};

class ObjectStore {
 public:
  explicit ObjectStore(std::size_t history_limit);

  std::uint64_t current_rv() const { return rv_; }

  ObjectPtr get(const std::string& resource_id, const std::string& ns, const std::string& name) const;
  // Objects of a resource in key order (namespace, then name), optionally one namespace,
  // starting after `after_key` ("<ns>/<name>"). Stops after `limit` when limit > 0.
  std::vector<ObjectPtr> list(const std::string& resource_id, const std::string& ns,
                              const std::string& after_key = "", std::size_t limit = 0) const;
  // Visits the same objects as list() in order until `visit` returns false.
  void scan(const std::string& resource_id, const std::string& ns, const std::string& after_key,
            const std::function<bool(const ObjectPtr&)>& visit) const;
  static std::string key_of(const std::string& ns, const std::string& name) { return ns + "/" + name; }

  // Stores `object` with the next resourceVersion written into its metadata and emits
  // ADDED (new key) or MODIFIED. Returns the stored object.
  ObjectPtr put(const std::string& resource_id, const std::string& ns, const std::string& name,
                nlohmann::json object);
  // Removes an object; the DELETED event carries its last state with a new resourceVersion.
  ObjectPtr erase(const std::string& resource_id, const std::string& ns, const std::string& name);
  // Every key of a resource (for namespace and CRD deletion).
  std::vector<std::pair<std::string, std::string>> keys(const std::string& resource_id,
                                                        const std::string& ns) const;
  std::vector<std::string> resource_ids() const;

  // Opens a watch after `from_rv`: the stream starts with the kept events after it.
  // nullptr when `from_rv` is older than the kept history (the caller answers 410).
  std::shared_ptr<WatchStream> watch(const std::string& resource_id, std::uint64_t from_rv);
  // Opens a watch at the current resourceVersion (the caller sends the initial state).
  std::shared_ptr<WatchStream> watch_from_now(const std::string& resource_id);
  void unwatch(const std::shared_ptr<WatchStream>& stream);
  void close_all_watches();
  // Ends the watches of one resource (its CRD was deleted).
  void close_watches(const std::string& resource_id);
  std::size_t open_watches() const;

  // The oldest resourceVersion a watch or continue token may resume from.
  std::uint64_t history_floor() const { return floor_; }
  // Forgets all history: resuming from any earlier resourceVersion yields 410.
  void compact();

  // Called with every event as it is recorded (the simulated kubelet's and the garbage
  // collector's feeds), one observer per name. Unlike a watch it is not closed by
  // /_emulator/watches/drop and not counted as an open watch. It runs under the caller's
  // lock, so it must not block. nullptr removes it.
  void set_observer(const std::string& name, std::function<void(const EventPtr&)> observer) {
    if (observer) {
      observers_[name] = std::move(observer);
    } else {
      observers_.erase(name);
    }
  }

 private:
  void record(EventPtr event);

  std::size_t history_limit_;
  std::uint64_t rv_;
  std::uint64_t floor_;
  std::map<std::string, std::map<std::string, ObjectPtr>> objects_;  // resource id -> key -> object
  std::deque<EventPtr> history_;
  std::vector<std::shared_ptr<WatchStream>> streams_;
  std::map<std::string, std::function<void(const EventPtr&)>> observers_;
};

}  // namespace eslease::kubeemu
