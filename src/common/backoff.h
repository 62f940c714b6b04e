// Exponential backoff with jitter (each delay uniform in [cap/2, cap], the cap growing from
// `initial` to `max`), shared by the retry loops of Elasticsearch requests, informer
// re-lists and watches, the tool's waits and the controller's start-up, so retry behaviour
// is tuned in one place. Leader election keeps client-go's fixed retry period instead.
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
