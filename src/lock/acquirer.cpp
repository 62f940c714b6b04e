#include "lock/acquirer.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>

#include "common/duration.h"
#include "common/log.h"
#include "common/text.h"
#include "lock/expiry.h"

namespace eslease::lock {
namespace {

// 128 random bits in hex.
std::string random_lease_uid() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << std::setfill('0');
  for (int i = 0; i < 4; ++i) out << std::setw(8) << device();
  return out.str();
}

std::string names_of(const std::vector<LockKey>& keys) {
  std::vector<std::string> ids;
  ids.reserve(keys.size());
  for (const LockKey& key : keys) ids.push_back(key.id());
  return join(ids, ", ");
}

// The documents a claim that takes whole locks writes: every slot it reads.
bool takes_whole_locks(const ClaimShape& shape) {
  return shape.access == Access::kExclusive;
}

// The claimant's own grant, renewed: nullopt when it was lost meanwhile (read again).
Result<std::optional<HeldGrant>> take_back(LockStore& store, std::vector<HeldDocument> own, Millis ttl) {
  GrantRenewal renewed = renew_grant(store, grant_of(std::move(own)), ttl);
  if (renewed.result == GrantRenewal::Result::kRenewed) return std::optional<HeldGrant>(std::move(*renewed.grant));
  if (renewed.result == GrantRenewal::Result::kLost) return std::optional<HeldGrant>();
  return *renewed.error;
}

// Every slot as read, sighted on our clock; `expiry` is the earliest moment a live one expires.
std::vector<LockSlots> sighted(const std::vector<LockKey>& keys,
                                       std::vector<std::vector<std::optional<LockState>>> read, MonoTime answered,
                                       std::map<std::string, Sighting>& seen, std::optional<MonoTime>& expiry) {
  std::vector<LockSlots> locks;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    LockSlots lock{keys[i], {}};
    for (std::size_t k = 0; k < read[i].size(); ++k) {
      const std::string id = slot_document_id(keys[i].id(), std::int64_t(k));
      if (!read[i][k]) {
        seen.erase(id);
        lock.slots.push_back(SlotSight{});
        continue;
      }
      auto previous = seen.find(id);
      Sighting now = sight(previous == seen.end() ? std::nullopt : std::optional(previous->second),
                           *read[i][k], answered);
      const bool expired = is_expired(now, answered);
      if (!expired) expiry = std::min(expiry.value_or(MonoTime::max()), now.expires_at);
      seen[id] = now;
      lock.slots.push_back(SlotSight{std::move(read[i][k]), expired});
    }
    locks.push_back(std::move(lock));
  }
  return locks;
}

// Every slot of the claim's locks, read in one request.
Result<std::vector<std::vector<std::optional<LockState>>>> read_claim(LockStore& store, const Claim& claim) {
  std::vector<SlotRange> ranges;
  for (const LockKey& key : claim.keys) ranges.push_back(SlotRange{key, claim.shape.capacity});
  auto read = store.read_slots(ranges);
  if (!read.ok()) return read.error();
  std::vector<std::vector<std::optional<LockState>>> out;
  for (auto& lock : *read) {
    out.emplace_back();
    for (DocumentRead& doc : lock) {
      if (!doc.ok()) return doc.error();
      out.back().push_back(std::move(*doc));
    }
  }
  return out;
}

// A failed attempt that wrote every slot of the claim's locks read them all back: the same
// as a read of the claim, in the claim's order.
std::vector<std::vector<std::optional<LockState>>> as_read(const Claim& claim,
                                                           std::vector<std::optional<LockState>> current) {
  std::vector<std::vector<std::optional<LockState>>> out(claim.keys.size());
  const std::size_t per_lock = static_cast<std::size_t>(claim.shape.capacity);
  for (std::size_t n = 0; n < current.size(); ++n) out[n / per_lock].push_back(std::move(current[n]));
  return out;
}

