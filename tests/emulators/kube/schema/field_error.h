// Builders for field.Error causes with k8s.io/apimachinery's types and ErrorBody() wording,
// and the mapping kube-openapi path -> field path used by apiextensions-apiserver.
// Internal to the schema library.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "emulators/kube/schema/go_format.h"
#include "emulators/kube/schema/schema.h"

namespace eslease::kubeemu::schema::detail {

// apiextensions converts a kube-openapi error name with Child(TrimPrefix(name, ".")) on a nil
// root path; an empty name keeps the nil path, which field.Path prints as "<nil>".
inline std::string field_from_openapi_path(std::string_view name) {
  if (name.empty() || name == ".") return "<nil>";
  if (name.front() == '.') name.remove_prefix(1);
  return std::string(name);
}

inline Cause required(std::string field, std::string_view detail = {}) {
  std::string message = "Required value";
  if (!detail.empty()) message += ": " + std::string(detail);
  return {"FieldValueRequired", std::move(message), std::move(field)};
}

inline Cause forbidden(std::string field, std::string_view detail) {
  std::string message = "Forbidden";
  if (!detail.empty()) message += ": " + std::string(detail);
  return {"FieldValueForbidden", std::move(message), std::move(field)};
}

inline Cause invalid(std::string field, const nlohmann::json& value, std::string_view detail) {
  return {"FieldValueInvalid", error_body_with_value("Invalid value", value, detail), std::move(field)};
}

inline Cause type_invalid(std::string field, const nlohmann::json& value, std::string_view detail) {
  return {"FieldValueTypeInvalid", error_body_with_value("Invalid value", value, detail), std::move(field)};
}

inline Cause duplicate(std::string field, const nlohmann::json& value) {
  return {"FieldValueDuplicate", error_body_with_value("Duplicate value", value, {}), std::move(field)};
}

// field.NotSupported: every supported value is rendered with strconv.Quote.
inline Cause not_supported(std::string field, const nlohmann::json& value,
                           const nlohmann::json& enum_values) {
  std::string detail;
  if (!enum_values.empty()) {
    detail = "supported values: ";
    bool first = true;
    for (const auto& allowed : enum_values) {
      if (!first) detail += ", ";
      first = false;
      detail += go_quote(allowed.is_string() ? allowed.get<std::string>() : allowed.dump());
    }
  }
  return {"FieldValueNotSupported", error_body_with_value("Unsupported value", value, detail),
          std::move(field)};
}

// field.TooLongMaxLength (Kubernetes 1.27-1.29 wording; the value is not printed).
inline Cause too_long(std::string field, long long max_length) {
  std::string message = "Too long: ";
  message += max_length >= 0 ? "may not be longer than " + std::to_string(max_length) : "value is too long";
  return {"FieldValueTooLong", std::move(message), std::move(field)};
}

// field.TooMany: "Too many: <actual>: must have at most <max> items".
inline Cause too_many(std::string field, long long actual, long long max) {
  std::string message = "Too many: " + std::to_string(actual) + ": ";
  message += max >= 0 ? "must have at most " + std::to_string(max) + " items" : "has too many items";
  return {"FieldValueTooMany", std::move(message), std::move(field)};
}

}  // namespace eslease::kubeemu::schema::detail
