// Index settings as the store keeps them: flat "index.*" keys whose values are strings, as
// Elasticsearch answers them with flat_settings.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace eslease::esemu {

// {"index": {"refresh_interval": "1s"}} -> {"index.refresh_interval": "1s"} (appended to out).
void flatten_settings(const nlohmann::ordered_json& in, const std::string& prefix,
                      nlohmann::ordered_json& out);
// The inverse, for GET /{index}.
nlohmann::ordered_json nest_settings(const nlohmann::ordered_json& flat);
// An integer setting; nullopt when absent, LLONG_MIN when it does not parse.
std::optional<long long> parse_int_setting(const nlohmann::ordered_json& settings, const std::string& key);
// "500ms", "1s", "2m", "1h", "1d" in milliseconds; nullopt when it does not parse.
std::optional<long long> parse_time_setting(const std::string& s);
// index.refresh_interval in milliseconds: a time value, or -1 (never on a schedule); nullopt
// when the setting is absent, LLONG_MIN when it does not parse.
std::optional<long long> refresh_interval_setting(const nlohmann::ordered_json& settings);

}  // namespace eslease::esemu
