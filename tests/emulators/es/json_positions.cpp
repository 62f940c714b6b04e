#include "emulators/es/json_positions.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

namespace eslease::esemu {

std::string locate_offset(std::string_view raw, std::size_t offset) {
  offset = std::min(offset, raw.size());
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (raw[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "[" + std::to_string(line) + ":" + std::to_string(offset - line_start + 1) + "] ";
}

namespace {

// Offsets of the first "key" followed by a colon, and of the value after it.
std::optional<std::pair<std::size_t, std::size_t>> find_member(std::string_view raw, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\"";
  for (std::size_t at = raw.find(needle); at != std::string_view::npos; at = raw.find(needle, at + 1)) {
    std::size_t p = at + needle.size();
    while (p < raw.size() && std::isspace(static_cast<unsigned char>(raw[p]))) ++p;
    if (p < raw.size() && raw[p] == ':') {
      ++p;
      while (p < raw.size() && std::isspace(static_cast<unsigned char>(raw[p]))) ++p;
      return std::make_pair(at, p);
    }
  }
  return std::nullopt;
}

}  // namespace

std::string locate_value(std::string_view raw, std::string_view key) {
  auto member = find_member(raw, key);
  return member ? locate_offset(raw, member->second) : "";
}

std::string locate_key(std::string_view raw, std::string_view key) {
  auto member = find_member(raw, key);
  return member ? locate_offset(raw, member->first) : "";
}

}  // namespace eslease::esemu
