#include "emulators/es/dates.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <string>
#include <string_view>

#include "common/text.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

int days_from_civil(int y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int>(doe) - 719468;
}

// The milliseconds of a date math unit: ms, s, m, h (or H), d, w.
std::optional<long long> unit_millis(std::string_view unit) {
  if (unit == "ms") return 1;
  switch (unit.empty() ? '\0' : unit[0]) {
    case 's':
      return 1000;
    case 'm':
      return 60000;
    case 'h':
    case 'H':
      return 3600000;
    case 'd':
      return 86400000;
    case 'w':
      return 7 * 86400000LL;
    default:
      return std::nullopt;
  }
}

// One step of date math at the start of `rest` ("+1h", "-30s", "+5ms"): the milliseconds it
// adds and the characters it takes; nullopt when malformed.
std::optional<std::pair<long long, std::size_t>> date_math_step(std::string_view rest) {
  const char op = rest[0];
  if (op != '+' && op != '-') return std::nullopt;
  long long amount = 0;
  auto [ptr, ec] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), amount);
  if (ec != std::errc()) return std::nullopt;
  const auto i = static_cast<std::size_t>(ptr - rest.data());
  if (i >= rest.size()) return std::nullopt;
  const std::string_view unit = rest.substr(i, 2) == "ms" ? rest.substr(i, 2) : rest.substr(i, 1);
  auto unit_ms = unit_millis(unit);
  if (!unit_ms) return std::nullopt;
  return std::make_pair((op == '+' ? 1 : -1) * amount * *unit_ms, i + unit.size());
}

}  // namespace

std::optional<long long> parse_date_millis(const json& value) {
  if (value.is_number_integer()) return value.get<long long>();
  if (value.is_number_unsigned()) return static_cast<long long>(value.get<unsigned long long>());
  if (!value.is_string()) return std::nullopt;
  const std::string& s = value.get_ref<const std::string&>();
  if (s.empty()) return std::nullopt;
  if (std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    long long millis = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), millis);
    if (ec == std::errc()) return millis;
    return std::nullopt;
  }
  auto digits = [&](std::size_t pos, std::size_t n, int& out) {
    if (pos + n > s.size()) return false;
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      out = out * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, m, d;
  const char sep = s.size() > 4 ? s[4] : '\0';
  if ((sep != '-' && sep != '/') || !digits(0, 4, y) || s.size() < 10 || s[7] != sep || !digits(5, 2, m) ||
      !digits(8, 2, d) || m < 1 || m > 12 || d < 1 || d > 31) {
    return std::nullopt;
  }
  if (s.size() == 10) return static_cast<long long>(days_from_civil(y, m, d)) * 86400000LL;
  if (sep == '/') {
    // yyyy/MM/dd HH:mm:ss
    int hh, mm, ss;
    if (s.size() != 19 || s[10] != ' ' || !digits(11, 2, hh) || s[13] != ':' || !digits(14, 2, mm) ||
        s[16] != ':' || !digits(17, 2, ss)) {
      return std::nullopt;
    }
    return (static_cast<long long>(days_from_civil(y, m, d)) * 86400LL + hh * 3600 + mm * 60 + ss) * 1000LL;
  }
  std::string full = s;
  // strict_date_optional_time: time and zone are optional; no zone means UTC.
  if (full.size() >= 11 && full[10] == 'T') {
    if (full.size() == 16) full += ":00";
    char last = full.back();
    bool has_zone = last == 'Z' || last == 'z' ||
                    (full.size() > 19 && (full[full.size() - 6] == '+' || full[full.size() - 6] == '-'));
    if (!has_zone) full += "Z";
  }
  auto parsed = parse_rfc3339(full);
  if (!parsed) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(parsed->time_since_epoch()).count();
}

std::optional<long long> parse_date_math(const json& value, long long now_millis) {
  if (!value.is_string()) return parse_date_millis(value);
  const std::string& s = value.get_ref<const std::string&>();
  long long base = 0;
  std::string_view rest;
  if (s.rfind("now", 0) == 0) {
    base = now_millis;
    rest = std::string_view(s).substr(3);
  } else {
    auto pipes = s.find("||");
    if (pipes == std::string::npos) return parse_date_millis(value);
    auto anchor = parse_date_millis(json(s.substr(0, pipes)));
    if (!anchor) return std::nullopt;
    base = *anchor;
    rest = std::string_view(s).substr(pipes + 2);
  }
  while (!rest.empty()) {
    auto step = date_math_step(rest);
    if (!step) return std::nullopt;
    base += step->first;
    rest = rest.substr(step->second);
  }
  return base;
}

}  // namespace eslease::esemu
