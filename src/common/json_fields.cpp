#include "common/json_fields.h"

#include "common/text.h"

namespace eslease::json_fields {

using nlohmann::json;

const json* find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string string_at(const json& object, const char* key) {
  const json* v = find(object, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::optional<WallTime> time_at(const json& object, const char* key) {
  const json* v = find(object, key);
  if (!v || !v->is_string()) return std::nullopt;
  return parse_rfc3339(v->get<std::string>());
}

std::optional<std::int64_t> integer_at(const json& object, const char* key) {
  const json* v = find(object, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d == static_cast<double>(static_cast<std::int64_t>(d))) return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

}  // namespace eslease::json_fields
