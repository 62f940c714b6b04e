// Expiry decided on locally observed time, never on another machine's clock (as in
// client-go's leaderelection).
//
// A reader treats a lock document as expired only after it has seen the SAME version
// (seq_no, primary_term) unchanged for the document's ttlMillis on its own monotonic
// clock, counting from when the read that returned it was ANSWERED (the write it shows
// was applied before that moment). A new version restarts the count, except that a
// renewal of the same grant never brings the expiry forward: every expiresAt the grant was
// written with may have been shown to its holder. This is the only place the rule is written;
// the `eslease` tool's direct mode and the controller both apply it through `sight`.
//
// The holder considers its grant lost at (the moment it SENT its last confirmed acquire or
// renewal) + ttl. Sending precedes applying, which precedes any reader's answer, so the
// holder's deadline always comes before any reader's: there is no moment when both
// believe they own the lock, as long as the two monotonic clocks run at the same rate.
#pragma once

#include <optional>

#include "common/clock.h"
#include "lock/document.h"

namespace eslease::lock {

// A reader's record of one lock document: the version it read last, and when that version
// counts as expired on the reader's monotonic clock.
struct Sighting {
  LockState state;
  MonoTime expires_at{};
};

// What `read`, answered at `answered_at`, means after the reader's `previous` sighting:
//   the same version          keeps its expiry (the count runs from its first sighting);
//   a renewal of the same     answered_at + its ttl, but never earlier than the previous
//   grant (same_grant)        expiry;
//   anything else             answered_at + its ttl.
Sighting sight(const std::optional<Sighting>& previous, LockState read, MonoTime answered_at);

inline bool is_expired(const Sighting& sighting, MonoTime now) {
  return now >= sighting.expires_at;
}

// The holder's deadline for a grant confirmed by a write sent at `sent`.
inline MonoTime holder_deadline(MonoTime sent, Millis ttl) {
  return sent + ttl;
}

}  // namespace eslease::lock
