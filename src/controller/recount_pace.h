// When a costly gauge is worth recounting: once the last recount is `factor` times as old as
// it took, so recounts take at most 1/factor of a core however often they are asked for.
#pragma once

#include <optional>

#include "common/clock.h"

namespace eslease::controller {

class RecountPace {
 public:
  explicit RecountPace(int factor) : factor_(factor) {}

  // Whether a recount asked for at `now` should run (the first always does).
  bool due(MonoTime now) const { return !finished_ || now >= *finished_ + (*finished_ - started_) * factor_; }
  // A recount ran from `started` to `finished`.
  void ran(MonoTime started, MonoTime finished) {
    started_ = started;
    finished_ = finished;
  }

 private:
  int factor_;
  MonoTime started_{};
  std::optional<MonoTime> finished_;
};

}  // namespace eslease::controller
