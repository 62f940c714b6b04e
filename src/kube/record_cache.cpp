#include "kube/record_cache.h"

namespace eslease::kube {

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
