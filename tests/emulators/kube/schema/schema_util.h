// Small readers over a raw openAPIV3Schema node (JSON), shared by the schema library's
// passes. Internal to the schema library.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace eslease::kubeemu::schema::detail {

inline const nlohmann::json* member(const nlohmann::json& node, std::string_view key) {
  if (!node.is_object()) return nullptr;
  auto it = node.find(key);
  return it == node.end() ? nullptr : &*it;
}

inline bool flag(const nlohmann::json& node, std::string_view key) {
  const auto* value = member(node, key);
  return value && value->is_boolean() && value->get<bool>();
}

inline std::string string_member(const nlohmann::json& node, std::string_view key) {
  const auto* value = member(node, key);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

// The schema of property `name`, or nullptr.
inline const nlohmann::json* property_schema(const nlohmann::json& node, const std::string& name) {
  const auto* properties = member(node, "properties");
  return properties ? member(*properties, name) : nullptr;
}

// additionalProperties as a schema (nullptr when absent or boolean).
inline const nlohmann::json* additional_properties_schema(const nlohmann::json& node) {
  const auto* additional = member(node, "additionalProperties");
  return additional && additional->is_object() ? additional : nullptr;
}

inline const nlohmann::json* items_schema(const nlohmann::json& node) {
  const auto* items = member(node, "items");
  return items && items->is_object() ? items : nullptr;
}

inline std::optional<long long> integer_member(const nlohmann::json& node, std::string_view key) {
  const auto* value = member(node, key);
  if (!value || !value->is_number()) return std::nullopt;
  return value->is_number_integer() ? value->get<long long>() : static_cast<long long>(value->get<double>());
}

inline std::optional<double> number_member(const nlohmann::json& node, std::string_view key) {
  const auto* value = member(node, key);
  if (!value || !value->is_number()) return std::nullopt;
  return value->get<double>();
}

// Unicode code points of a UTF-8 string, as Go's utf8.RuneCountInString counts them.
size_t code_point_count(std::string_view text);

// Compiled ECMAScript regex for a schema pattern (cached); nullopt when it does not compile.
const std::regex* compiled_pattern(const std::string& pattern);

// "string", "integer", ... as kube-openapi names the JSON type of a decoded value.
std::string json_type_name(const nlohmann::json& value);

// Equality of decoded JSON values as reflect.DeepEqual sees int64/float64 values.
bool json_values_equal(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace eslease::kubeemu::schema::detail
