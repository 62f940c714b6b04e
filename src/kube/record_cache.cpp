#include "kube/object_cache.h"

namespace eslease::kube {

std::optional<json> ObjectCache::get(const std::string& key) const {
  std::shared_lock lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> ObjectCache::list() const {
  std::shared_lock lock(mutex_);
  std::vector<json> out;
  out.reserve(objects_.size());
  for (const auto& [key, object] : objects_) out.push_back(object);
  return out;
}

std::vector<std::string> ObjectCache::keys() const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  out.reserve(objects_.size());
  for (const auto& [key, object] : objects_) out.push_back(key);
  return out;
}

std::size_t ObjectCache::size() const {
  std::shared_lock lock(mutex_);
  return objects_.size();
}

void ObjectCache::for_each(const std::function<void(const std::string&, const json&)>& fn) const {
  std::shared_lock lock(mutex_);
  for (const auto& [key, object] : objects_) fn(key, object);
}

std::optional<json> ObjectCache::put(const std::string& key, json object) {
  std::unique_lock lock(mutex_);
  auto [it, inserted] = objects_.try_emplace(key);
  std::optional<json> previous;
  if (!inserted) previous = std::move(it->second);
  it->second = std::move(object);
  return previous;
}

std::optional<json> ObjectCache::erase(const std::string& key) {
  std::unique_lock lock(mutex_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return std::nullopt;
  json previous = std::move(it->second);
  objects_.erase(it);
  return previous;
}

std::unordered_map<std::string, json> ObjectCache::replace(std::unordered_map<std::string, json> objects) {
  std::unique_lock lock(mutex_);
  objects_.swap(objects);
  return objects;
}

json keep_pod_liveness_fields(json pod) {
  if (!pod.is_object()) return pod;
  json out = json::object();
  for (const char* field : {"apiVersion", "kind"}) {
    if (pod.contains(field)) out[field] = std::move(pod[field]);
  }
  if (auto meta = pod.find("metadata"); meta != pod.end() && meta->is_object()) {
    json& kept = out["metadata"];
    kept = json::object();
    for (const char* field : {"name", "namespace", "uid", "resourceVersion", "labels", "deletionTimestamp"}) {
      if (auto value = meta->find(field); value != meta->end()) kept[field] = std::move(*value);
    }
  }
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    if (auto node = spec->find("nodeName"); node != spec->end()) out["spec"]["nodeName"] = std::move(*node);
  }
  if (auto status = pod.find("status"); status != pod.end() && status->is_object()) {
    if (auto phase = status->find("phase"); phase != status->end())
      out["status"]["phase"] = std::move(*phase);
    if (auto conditions = status->find("conditions"); conditions != status->end() && conditions->is_array()) {
      for (auto& condition : *conditions) {
        if (condition.is_object() && condition.value("type", "") == "Ready") {
          out["status"]["conditions"] = json::array({std::move(condition)});
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace eslease::kube
