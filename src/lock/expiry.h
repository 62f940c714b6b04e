// Expiry decided on locally observed time, never on another machine's clock (as in
// client-go's leaderelection).
//
// A contender treats a lock document as expired only after it has seen the SAME version
// (seq_no, primary_term) unchanged for the document's ttlMillis on its own monotonic
// clock, counting from when the read that returned it was ANSWERED (the write it shows
// was applied before that moment). Any new version restarts the count.
//
// The holder considers its grant lost at (the moment it SENT its last confirmed acquire or
// renewal) + ttl. Sending precedes applying, which precedes any contender's read, so the
// holder's deadline always comes before any contender's: there is no moment when both
// believe they own the lock, as long as the two monotonic clocks run at the same rate.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "es/document_api.h"

namespace eslease::lock {

struct Observation {
  es::Version version;
  Millis ttl{0};
  MonoTime first_seen{};
};

// When a contender may consider `observation` expired.
inline MonoTime expiry_of(const Observation& observation) {
  return observation.first_seen + observation.ttl;
}
inline bool is_expired(const Observation& observation, MonoTime now) {
  return now >= expiry_of(observation);
}

// The holder's deadline for a grant confirmed by a write sent at `sent`.
inline MonoTime holder_deadline(MonoTime sent, Millis ttl) {
  return sent + ttl;
}

// A contender's memory of the versions it has seen, per lock id.
class ExpiryObserver {
 public:
  // Records that a read answered at `answered_at` returned `version`; returns the
  // observation (kept when the version is unchanged, restarted otherwise).
  const Observation& observe(const std::string& lock_id, const es::Version& version, Millis ttl,
                             MonoTime answered_at);
  std::optional<Observation> find(const std::string& lock_id) const;
  void forget(const std::string& lock_id);

 private:
  std::map<std::string, Observation> observations_;
};

}  // namespace eslease::lock
