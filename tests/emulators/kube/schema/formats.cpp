#include "emulators/kube/schema/formats.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace eslease::kubeemu::schema::detail {
namespace {

std::string normalized(const std::string& format) {
  std::string out;
  for (char c : format)
    if (c != '-') out += c;
  return out;
}

bool full_match(const std::string& text, const char* pattern) {
  static thread_local std::map<const char*, std::regex> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
  try {
    return std::regex_match(text, it->second);
  } catch (const std::regex_error&) {
    return false;
  }
}

bool valid_date(int year, int month, int day) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= days[month - 1] + (month == 2 && leap ? 1 : 0);
}

bool is_date(const std::string& text) {
  if (!full_match(text, R"(\d{4}-\d{2}-\d{2})")) return false;
  return valid_date(std::stoi(text.substr(0, 4)), std::stoi(text.substr(5, 2)), std::stoi(text.substr(8, 2)));
}

// strfmt.ParseDateTime accepts RFC 3339 (with or without fractions, "Z" or an offset with or
// without colon) and the zone-less ISO 8601 local form.
bool is_date_time(const std::string& text) {
  if (!full_match(text, R"(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?)"))
    return false;
  if (!is_date(text.substr(0, 10))) return false;
  const int hour = std::stoi(text.substr(11, 2));
  const int minute = std::stoi(text.substr(14, 2));
  const int second = std::stoi(text.substr(17, 2));
  return hour < 24 && minute < 60 && second < 60;
}

bool is_ipv4(const std::string& text) {
  if (!full_match(text, R"((\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3}))")) return false;
  size_t start = 0;
  for (int part = 0; part < 4; ++part) {
    const size_t end = text.find('.', start);
    const std::string octet = text.substr(start, end - start);
    if (std::stoi(octet) > 255 || (octet.size() > 1 && octet[0] == '0')) return false;
    start = end + 1;
  }
  return true;
}

bool is_ipv6(const std::string& text) {
  if (text.find(':') == std::string::npos) return false;
  if (!full_match(text, R"([0-9A-Fa-f:.]+)")) return false;
  const size_t double_colon = text.find("::");
  if (double_colon != std::string::npos && text.find("::", double_colon + 1) != std::string::npos)
    return false;
  int groups = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(':', start);
    if (end == std::string::npos) end = text.size();
    const std::string group = text.substr(start, end - start);
    if (!group.empty()) {
      if (group.find('.') != std::string::npos) {
        if (end != text.size() || !is_ipv4(group)) return false;
        groups += 2;
      } else {
        if (group.size() > 4) return false;
        ++groups;
      }
    }
    start = end + 1;
  }
  return double_colon != std::string::npos ? groups < 8 : groups == 8;
}

}  // namespace

bool format_is_checked(const std::string& format) {
  static const std::set<std::string> checked = {
      "bsonobjectid", "uri",   "email", "hostname", "ipv4", "ipv6",     "cidr",     "mac",      "uuid",
      "uuid3",        "uuid4", "uuid5", "byte",     "date", "datetime", "duration", "hexcolor", "rgbcolor"};
  return checked.count(normalized(format)) > 0;
}

bool matches_format(const std::string& format, const std::string& text) {
  const std::string name = normalized(format);
  if (name == "datetime") return is_date_time(text);
  if (name == "date") return is_date(text);
  if (name == "byte") {
    return text.size() % 4 == 0 && full_match(text, R"([A-Za-z0-9+/]*={0,2})");
  }
  if (name == "uuid" || name == "uuid3" || name == "uuid4" || name == "uuid5") {
    const char* version = name == "uuid3" ? "3" : name == "uuid4" ? "4" : name == "uuid5" ? "5" : "";
    if (!full_match(text,
                    R"([0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12})"))
      return false;
    if (*version == 0) return true;
    std::string hex;
    for (char c : text)
      if (c != '-') hex += c;
    return hex[12] == *version;
  }
  if (name == "ipv4") return is_ipv4(text);
  if (name == "ipv6") return is_ipv6(text);
  if (name == "cidr") {
    const size_t slash = text.rfind('/');
    if (slash == std::string::npos || !full_match(text.substr(slash + 1), R"(\d{1,3})")) return false;
    const std::string address = text.substr(0, slash);
    const int bits = std::stoi(text.substr(slash + 1));
    return (is_ipv4(address) && bits <= 32) || (is_ipv6(address) && bits <= 128);
  }
  if (name == "mac") return full_match(text, R"(([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2})");
  if (name == "hostname") {
    return text.size() <= 255 &&
           full_match(
               text,
               R"(([A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?)");
  }
  if (name == "email") return full_match(text, R"([^@\s]+@[^@\s]+)");
  if (name == "uri") return full_match(text, R"([A-Za-z][A-Za-z0-9+.-]*:\S*)");
  if (name == "bsonobjectid") return full_match(text, R"([0-9a-fA-F]{24})");
  if (name == "duration")
    return full_match(text, R"((\s*[-+]?\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w|[a-z]+)\s*)+)");
  if (name == "hexcolor") return full_match(text, R"(#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}))");
  if (name == "rgbcolor") return full_match(text, R"(rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\))");
  return true;
}

}  // namespace eslease::kubeemu::schema::detail
