// Structural defaulting as apiextensions-apiserver does it: non-nullable nulls without a
// default are dropped first, then `default` values fill missing (or non-nullable null) fields
// in objects and array items that exist, recursing into what was just defaulted.
#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_util.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using namespace detail;

bool is_non_nullable_null(const json& value, const json* schema) {
  return value.is_null() && schema && !flag(*schema, "nullable");
}

bool has_default(const json* schema) {
  return schema && member(*schema, "default") != nullptr;
}

void prune_non_nullable_nulls_without_defaults(const json* schema, json& value) {
  if (!schema) return;
  if (value.is_object()) {
    const auto* additional = additional_properties_schema(*schema);
    for (auto it = value.begin(); it != value.end();) {
      const json* child = property_schema(*schema, it.key());
      if (!child) child = additional;
      if (!child) {
        ++it;
        continue;
      }
      if (is_non_nullable_null(*it, child) && !has_default(child)) {
        it = value.erase(it);
      } else {
        prune_non_nullable_nulls_without_defaults(child, *it);
        ++it;
      }
    }
  } else if (value.is_array()) {
    for (auto& item : value) prune_non_nullable_nulls_without_defaults(items_schema(*schema), item);
  }
}

void default_value(const json* schema, json& value) {
  if (!schema) return;
  if (value.is_object()) {
    if (const auto* properties = member(*schema, "properties"); properties && properties->is_object()) {
      for (const auto& [name, property] : properties->items()) {
        const auto* default_json = member(property, "default");
        if (!default_json) continue;
        auto it = value.find(name);
        if (it == value.end() || is_non_nullable_null(*it, &property)) value[name] = *default_json;
      }
    }
    const auto* additional = additional_properties_schema(*schema);
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (const json* property = property_schema(*schema, it.key())) {
        default_value(property, *it);
      } else if (additional) {
        if (is_non_nullable_null(*it, additional) && has_default(additional))
          *it = *member(*additional, "default");
        default_value(additional, *it);
      }
    }
  } else if (value.is_array()) {
    const json* items = items_schema(*schema);
    for (auto& item : value) {
      if (is_non_nullable_null(item, items) && has_default(items)) item = *member(*items, "default");
      default_value(items, item);
    }
  }
}

}  // namespace

void apply_defaults(const nlohmann::json& schema, nlohmann::json& object) {
  prune_non_nullable_nulls_without_defaults(&schema, object);
  default_value(&schema, object);
}

}  // namespace eslease::kubeemu::schema
