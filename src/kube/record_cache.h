// The informer's local copy of a resource, kept as typed records: each object the API sends
// is decoded once, as it arrives, into the compact record its reader needs, and the JSON is
// dropped. A controller watching 10,000 pods keeps 10,000 small structs, not 10,000 JSON
// trees. RecordCache<json> (ObjectCache) keeps the objects themselves, for generic callers.
//
// Readers on any thread; one writer, the informer's thread.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kube/api.h"

namespace eslease::kube {

using nlohmann::json;

// What an informer writes into. The informer owns the list/watch protocol; the store decides
// what to keep of each object and whom to tell.
class InformerStore {
 public:
  virtual ~InformerStore() = default;
  // A re-list: begin, then every listed object as its page arrives, then commit, which
  // swaps the new content in and reports each difference once. A failed list calls begin
  // again on the next attempt, dropping what was staged.
  virtual void begin_relist() = 0;
  virtual void stage(const json& object) = 0;
  virtual void commit_relist() = 0;
  // Watch events. `remove` gets the object's last state as the DELETED event carries it.
  virtual void upsert(const json& object) = 0;
  virtual void remove(const json& object) = 0;
};

template <typename Record>
struct RecordHandlers {
  std::function<void(const Record& object)> on_add;
  std::function<void(const Record& old_object, const Record& new_object)> on_update;
  std::function<void(const Record& last_known)> on_delete;
  // Every object a (re-)list added, together, before each one's on_add: objects made while
  // nobody watched, which a list brings in name order, not in the order they were made.
  std::function<void(const std::vector<const Record*>& added)> on_listed;
};

template <typename Record>
class RecordCache final : public InformerStore {
 public:
  using Decode = std::function<Record(const json& object)>;

  // `decode` turns an API object into the record kept; handlers are called on the
  // informer's thread, outside the cache's lock, so they may read the cache.
  RecordCache(Decode decode, RecordHandlers<Record> handlers)
      : decode_(std::move(decode)), handlers_(std::move(handlers)) {}

  std::optional<Record> get(const std::string& key) const {
    std::shared_lock lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second.record;
  }
  // Calls `fn` with the record under the read lock (no copy); false when there is none.
  bool read(const std::string& key, const std::function<void(const Record& record)>& fn) const {
    std::shared_lock lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    fn(it->second.record);
    return true;
  }
  std::vector<std::string> keys() const {
    std::shared_lock lock(mutex_);
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [key, entry] : entries_) out.push_back(key);
    return out;
  }
  std::size_t size() const {
    std::shared_lock lock(mutex_);
    return entries_.size();
  }
  // Calls `fn` for every record under the read lock (no copies); `fn` must not call back
  // into the cache's writers.
  void for_each(const std::function<void(const std::string& key, const Record& record)>& fn) const {
    std::shared_lock lock(mutex_);
    for (const auto& [key, entry] : entries_) fn(key, entry.record);
  }

  void begin_relist() override { staged_.clear(); }

  void stage(const json& object) override {
    std::string key = object_key(object);
    if (key.empty()) return;
    staged_.insert_or_assign(std::move(key), make_entry(object));
  }

  void commit_relist() override {
    std::unordered_map<std::string, Entry> old;
    {
      std::unique_lock lock(mutex_);
      entries_.swap(staged_);
      old.swap(staged_);
    }
    // The informer thread is the only writer, so reading entries_ unlocked here is safe;
    // handlers run outside the lock.
    std::vector<const Record*> added;
    std::vector<std::pair<Entry, const Record*>> updated;
    std::vector<Entry> deleted;
    for (const auto& [key, entry] : entries_) {
      auto previous = old.find(key);
      if (previous == old.end()) {
        added.push_back(&entry.record);
        continue;
      }
      if (previous->second.uid != entry.uid) {  // replaced under the same name
        deleted.push_back(std::move(previous->second));
        added.push_back(&entry.record);
      } else if (previous->second.resource_version != entry.resource_version) {
        updated.emplace_back(std::move(previous->second), &entry.record);
      }
      old.erase(previous);
    }
    for (auto& [key, entry] : old) deleted.push_back(std::move(entry));
    old.clear();
    if (handlers_.on_delete)
      for (const Entry& entry : deleted) handlers_.on_delete(entry.record);
    if (handlers_.on_update)
      for (const auto& [before, after] : updated) handlers_.on_update(before.record, *after);
    if (handlers_.on_listed && !added.empty()) handlers_.on_listed(added);
    if (handlers_.on_add)
      for (const Record* record : added) handlers_.on_add(*record);
  }

  void upsert(const json& object) override {
    std::string key = object_key(object);
    if (key.empty()) return;
    Entry entry = make_entry(object);
    const std::string uid = entry.uid, version = entry.resource_version;
    std::optional<Entry> previous;
    const Record* stored = nullptr;
    {
      std::unique_lock lock(mutex_);
      auto [it, inserted] = entries_.try_emplace(key);
      if (!inserted) previous = std::move(it->second);
      it->second = std::move(entry);
      stored = &it->second.record;
    }
    // The informer thread is the only writer: `stored` stays valid while handlers run.
    if (!previous) {
      if (handlers_.on_add) handlers_.on_add(*stored);
    } else if (previous->uid != uid) {
      if (handlers_.on_delete) handlers_.on_delete(previous->record);
      if (handlers_.on_add) handlers_.on_add(*stored);
    } else if (previous->resource_version != version) {
      if (handlers_.on_update) handlers_.on_update(previous->record, *stored);
    }  // else: already seen (e.g. through a re-list)
  }

  void remove(const json& object) override {
    std::string key = object_key(object);
    if (key.empty()) return;
    bool existed = false;
    {
      std::unique_lock lock(mutex_);
      existed = entries_.erase(key) > 0;
    }
    if (existed && handlers_.on_delete) handlers_.on_delete(decode_(object));
  }

 private:
  struct Entry {
    std::string uid;
    std::string resource_version;
    Record record;
  };

  Entry make_entry(const json& object) const {
    return Entry{meta_string(object, "uid"), meta_string(object, "resourceVersion"), decode_(object)};
  }

  Decode decode_;
  RecordHandlers<Record> handlers_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<std::string, Entry> staged_;  // the writer's alone
};

// A cache of the API objects themselves (optionally trimmed by a decode that keeps fewer
// fields, e.g. keep_pod_liveness_fields).
using ObjectCache = RecordCache<json>;
using InformerHandlers = RecordHandlers<json>;

// Keeps only what pod liveness needs: metadata name/namespace/uid/resourceVersion/labels/
// deletionTimestamp, spec.nodeName, status.phase and the Ready condition.
json keep_pod_liveness_fields(json pod);

}  // namespace eslease::kube
