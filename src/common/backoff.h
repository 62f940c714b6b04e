// Exponential backoff with full jitter, shared by every retry loop (Elasticsearch
// requests, informer re-lists, leader election), so retry behaviour is tuned in one place.
#pragma once

#include <cstdint>
#include <random>

#include "common/clock.h"

namespace eslease {

struct BackoffPolicy {
  Millis initial{100};
  Millis max{10000};
  double multiplier = 2.0;
};

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, std::uint64_t seed = std::random_device{}());

  // The next delay: uniform in [cap/2, cap] where cap grows from initial to max.
  Millis next();
  void reset();
  int attempts() const { return attempts_; }

 private:
  BackoffPolicy policy_;
  std::mt19937_64 rng_;
  double current_ms_;
  int attempts_ = 0;
};

}  // namespace eslease
