#include "emulators/es/field_values.h"

#include <cctype>
#include <charconv>

namespace eslease::esemu {

using json = nlohmann::ordered_json;

std::optional<long double> to_number(const json& v) {
  if (v.is_number_integer()) return static_cast<long double>(v.get<long long>());
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<unsigned long long>());
  if (v.is_number_float()) return static_cast<long double>(v.get<double>());
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.empty()) return std::nullopt;
    double d = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec == std::errc() && ptr == s.data() + s.size()) {
      long long i = 0;
      auto [iptr, iec] = std::from_chars(s.data(), s.data() + s.size(), i);
      if (iec == std::errc() && iptr == s.data() + s.size()) return static_cast<long double>(i);
      return d;
    }
  }
  return std::nullopt;
}

std::optional<bool> to_bool(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    if (v == "true") return true;
    if (v == "false" || v.get<std::string>().empty()) return false;
  }
  return std::nullopt;
}

std::string to_keyword(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

std::vector<std::string> tokenize(const std::string& text) {
  std::vector<std::string> tokens;
  std::string current;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c >= 0x80) {
      current.push_back(static_cast<char>(std::tolower(c)));
    } else if (!current.empty()) {
      tokens.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) tokens.push_back(std::move(current));
  return tokens;
}

bool is_keyword_like(const std::string& type) {
  return type == "keyword" || type == "constant_keyword" || type == "wildcard" || type == "ip" ||
         type == "flattened";
}

bool is_text(const std::string& type) {
  return type == "text" || type == "match_only_text";
}

}  // namespace eslease::esemu
