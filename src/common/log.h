// Structured logging on spdlog: a fixed message plus key-value fields, rendered as text
// (`msg key=value ...`) or as one JSON object per line. Callers never pass credentials;
// Field values are escaped, so a hostile string cannot forge another log line. A field
// whose value is empty is left out of the line: `reason=""` says nothing.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace eslease::log {

enum class Format { kText, kJson };
enum class Level { kDebug, kInfo, kWarn, kError };

struct Field {
  std::string key;
  std::string value;
  Field(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  Field(std::string k, const char* v) : key(std::move(k)), value(v) {}
  Field(std::string k, std::string_view v) : key(std::move(k)), value(v) {}
  template <typename Number, typename = decltype(std::to_string(Number{}))>
  Field(std::string k, Number v) : key(std::move(k)), value(std::to_string(v)) {}
};

using Fields = std::initializer_list<Field>;

// Configures the process-wide logger (stderr). Safe to call more than once.
void configure(Format format, Level level);
// "text"/"json" and "debug"/"info"/"warn"/"error"; false on an unknown name.
bool parse_format(std::string_view name, Format& out);
bool parse_level(std::string_view name, Level& out);

void write(Level level, std::string_view message, Fields fields = {});
// Whether a line of `level` would be written: for what costs something to find out.
bool enabled(Level level);
inline void debug(std::string_view m, Fields f = {}) {
  write(Level::kDebug, m, f);
}
inline void info(std::string_view m, Fields f = {}) {
  write(Level::kInfo, m, f);
}
inline void warn(std::string_view m, Fields f = {}) {
  write(Level::kWarn, m, f);
}
inline void error(std::string_view m, Fields f = {}) {
  write(Level::kError, m, f);
}

// Renders one line without the timestamp and level; exposed for tests.
std::string render(Format format, std::string_view message, Fields fields);

}  // namespace eslease::log
