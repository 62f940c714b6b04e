#include "lock/expiry.h"

namespace eslease::lock {

const Observation& ExpiryObserver::observe(const std::string& lock_id, const es::Version& version, Millis ttl,
                                           MonoTime answered_at) {
  auto [it, inserted] = observations_.try_emplace(lock_id, Observation{version, ttl, answered_at});
  if (!inserted && !(it->second.version == version)) it->second = Observation{version, ttl, answered_at};
  return it->second;
}

std::optional<Observation> ExpiryObserver::find(const std::string& lock_id) const {
  auto it = observations_.find(lock_id);
  if (it == observations_.end()) return std::nullopt;
  return it->second;
}

void ExpiryObserver::forget(const std::string& lock_id) {
  observations_.erase(lock_id);
}

}  // namespace eslease::lock
