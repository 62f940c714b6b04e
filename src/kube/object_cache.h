// The informer's local copy of a resource: objects by "namespace/name", safe to read from
// any thread while the informer writes.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace eslease::kube {

using nlohmann::json;

class ObjectCache {
 public:
  std::optional<json> get(const std::string& key) const;
  std::vector<json> list() const;
  std::vector<std::string> keys() const;
  std::size_t size() const;
  // Calls `fn` for every object under the read lock (no copies); `fn` must not call back.
  void for_each(const std::function<void(const std::string&, const json&)>& fn) const;

  // Writers (the informer). Each returns the previous object, if any.
  std::optional<json> put(const std::string& key, json object);
  std::optional<json> erase(const std::string& key);
  // Swaps in a whole new content (after a re-list) and returns the old one.
  std::unordered_map<std::string, json> replace(std::unordered_map<std::string, json> objects);

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, json> objects_;
};

// Keeps only what pod liveness needs: metadata name/namespace/uid/resourceVersion/labels/
// deletionTimestamp, spec.nodeName, status.phase and the Ready condition. A full pod is
// several kilobytes; this keeps a 10,000-pod cache small.
json keep_pod_liveness_fields(json pod);

}  // namespace eslease::kube
