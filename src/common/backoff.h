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

// Jitter spreads retries and watch timeouts; it needs no secrecy. Reading the system's
// entropy (std::random_device) costs a system call, too much for one per Elasticsearch
// request: it seeds one generator per thread, once, and both of these draw from it.
// A seed for a Backoff's jitter, different at each call.
std::uint64_t jitter_seed();
// A uniform draw from [low, high).
double jitter(double low, double high);

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, std::uint64_t seed = jitter_seed());

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