// Why the claim is given up at its deadline: the last error, else what keeps the locks busy.
Error given_up(const Claim& claim, const std::optional<Error>& last_error, const std::string& busy, Millis wait) {
  if (last_error) {
    Error error = *last_error;
    error.message = "cannot acquire " + names_of(claim.keys) + ": " + error.message;
    return error;
  }
  std::string message = busy.empty() ? "lock " + names_of(claim.keys) + " is busy" : busy;
  if (wait > Millis(0)) message += "; gave up after waiting " + format_duration(wait);
  return make_error(ErrorCode::kBusy, std::move(message));
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

Result<HeldGrant> acquire(LockStore& store, Clock& clock, const Claim& given, const WaitOptions& options,
                          std::stop_token stop) {
  Claim claim = given;
  claim.shape.access = api::effective_access(claim.shape.capacity, claim.shape.access);
  if (Status valid = check_claim(claim.keys, claim.shape); !valid.ok()) return valid.error();
  const MonoTime deadline = options.wait >= kWaitForever ? MonoTime::max() : clock.monotonic() + options.wait;
  Backoff backoff(options.backoff);
  std::optional<Error> last_error;
  std::string busy;
  std::optional<std::int64_t> announced;  // the holder on_wait was last told about
  std::map<std::string, Sighting> seen;   // each slot document as last read, and when it expires
  // What the last failed attempt read back, when it covers every slot of the claim.
  std::optional<std::pair<std::vector<std::vector<std::optional<LockState>>>, MonoTime>> known;
  // A Shared claim on several slots cannot guess which one is free: it reads first.
  bool read_first = !takes_whole_locks(claim.shape);
  int immediate_retries = 0;  // bounded, so locks that keep moving still meet the deadline
  for (;;) {
    std::optional<MonoTime> expiry;
    std::optional<GrantRequest> request;
    std::optional<std::pair<std::vector<std::vector<std::optional<LockState>>>, MonoTime>> read;
    if (!read_first) {
      request = GrantRequest{writes_if_free(claim.keys, claim.shape), claim.grantee, claim.shape.capacity,
                             claim.shape.access};
      read_first = true;
    } else if (known) {
      read = std::move(known);
      known.reset();
    } else if (auto fresh = read_claim(store, claim); !fresh.ok()) {
      if (!worth_another_round(fresh.error())) return fresh.error();
      last_error = fresh.error();
    } else {
      read.emplace(std::move(*fresh), clock.monotonic());
    }
    if (read) {
      last_error.reset();
      const std::vector<LockSlots> locks = sighted(claim.keys, std::move(read->first), read->second, seen, expiry);
      ClaimPlan plan = plan_claim(locks, claim.shape, claim.grantee.holder);
      if (plan.kind == ClaimPlan::Kind::kInvalid) return make_error(ErrorCode::kInvalid, plan.why);
      if (plan.kind == ClaimPlan::Kind::kOwn) {
        auto own = take_back(store, std::move(plan.own), claim.grantee.ttl);
        if (own.ok() && *own) return std::move(**own);
        if (!own.ok() && !worth_another_round(own.error())) return own.error();
        if (!own.ok()) last_error = own.error();
      } else if (plan.kind == ClaimPlan::Kind::kGrant) {
        request = GrantRequest{std::move(plan.writes), claim.grantee, claim.shape.capacity, claim.shape.access};
      } else {
        busy = plan.why;
        if (plan.holder && options.on_wait && announced != plan.holder->token) {
          announced = plan.holder->token;
          options.on_wait(*plan.holder);
        }
      }
    }
    if (request) {
      auto outcome = grant_one(store, *request);
      if (outcome.ok() && outcome->grant) return std::move(*outcome->grant);
      if (!outcome.ok() && !worth_another_round(outcome.error())) return outcome.error();
      if (!outcome.ok()) last_error = outcome.error();
      // Someone moved first, or a first unread attempt met holders: decide again at once, on
      // what the attempt read back when that covers every slot of the claim.
      if (outcome.ok() && ++immediate_retries <= 3) {
        if (takes_whole_locks(claim.shape))
          known.emplace(as_read(claim, std::move(outcome->current)), outcome->observed_at);
        continue;
      }
    }

    const MonoTime now = clock.monotonic();
    if (now >= deadline) return given_up(claim, last_error, busy, options.wait);
    immediate_retries = 0;
    Millis delay = backoff.next();
    if (expiry && *expiry > now) delay = std::min(delay, std::chrono::ceil<Millis>(*expiry - now));
    delay = std::min(delay, std::chrono::ceil<Millis>(deadline - now));
    if (!clock.sleep_for(std::max(delay, Millis(1)), stop))
      return make_error(ErrorCode::kCancelled, "stopped while waiting for " + names_of(claim.keys));
  }
}

}  // namespace eslease::lock
