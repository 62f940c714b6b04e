// Dates as a date field reads them (strict_date_optional_time||epoch_millis) and the date
// math of range queries, in milliseconds since the epoch.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

namespace eslease::esemu {

// Parses a date as a date field does (strict_date_optional_time||epoch_millis), in ms.
std::optional<long long> parse_date_millis(const nlohmann::ordered_json& value);
// Date math for range queries: "now", "now-30s", "now+1h", plus plain dates.
std::optional<long long> parse_date_math(const nlohmann::ordered_json& value, long long now_millis);

}  // namespace eslease::esemu
