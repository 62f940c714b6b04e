// Acquiring a lock outside Kubernetes: try, and while another holder has it, wait with
// backoff; take it over once its version has stayed unchanged for its TTL on our own
// monotonic clock (expiry.h). Used by the `eslease` tool and by library users.
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "common/backoff.h"
#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::lock {

// A wait without a time limit.
inline constexpr Millis kWaitForever = Millis::max();

struct WaitOptions {
  Millis wait{0};  // how long to keep trying; 0 = one attempt (plus a takeover if due); or kWaitForever
  BackoffPolicy backoff{Millis(100), Millis(2000), 2.0};
  // Called before waiting behind a holder not seen waiting behind before (to say who it is).
  std::function<void(const LockState& holder)> on_wait = {};
};

// A grantee outside Kubernetes: `holder`, with a fresh random lease UID (each acquire is a
// grant of its own) and `ttl`.
Grantee direct_grantee(std::string holder, Millis ttl = kDefaultTtl);

// Whether another round of acquiring may succeed where `error` failed: the backend was away,
// someone moved between our read and our write (kConflict), or grants were paused until the
// next fencing token is proven larger (kGrantsPaused). Both acquirers retry these until their
// wait runs out; any other error ends the wait at once.
bool worth_another_round(const Error& error);

// The grant, or an Error: kBusy naming the current holder when the wait ran out (an
// unreachable backend is kUnavailable), kCancelled when stopped, or the last error worth
// another round when it persists to the end of the wait (errors that retrying cannot fix -
// bad credentials, bad input - return at once).
Result<Grant> acquire_waiting(LockStore& store, Clock& clock, const LockKey& key, const Grantee& grantee,
                              const WaitOptions& options, std::stop_token stop = {});

}  // namespace eslease::lock
