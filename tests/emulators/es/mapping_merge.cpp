// PUT /{index}/_mapping: an update merged into an index's mapping as Elasticsearch's
// MapperService merges it (Mapping.merge, ObjectMapper.merge, FieldMapper.merge).
#include "emulators/es/mapping_merge.h"

#include "emulators/es/mapping.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::ordered_json;

// A field's type as the merge sees it: an object when it has sub-properties and no type.
std::string type_of(const json& field) {
  if (field.contains("type") && field["type"].is_string()) return field["type"].get<std::string>();
  return "object";
}

std::string value_text(const json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::optional<EsError> merge_properties(json& into, const json& update, const std::string& prefix);

// One field present on both sides: same type, and every parameter the update names equal to
// the existing one, except sub-properties and multi-fields, which merge.
std::optional<EsError> merge_field(json& existing, const json& update, const std::string& path) {
  const std::string from = type_of(existing);
  const std::string to = type_of(update);
  if (from != to) {
    return make_es_error(400, "illegal_argument_exception",
                         "mapper [" + path + "] cannot be changed from type [" + from + "] to [" + to + "]");
  }
  for (const auto& [key, value] : update.items()) {
    if (key == "properties" || key == "fields") {
      if (!existing.contains(key)) existing[key] = json::object();
      if (auto err = merge_properties(existing[key], value, path + ".")) return err;
      continue;
    }
    if (key == "type") continue;
    if (key == "dynamic" && to == "object") {  // an object's dynamic setting may change
      existing[key] = value;
      continue;
    }
    auto old = existing.find(key);
    if (old == existing.end() || *old != value) {
      const std::string before = old == existing.end() ? "" : value_text(*old);
      return make_es_error(400, "illegal_argument_exception",
                           "Mapper for [" + path +
                               "] conflicts with existing mapper:\n\tCannot update parameter [" + key +
                               "] from [" + before + "] to [" + value_text(value) + "]");
    }
  }
  return std::nullopt;
}

std::optional<EsError> merge_properties(json& into, const json& update, const std::string& prefix) {
  for (const auto& [name, field] : update.items()) {
    auto it = into.find(name);
    if (it == into.end()) {
      into[name] = field;
      continue;
    }
    if (auto err = merge_field(*it, field, prefix + name)) return err;
  }
  return std::nullopt;
}

}  // namespace

std::optional<EsError> merge_mapping(json& mapping, const json& body) {
  if (!body.is_object() || body.empty()) {
    return make_es_error(400, "action_request_validation_exception",
                         "Validation Failed: 1: mapping source is empty;");
  }
  json update;
  if (auto err = normalize_mappings(body, update)) return err;
  json merged = mapping.is_object() ? mapping : json::object();
  for (const auto& [key, value] : update.items()) {
    if (key == "properties") {
      if (!merged.contains("properties")) merged["properties"] = json::object();
      if (auto err = merge_properties(merged["properties"], value, "")) return err;
    } else {
      merged[key] = value;  // dynamic, _meta, _source, ...: the update's value replaces the old one
    }
  }
  mapping = std::move(merged);
  return std::nullopt;
}

}  // namespace eslease::esemu
