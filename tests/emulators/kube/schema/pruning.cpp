// Structural pruning as apiextensions-apiserver does it: fields the schema does not specify
// are dropped (and reported with their paths), except under x-kubernetes-preserve-unknown-fields;
// apiVersion, kind and metadata survive at the resource root and in embedded resources.
#include <algorithm>

#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_util.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using namespace detail;

bool is_meta_field(const std::string& key) {
  return key == "apiVersion" || key == "kind" || key == "metadata";
}

std::string append_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

class Pruner {
 public:
  std::vector<std::string> pruned;

  // `embedded` marks an object whose apiVersion/kind/metadata are kept (root or
  // x-kubernetes-embedded-resource).
  void prune(const json* schema, json& value, const std::string& path, bool embedded) {
    if (schema && flag(*schema, "x-kubernetes-preserve-unknown-fields")) {
      skip_prune(schema, value, path, embedded || flag(*schema, "x-kubernetes-embedded-resource"));
      return;
    }
    if (value.is_object()) {
      if (!schema) {
        for (const auto& [key, child] : value.items()) pruned.push_back(append_key(path, key));
        value = json::object();
        return;
      }
      const bool keeps_meta = embedded || flag(*schema, "x-kubernetes-embedded-resource");
      const auto* additional = member(*schema, "additionalProperties");
      for (auto it = value.begin(); it != value.end();) {
        const std::string& key = it.key();
        if (keeps_meta && ((key == "apiVersion" || key == "kind") && it->is_string())) {
          ++it;
          continue;
        }
        // ObjectMeta is coerced by the API server itself, never pruned by the CRD schema.
        if (keeps_meta && key == "metadata" && it->is_object()) {
          ++it;
          continue;
        }
        if (const json* property = property_schema(*schema, key)) {
          prune(property, *it, append_key(path, key), false);
          ++it;
        } else if (additional &&
                   (additional->is_object() || (additional->is_boolean() && additional->get<bool>()))) {
          prune(additional->is_object() ? additional : nullptr, *it, append_key(path, key), false);
          ++it;
        } else {
          if (!(is_meta_field(key) && path.empty() && embedded)) pruned.push_back(append_key(path, key));
          it = value.erase(it);
        }
      }
    } else if (value.is_array()) {
      const json* items = schema ? items_schema(*schema) : nullptr;
      for (size_t i = 0; i < value.size(); ++i) {
        prune(items, value[i], path + "[" + std::to_string(i) + "]", false);
      }
    }
  }

 private:
  void skip_prune(const json* schema, json& value, const std::string& path, bool embedded) {
    if (!schema) return;
    if (value.is_object()) {
      const auto* additional = additional_properties_schema(*schema);
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (embedded && is_meta_field(it.key())) continue;
        if (const json* property = property_schema(*schema, it.key())) {
          prune(property, *it, append_key(path, it.key()), false);
        } else if (additional) {
          prune(additional, *it, append_key(path, it.key()), false);
        }
      }
    } else if (value.is_array()) {
      const json* items = items_schema(*schema);
      for (size_t i = 0; i < value.size(); ++i) {
        skip_prune(items, value[i], path + "[" + std::to_string(i) + "]", false);
      }
    }
  }
};

}  // namespace

std::vector<std::string> prune_unknown(const nlohmann::json& schema, nlohmann::json& object) {
  Pruner pruner;
  pruner.prune(&schema, object, "", true);
  std::sort(pruner.pruned.begin(), pruner.pruned.end());
  return pruner.pruned;
}

}  // namespace eslease::kubeemu::schema
