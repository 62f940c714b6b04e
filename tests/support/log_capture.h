// Collects what the process-wide logger (common/log.h) writes while it lives, so a test can
// check which lines a piece of code logs, at which level.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>

#include "common/log.h"

namespace eslease::testing {

class LogCapture {
 public:
  LogCapture() {
    log::configure(log::Format::kText, log::Level::kDebug);  // creates the logger
    logger_ = spdlog::get("eslease");
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_);
    sink_->set_pattern("%l %v");
    logger_->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = logger_->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    log::configure(log::Format::kText, log::Level::kInfo);
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Every line so far, each "<level> <message> key=value ...".
  std::string text() {
    logger_->flush();
    return lines_.str();
  }

 private:
  std::ostringstream lines_;
  std::shared_ptr<spdlog::logger> logger_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace eslease::testing
