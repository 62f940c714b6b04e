#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <nlohmann/json.hpp>

namespace eslease::log {
namespace {

std::atomic<Format> g_format{Format::kText};

std::shared_ptr<spdlog::logger> logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_logger_mt("eslease");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
    l->set_level(spdlog::level::info);
    return l;
  }();
  return instance;
}

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

bool needs_quotes(std::string_view v) {
  for (char c : v) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return true;
  }
  return false;
}

}  // namespace

void configure(Format format, Level level) {
  g_format = format;
  auto l = logger();
  l->set_level(to_spdlog(level));
  if (format == Format::kJson) {
    l->set_pattern("%v", spdlog::pattern_time_type::utc);
  } else {
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
  }
}

bool parse_format(std::string_view name, Format& out) {
  if (name == "text") {
    out = Format::kText;
    return true;
  }
  if (name == "json") {
    out = Format::kJson;
    return true;
  }
  return false;
}

bool parse_level(std::string_view name, Level& out) {
  if (name == "debug") {
    out = Level::kDebug;
    return true;
  }
  if (name == "info") {
    out = Level::kInfo;
    return true;
  }
  if (name == "warn") {
    out = Level::kWarn;
    return true;
  }
  if (name == "error") {
    out = Level::kError;
    return true;
  }
  return false;
}

std::string render(Format format, std::string_view message, Fields fields) {
  if (format == Format::kJson) {
    nlohmann::json j;
    j["msg"] = message;
    for (const auto& f : fields)
      if (!f.value.empty()) j[f.key] = f.value;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string out(message);
  for (const auto& f : fields) {
    if (f.value.empty()) continue;  // a field with nothing to say is left out
    out += ' ';
    out += f.key;
    out += '=';
    if (needs_quotes(f.value)) {
      // JSON string escaping keeps control characters (newlines) out of the line.
      out += nlohmann::json(f.value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      out += f.value;
    }
  }
  return out;
}

bool enabled(Level level) {
  return logger()->should_log(to_spdlog(level));
}

void write(Level level, std::string_view message, Fields fields) {
  auto l = logger();
  const auto spd_level = to_spdlog(level);
  if (!l->should_log(spd_level)) return;
  const Format format = g_format.load();
  if (format == Format::kJson) {
    nlohmann::json j;
    const auto now = std::chrono::system_clock::now();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    j["ts_ms"] = ms;
    j["level"] = spdlog::level::to_string_view(spd_level).data();
    j["msg"] = message;
    for (const auto& f : fields)
      if (!f.value.empty()) j[f.key] = f.value;
    l->log(spd_level, "{}", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    l->log(spd_level, "{}", render(Format::kText, message, fields));
  }
}

}  // namespace eslease::log
