#include "lock/acquirer.h"

#include <algorithm>
#include <iomanip>
#include <random>
#include <sstream>

#include "common/duration.h"
#include "common/log.h"
#include "common/text.h"
#include "lock/expiry.h"

namespace eslease::lock {
namespace {

std::string describe_holder(const LockState& state) {
  return "held by " + state.doc.holder + " (token " + std::to_string(state.token) + ", renewed " +
         format_rfc3339_millis(state.doc.renewed_at) + ", ttl " +
         format_duration(Millis(state.doc.ttl_millis)) + ")";
}

// 128 random bits in hex.
std::string random_lease_uid() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << std::setfill('0');
  for (int i = 0; i < 4; ++i) out << std::setw(8) << device();
  return out.str();
}

}  // namespace

// After a conflict the next read shows what is there now; paused grants resume.
bool worth_another_round(const Error& error) {
  return error.unavailable() || error.code == ErrorCode::kConflict || error.code == ErrorCode::kGrantsPaused;
}

Grantee direct_grantee(std::string holder, Millis ttl) {
  Grantee grantee;
  grantee.lease_uid = random_lease_uid();
  grantee.holder = std::move(holder);
  grantee.ttl = ttl;
  return grantee;
}

Result<Grant> acquire_waiting(LockStore& store, Clock& clock, const LockKey& key, const Grantee& grantee,
                              const WaitOptions& options, std::stop_token stop) {
  const MonoTime deadline = options.wait >= kWaitForever ? MonoTime::max() : clock.monotonic() + options.wait;
  std::optional<std::int64_t> announced_token;  // the holder on_wait was last told about
  Backoff backoff(options.backoff);
  std::optional<Error> last_error;
  std::optional<Sighting> seen;  // the holder's document as last read, and when it expires
  int immediate_retries = 0;     // bounded, so a lock that keeps moving still meets the deadline
  for (;;) {
    auto outcome = store.acquire(key, grantee);
    std::optional<MonoTime> expiry;
    if (outcome.ok() && outcome->grant) return std::move(*outcome->grant);
    if (!outcome.ok()) {
      if (!worth_another_round(outcome.error())) return outcome.error();
      last_error = outcome.error();
    } else if (outcome->current) {
      last_error.reset();
      seen = sight(seen, *outcome->current, outcome->observed_at);
      if (is_expired(*seen, clock.monotonic())) {
        log::info("taking over an expired lock", {{"lock", key.id()},
                                                  {"holder", outcome->current->doc.holder},
                                                  {"token", outcome->current->token}});
        auto taken = store.take_over(key, *outcome->current, grantee);
        if (taken.ok() && taken->grant) return std::move(*taken->grant);
        if (!taken.ok() && !worth_another_round(taken.error())) return taken.error();
        // Someone moved first: read again and restart the observation.
        if (++immediate_retries <= 3) continue;
      }
      expiry = seen->expires_at;
    } else if (++immediate_retries <= 3) {
      continue;  // released between our create and our read: try again at once
    }

    const MonoTime now = clock.monotonic();
    if (now >= deadline) {
      if (last_error) {
        Error error = *last_error;
        error.message = "cannot acquire " + key.id() + ": " + error.message;
        return error;
      }
      std::string message =
          "lock " + key.id() + " is " + (seen ? describe_holder(seen->state) : std::string("busy"));
      if (options.wait > Millis(0)) message += "; gave up after waiting " + format_duration(options.wait);
      return make_error(ErrorCode::kBusy, std::move(message));
    }
    if (seen && options.on_wait && announced_token != seen->state.token) {
      announced_token = seen->state.token;
      options.on_wait(seen->state);
    }
    immediate_retries = 0;
    Millis delay = backoff.next();
    if (expiry && *expiry > now) delay = std::min(delay, std::chrono::ceil<Millis>(*expiry - now));
    delay = std::min(delay, std::chrono::ceil<Millis>(deadline - now));
    if (!clock.sleep_for(std::max(delay, Millis(1)), stop)) {
      return make_error(ErrorCode::kCancelled, "stopped while waiting for " + key.id());
    }
  }
}

}  // namespace eslease::lock
