// Index settings as the store keeps them: flat "index.*" keys with string values.
#include "emulators/es/index_settings.h"

#include <charconv>
#include <climits>

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

std::string setting_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

void flatten_settings(const json& in, const std::string& prefix, json& out) {
  for (const auto& [key, value] : in.items()) {
    std::string full = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      flatten_settings(value, full, out);
    } else if (value.is_array()) {
      json list = json::array();
      for (const auto& v : value) list.push_back(setting_string(v));
      out[full] = list;
    } else if (!value.is_null()) {
      out[full] = setting_string(value);
    }
  }
}

json nest_settings(const json& flat) {
  json out = json::object();
  for (const auto& [key, value] : flat.items()) {
    json* node = &out;
    std::size_t start = 0;
    while (true) {
      auto dot = key.find('.', start);
      std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (dot == std::string::npos) {
        (*node)[part] = value;
        break;
      }
      node = &(*node)[part];
      start = dot + 1;
    }
  }
  return out;
}

std::optional<long long> parse_int_setting(const json& settings, const std::string& key) {
  auto it = settings.find(key);
  if (it == settings.end() || !it->is_string()) return std::nullopt;
  const auto& s = it->get_ref<const std::string&>();
  long long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return LLONG_MIN;
  return v;
}

std::optional<long long> parse_time_setting(const std::string& s) {
  long long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc()) return std::nullopt;
  std::string_view unit(ptr, s.data() + s.size() - ptr);
  if (unit == "ms") return v;
  if (unit == "s") return v * 1000;
  if (unit == "m") return v * 60000;
  if (unit == "h") return v * 3600000;
  if (unit == "d") return v * 86400000;
  return std::nullopt;
}

// index.refresh_interval in milliseconds: a time value, or -1 (never on a schedule); nullopt
// when the setting is absent, LLONG_MIN when it does not parse.
std::optional<long long> refresh_interval_setting(const json& settings) {
  auto it = settings.find("index.refresh_interval");
  if (it == settings.end() || !it->is_string()) return std::nullopt;
  const auto& text = it->get_ref<const std::string&>();
  if (text == "-1") return -1;
  if (text == "0") return 0;
  auto ms = parse_time_setting(text);
  return ms && *ms >= 0 ? *ms : LLONG_MIN;
}

}  // namespace eslease::esemu
