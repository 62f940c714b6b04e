// The informer caches as plain maps for the controller's unit tests: filled from an
// in-memory Kubernetes API as a watch would deliver, or by hand.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "controller/cluster_view.h"
#include "controller/lease_codec.h"
#include "kube/api.h"

namespace eslease::controller::views {

using nlohmann::json;

// The informer caches as plain maps, refreshed from the API as a watch would deliver.
class MapClusterView final : public ClusterView {
 public:
  std::optional<LeaseRecord> lease(const std::string& key) const override {
    std::optional<LeaseRecord> copy = find(leases_, key);
    if (after_copy) after_copy(key);
    return copy;
  }
  std::optional<PodRecord> pod(const std::string& key) const override { return find(pods_, key); }
  bool read_lease(const std::string& key, const std::function<void(const LeaseRecord&)>& fn) const override {
    return read(leases_, key, fn);
  }
  bool read_pod(const std::string& key, const std::function<void(const PodRecord&)>& fn) const override {
    return read(pods_, key, fn);
  }
  void for_each_pod(const std::string& ns, const std::function<void(const PodRecord&)>& fn) const override {
    for (const auto& [key, pod] : pods_)
      if (pod.meta.ns == ns) fn(pod);
  }
  void for_each_lease(const std::function<void(const LeaseRecord&)>& fn) const override {
    for (const auto& [key, lease] : leases_) fn(lease);
  }
  void for_each_held_lease(const std::string& ns,
                           const std::function<void(const LeaseRecord&)>& fn) const override {
    for (const auto& [key, lease] : leases_)
      if (lease.meta.ns == ns && lease.status.phase == Phase::kHeld) fn(lease);
  }

  // Called after lease() has copied a Lease and before the caller uses the copy: an informer
  // may deliver a version there (read_lease, like the real cache's lock, leaves no such gap).
  std::function<void(const std::string& key)> after_copy;

  void sync_from(kube::Api& api) {
    leases_ = decoded(api, kube::resources::eslease_leases(), decode_lease);
    pods_ = decoded(api, kube::resources::pods(), decode_pod);
  }

 private:
  template <typename Record>
  static std::optional<Record> find(const std::map<std::string, Record>& records, const std::string& key) {
    auto it = records.find(key);
    return it == records.end() ? std::nullopt : std::optional<Record>(it->second);
  }
  template <typename Record>
  static bool read(const std::map<std::string, Record>& records, const std::string& key,
                   const std::function<void(const Record&)>& fn) {
    auto it = records.find(key);
    if (it == records.end()) return false;
    fn(it->second);
    return true;
  }
  template <typename Record>
  static std::map<std::string, Record> decoded(kube::Api& api, const kube::Resource& resource,
                                               Record (*decode)(const json&)) {
    std::map<std::string, Record> out;
    auto page = api.list(resource, "", {});
    for (const json& object : page->items) {
      auto record = decode(object);
      out[record.meta.key()] = record;
    }
    return out;
  }

  std::map<std::string, LeaseRecord> leases_;
  std::map<std::string, PodRecord> pods_;
};

}  // namespace eslease::controller::views
