#include "common/duration.h"

#include <cctype>
#include <limits>

namespace eslease {

Result<Millis> parse_duration(std::string_view text) {
  const auto invalid = [&] {
    return make_error(ErrorCode::kInvalidArgument,
                      "invalid duration '" + std::string(text.substr(0, 64)) +
                          "': use a number with a unit, e.g. 500ms, 30s, 5m, 1h or 1m30s");
  };
  if (text.empty()) return invalid();
  // A bare zero needs no unit, as Go's time.ParseDuration reads it (`--wait 0`).
  if (text == "0") return Millis(0);
  long long total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return invalid();
    long long number = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      number = number * 10 + (text[i] - '0');
      if (number > 1'000'000'000'000LL) return invalid();
      ++i;
    }
    long long unit = 0;
    if (text.substr(i, 2) == "ms") {
      unit = 1;
      i += 2;
    } else if (i < text.size() && text[i] == 's') {
      unit = 1000;
      ++i;
    } else if (i < text.size() && text[i] == 'm') {
      unit = 60'000;
      ++i;
    } else if (i < text.size() && text[i] == 'h') {
      unit = 3'600'000;
      ++i;
    } else {
      return invalid();
    }
    total += number * unit;
    if (total > 1'000'000'000'000LL) return invalid();
  }
  return Millis(total);
}

std::string format_duration(Millis d) {
  const long long ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace eslease
