#include "common/backoff.h"

#include <algorithm>

namespace eslease {

namespace {

std::mt19937_64& jitter_engine() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine;
}

}  // namespace

std::uint64_t jitter_seed() {
  return jitter_engine()();
}

double jitter(double low, double high) {
  return std::uniform_real_distribution<double>(low, high)(jitter_engine());
}

Backoff::Backoff(BackoffPolicy policy, std::uint64_t seed)
    : policy_(policy), rng_(seed), current_ms_(static_cast<double>(policy.initial.count())) {}

Millis Backoff::next() {
  const double cap = std::min(current_ms_, static_cast<double>(policy_.max.count()));
  current_ms_ = std::min(current_ms_ * policy_.multiplier, static_cast<double>(policy_.max.count()));
  ++attempts_;
  // Half fixed, half random: spreads retries of many clients without ever retrying at once.
  std::uniform_real_distribution<double> jitter(cap / 2.0, cap);
  return Millis(static_cast<Millis::rep>(jitter(rng_)));
}

void Backoff::reset() {
  current_ms_ = static_cast<double>(policy_.initial.count());
  attempts_ = 0;
}

}  // namespace eslease
