#include "lock/shape_acquirer.h"

#include <algorithm>
#include <map>

#include "common/duration.h"
#include "lock/expiry.h"

namespace eslease::lock {
namespace {

std::string names_of(const std::vector<LockKey>& keys) {
  std::string out;
  for (const LockKey& key : keys) out += (out.empty() ? "" : ", ") + key.id();
  return out;
}

// The claimant's own grant, renewed: nullopt when it was lost meanwhile (read again).
Result<std::optional<HeldGrant>> take_back(LockStore& store, const std::vector<HeldLock>& own, Millis ttl) {
  HeldGrant held;
  held.id = own.front().grant.state.doc.grant;
  held.docs = own;
  for (const HeldLock& doc : held.docs) held.token = std::max(held.token, doc.grant.state.token);
  for (HeldLock& doc : held.docs) doc.grant.state.token = held.token;
  GrantRenewal renewed = renew_grant(store, held, ttl);
  if (renewed.result == GrantRenewal::Result::kRenewed)
    return std::optional<HeldGrant>(std::move(*renewed.grant));
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

// Why the claim is given up at its deadline: the last error, else what keeps the locks busy.
Error given_up(const ShapedClaim& claim, const std::optional<Error>& last_error, const std::string& busy,
               Millis wait) {
  if (last_error) {
    Error error = *last_error;
    error.message = "cannot acquire " + names_of(claim.keys) + ": " + error.message;
    return error;
  }
  std::string message = busy;
  if (wait > Millis(0)) message += "; gave up after waiting " + format_duration(wait);
  return make_error(ErrorCode::kBusy, std::move(message));
}

}  // namespace

Result<HeldGrant> acquire_shaped(LockStore& store, Clock& clock, const ShapedClaim& claim,
                                 const WaitOptions& options, std::stop_token stop) {
  if (Status valid = check_claim(claim.keys, claim.shape); !valid.ok()) return valid.error();
  const MonoTime deadline = options.wait >= kWaitForever ? MonoTime::max() : clock.monotonic() + options.wait;
  Backoff backoff(options.backoff);
  std::optional<Error> last_error;
  std::string busy = "busy";
  std::map<std::string, Sighting> seen;  // each slot document as last read, and when it expires
  // A Shared claim on several slots cannot guess which one is free: it reads first.
  bool read_first = claim.shape.access == Access::kShared && claim.shape.capacity > 1;
  int immediate_retries = 0;  // bounded, so locks that keep moving still meet the deadline
  for (;;) {
    std::optional<MonoTime> expiry;
    std::optional<GrantRequest> request;
    if (!read_first) {
      request = GrantRequest{writes_if_free(claim.keys, claim.shape), claim.grantee, claim.shape.capacity,
                             claim.shape.access};
      read_first = true;
    } else if (auto read = store.read_slots(claim.keys, claim.shape.capacity); !read.ok()) {
      if (!worth_another_round(read.error())) return read.error();
      last_error = read.error();
    } else {
      last_error.reset();
      const auto locks = sighted(claim.keys, std::move(*read), clock.monotonic(), seen, expiry);
      ClaimPlan plan = plan_claim(locks, claim.shape, claim.grantee.holder);
      if (plan.kind == ClaimPlan::Kind::kInvalid) return make_error(ErrorCode::kInvalid, plan.why);
      if (plan.kind == ClaimPlan::Kind::kOwn) {
        auto own = take_back(store, plan.own, claim.grantee.ttl);
        if (own.ok() && *own) return std::move(**own);
        if (!own.ok() && !worth_another_round(own.error())) return own.error();
        if (!own.ok()) last_error = own.error();
      } else if (plan.kind == ClaimPlan::Kind::kGrant) {
        request =
            GrantRequest{std::move(plan.writes), claim.grantee, claim.shape.capacity, claim.shape.access};
      } else {
        busy = plan.why;
      }
    }
    if (request) {
      auto outcome = store.grant(*request);
      if (outcome.ok() && outcome->grant) return std::move(*outcome->grant);
      if (!outcome.ok() && !worth_another_round(outcome.error())) return outcome.error();
      if (!outcome.ok()) last_error = outcome.error();
      // Someone moved first, or a first unread attempt met holders: read at once.
      if (outcome.ok() && ++immediate_retries <= 3) continue;
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
