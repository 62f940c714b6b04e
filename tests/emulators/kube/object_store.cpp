#include "emulators/kube/object_store.h"

#include <algorithm>

namespace eslease::kubeemu {

using nlohmann::json;

WatchStream::Next WatchStream::next(Clock& clock, EventPtr& out, MonoTime until) {
  std::unique_lock lock(mutex_);
  clock.wait_until(lock, cv_, until, {}, [&] { return closed_ || !queue_.empty(); });
  if (!queue_.empty()) {
    out = std::move(queue_.front());
    queue_.pop_front();
    return Next::kEvent;
  }
  return closed_ ? Next::kClosed : Next::kIdle;
}

std::uint64_t WatchStream::progress() const {
  std::lock_guard lock(mutex_);
  return progress_rv_;
}

void WatchStream::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool WatchStream::closed() const {
  std::lock_guard lock(mutex_);
  return closed_;
}

void WatchStream::deliver(const EventPtr& event) {
  bool queued = false;
  {
    std::lock_guard lock(mutex_);
    if (event->resource_id == resource_id_) {
      queue_.push_back(event);
      queued = true;
    }
    progress_rv_ = event->resource_version;
  }
  // Only an event wakes the reader (next() waits for one); progress is read when idle.
  if (queued) cv_.notify_all();
}

// The counter starts above zero so that "0" keeps its special meaning ("any version").
ObjectStore::ObjectStore(std::size_t history_limit) : history_limit_(history_limit), rv_(100), floor_(100) {}

ObjectPtr ObjectStore::get(const std::string& resource_id, const std::string& ns,
                           const std::string& name) const {
  auto resource = objects_.find(resource_id);
  if (resource == objects_.end()) return nullptr;
  auto it = resource->second.find(key_of(ns, name));
  return it == resource->second.end() ? nullptr : it->second;
}

std::vector<ObjectPtr> ObjectStore::list(const std::string& resource_id, const std::string& ns,
                                         const std::string& after_key, std::size_t limit) const {
  std::vector<ObjectPtr> out;
  scan(resource_id, ns, after_key, [&](const ObjectPtr& object) {
    out.push_back(object);
    return limit == 0 || out.size() < limit;
  });
  return out;
}

void ObjectStore::scan(const std::string& resource_id, const std::string& ns, const std::string& after_key,
                       const std::function<bool(const ObjectPtr&)>& visit) const {
  auto resource = objects_.find(resource_id);
  if (resource == objects_.end()) return;
  const auto& map = resource->second;
  const std::string prefix = ns.empty() ? "" : ns + "/";
  auto it = after_key.empty() ? map.lower_bound(prefix) : map.upper_bound(after_key);
  for (; it != map.end(); ++it) {
    if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (!visit(it->second)) break;
  }
}

ObjectPtr ObjectStore::put(const std::string& resource_id, const std::string& ns, const std::string& name,
                           json object) {
  const std::uint64_t rv = ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  auto stored = std::make_shared<const json>(std::move(object));
  auto& slot = objects_[resource_id][key_of(ns, name)];
  auto event = std::make_shared<WatchEvent>();
  event->type = slot ? "MODIFIED" : "ADDED";
  event->resource_version = rv;
  event->resource_id = resource_id;
  event->ns = ns;
  event->object = stored;
  event->previous = slot;
  slot = stored;
  record(std::move(event));
  return stored;
}

ObjectPtr ObjectStore::erase(const std::string& resource_id, const std::string& ns, const std::string& name) {
  auto resource = objects_.find(resource_id);
  if (resource == objects_.end()) return nullptr;
  auto it = resource->second.find(key_of(ns, name));
  if (it == resource->second.end()) return nullptr;
  const std::uint64_t rv = ++rv_;
  json last = *it->second;
  last["metadata"]["resourceVersion"] = std::to_string(rv);
  auto final_state = std::make_shared<const json>(std::move(last));
  auto event = std::make_shared<WatchEvent>();
  event->type = "DELETED";
  event->resource_version = rv;
  event->resource_id = resource_id;
  event->ns = ns;
  event->object = final_state;
  event->previous = it->second;
  resource->second.erase(it);
  record(std::move(event));
  return final_state;
}

std::vector<std::pair<std::string, std::string>> ObjectStore::keys(const std::string& resource_id,
                                                                   const std::string& ns) const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& object : list(resource_id, ns)) {
    const auto& meta = (*object)["metadata"];
    out.emplace_back(meta.value("namespace", ""), meta.value("name", ""));
  }
  return out;
}

std::vector<std::string> ObjectStore::resource_ids() const {
  std::vector<std::string> out;
  for (const auto& [id, map] : objects_) out.push_back(id);
  return out;
}

void ObjectStore::record(EventPtr event) {
  for (const auto& stream : streams_) stream->deliver(event);
  for (const auto& [name, observer] : observers_) observer(event);
  history_.push_back(std::move(event));
  while (history_.size() > history_limit_) {
    floor_ = history_.front()->resource_version;
    history_.pop_front();
  }
}

std::shared_ptr<WatchStream> ObjectStore::watch(const std::string& resource_id, std::uint64_t from_rv) {
  if (from_rv < floor_) return nullptr;
  auto stream = std::make_shared<WatchStream>(resource_id, std::max(from_rv, rv_));
  // History is ordered by resourceVersion: find the first event after from_rv.
  auto first = std::upper_bound(history_.begin(), history_.end(), from_rv,
                                [](std::uint64_t rv, const EventPtr& e) { return rv < e->resource_version; });
  for (auto it = first; it != history_.end(); ++it) {
    if ((*it)->resource_id == resource_id) stream->queue_.push_back(*it);
  }
  streams_.push_back(stream);
  return stream;
}

std::shared_ptr<WatchStream> ObjectStore::watch_from_now(const std::string& resource_id) {
  auto stream = std::make_shared<WatchStream>(resource_id, rv_);
  streams_.push_back(stream);
  return stream;
}

void ObjectStore::unwatch(const std::shared_ptr<WatchStream>& stream) {
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
}

void ObjectStore::close_all_watches() {
  for (const auto& stream : streams_) stream->close();
  streams_.clear();
}

void ObjectStore::close_watches(const std::string& resource_id) {
  for (const auto& stream : streams_) {
    if (stream->resource_id() == resource_id) stream->close();
  }
  streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                [&](const auto& s) { return s->resource_id() == resource_id; }),
                 streams_.end());
}

std::size_t ObjectStore::open_watches() const {
  return streams_.size();
}

void ObjectStore::compact() {
  history_.clear();
  floor_ = rv_;
}

}  // namespace eslease::kubeemu
