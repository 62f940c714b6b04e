#include "emulators/kube/schema/schema_util.h"

#include <map>
#include <memory>
#include <mutex>

namespace eslease::kubeemu::schema::detail {

size_t code_point_count(std::string_view text) {
  size_t count = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
  }
  return count;
}

const std::regex* compiled_pattern(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<std::regex>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(pattern);
  if (it == cache.end()) {
    std::unique_ptr<std::regex> compiled;
    try {
      compiled = std::make_unique<std::regex>(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      compiled = nullptr;
    }
    it = cache.emplace(pattern, std::move(compiled)).first;
  }
  return it->second.get();
}

std::string json_type_name(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "integer";
    case nlohmann::json::value_t::number_float:
      return "number";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::object:
      return "object";
    default:
      return "";
  }
}

bool json_values_equal(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() != b.is_number_float()) return a.get<double>() == b.get<double>();
    return a == b;
  }
  return a == b;
}

}  // namespace eslease::kubeemu::schema::detail
