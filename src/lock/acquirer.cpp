#include "lock/acquirer.h"

#include <algorithm>
#include <map>
#include <utility>

#include "common/duration.h"
#include "common/text.h"
#include "lock/expiry.h"

namespace eslease::lock {
namespace {

std::string names_of(const std::vector<LockKey>& keys) {
  std::vector<std::string> ids;
  ids.reserve(keys.size());
  for (const LockKey& key : keys) ids.push_back(key.id());
  return join(ids, ", ");
}

// The claimant's own grant, renewed: nullopt when it was lost meanwhile (read again).
Result<std::optional<HeldGrant>> take_back(LockStore& store, std::vector<HeldDocument> own, Millis ttl) {
  GrantRenewal renewed = renew_grant(store, grant_of(std::move(own)), ttl);
  if (renewed.result == RenewalResult::kRenewed) return std::optional<HeldGrant>(std::move(*renewed.grant));
  if (renewed.result == RenewalResult::kLost) return std::optional<HeldGrant>();
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
Error given_up(const Claim& claim, const std::optional<Error>& last_error, const std::string& busy,
               Millis wait) {
  if (last_error) {
    Error error = *last_error;
    error.message = "cannot acquire " + names_of(claim.keys) + ": " + error.message;
    return error;
  }
  std::string message = busy.empty() ? "lock " + names_of(claim.keys) + " is busy" : busy;
  if (wait > Millis(0)) message += "; gave up after waiting " + format_duration(wait);
  return make_error(ErrorCode::kBusy, std::move(message));
}

// Slots as read, in the claim's lock order, and when the read was answered (for `sight`).
struct SlotsRead {
  std::vector<std::vector<std::optional<LockState>>> slots;
  MonoTime answered{};
};

// The rounds of one acquire. Each round plans on the slots as read (the failed attempt's own
// read, else a fresh one) and writes when it can; between rounds the claim waits with backoff.
class Rounds {
 public:
  Rounds(LockStore& store, Clock& clock, Claim claim, const WaitOptions& options)
      : store_(store),
        clock_(clock),
        claim_(std::move(claim)),
        options_(options),
        deadline_(options.wait >= kWaitForever ? MonoTime::max() : clock.monotonic() + options.wait),
        backoff_(options.backoff),
        read_first_(claim_.shape.access != Access::kExclusive) {}

  Result<HeldGrant> run(const std::stop_token& stop) {
    for (;;) {
      Round round;
      if (auto done = play(round)) return std::move(*done);
      if (round.again_at_once) continue;
      const MonoTime now = clock_.monotonic();
      if (now >= deadline_) return given_up(claim_, last_error_, busy_, options_.wait);
      announce(round.blocking);
      immediate_retries_ = 0;
      if (!clock_.sleep_for(delay(now, round.expiry), stop))
        return make_error(ErrorCode::kCancelled, "stopped while waiting for " + names_of(claim_.keys));
    }
  }

 private:
  struct Round {
    std::optional<MonoTime> expiry;     // the earliest moment a live slot expires
    std::optional<LockState> blocking;  // the document the claim waits behind
    bool again_at_once = false;         // someone moved first: decide again without waiting
  };
  using Decided = std::optional<Result<HeldGrant>>;  // set: the claim's outcome

  Decided play(Round& round) {
    std::optional<GrantRequest> request;
    if (!read_first_) {
      read_first_ = true;
      request = GrantRequest{writes_if_free(claim_.keys, claim_.shape), claim_.grantee, claim_.shape.capacity,
                             claim_.shape.access};
    } else if (auto read = next_read(); !read.ok()) {
      return failed(read.error());
    } else if (Decided done = plan(std::move(*read), round, request)) {
      return done;
    }
    return request ? write(*request, round) : std::nullopt;
  }

  // What the last failed attempt read back, else every slot of the claim's locks, read in one
  // request.
  Result<SlotsRead> next_read() {
    if (known_) return *std::exchange(known_, std::nullopt);
    std::vector<SlotRange> ranges;
    for (const LockKey& key : claim_.keys) ranges.push_back(SlotRange{key, claim_.shape.capacity});
    auto read = store_.read_slots(ranges);
    if (!read.ok()) return read.error();
    SlotsRead out;
    for (auto& lock : *read) {
      out.slots.emplace_back();
      for (DocumentRead& doc : lock) {
        if (!doc.ok()) return doc.error();
        out.slots.back().push_back(std::move(*doc));
      }
    }
    out.answered = clock_.monotonic();
    return out;
  }

  // Decides on the slots as read; sets `request` when there is a grant to write.
  Decided plan(SlotsRead read, Round& round, std::optional<GrantRequest>& request) {
    last_error_.reset();
    const std::vector<LockSlots> locks =
        sighted(claim_.keys, std::move(read.slots), read.answered, seen_, round.expiry);
    ClaimPlan plan = plan_claim(locks, claim_.shape, claim_.grantee.holder);
    switch (plan.kind) {
      case ClaimPlan::Kind::kInvalid:
        return Result<HeldGrant>(make_error(ErrorCode::kInvalid, plan.why));
      case ClaimPlan::Kind::kOwn: {
        auto own = take_back(store_, std::move(plan.own), claim_.grantee.ttl);
        if (!own.ok()) return failed(own.error());
        if (*own) return Result<HeldGrant>(std::move(**own));
        return std::nullopt;
      }
      case ClaimPlan::Kind::kGrant:
        request =
            GrantRequest{std::move(plan.writes), claim_.grantee, claim_.shape.capacity, claim_.shape.access};
        return std::nullopt;
      case ClaimPlan::Kind::kBusy:
        busy_ = plan.why;
        round.blocking = std::move(plan.holder);
        return std::nullopt;
    }
    return std::nullopt;
  }

  Decided write(const GrantRequest& request, Round& round) {
    auto outcome = grant_one(store_, request);
    if (!outcome.ok()) return failed(outcome.error());
    if (outcome->grant) return Result<HeldGrant>(std::move(*outcome->grant));
    // Someone moved first, or a first unread attempt met holders: decide again at once, on
    // what the attempt read back when that covers every slot of the claim.
    if (++immediate_retries_ <= 3) {
      if (claim_.shape.access == Access::kExclusive)
        known_ = SlotsRead{as_read(claim_, std::move(outcome->current)), outcome->observed_at};
      round.again_at_once = true;
    }
    return std::nullopt;
  }

  // An error ends the claim unless another round may succeed; then it is kept for giving up.
  Decided failed(const Error& error) {
    if (!worth_another_round(error)) return Result<HeldGrant>(error);
    last_error_ = error;
    return std::nullopt;
  }

  // Says whom the claim waits behind, once per holder.
  void announce(const std::optional<LockState>& blocking) {
    if (!blocking || !options_.on_wait || announced_ == blocking->token) return;
    announced_ = blocking->token;
    options_.on_wait(*blocking);
  }

  // Backoff, but no later than the earliest expiry seen (a takeover is due then) or the deadline.
  Millis delay(MonoTime now, std::optional<MonoTime> expiry) {
    Millis delay = backoff_.next();
    if (expiry && *expiry > now) delay = std::min(delay, std::chrono::ceil<Millis>(*expiry - now));
    delay = std::min(delay, std::chrono::ceil<Millis>(deadline_ - now));
    return std::max(delay, Millis(1));
  }

  LockStore& store_;
  Clock& clock_;
  const Claim claim_;
  const WaitOptions& options_;
  const MonoTime deadline_;
  Backoff backoff_;
  std::optional<Error> last_error_;
  std::string busy_;                       // why the claim waits, said when it gives up
  std::optional<std::int64_t> announced_;  // the holder on_wait was last told about
  std::map<std::string, Sighting> seen_;   // each slot document as last read, and when it expires
  std::optional<SlotsRead> known_;         // what the last failed attempt read back, covering every slot
  bool read_first_;  // a Shared claim on several slots cannot guess which one is free: it reads first
  int immediate_retries_ = 0;  // bounded, so locks that keep moving still meet the deadline
};

}  // namespace

// After a conflict the next read shows what is there now; paused grants resume.
bool worth_another_round(const Error& error) {
  return error.unavailable() || error.code == ErrorCode::kConflict || error.code == ErrorCode::kGrantsPaused;
}

Grantee direct_grantee(std::string holder, Millis ttl) {
  Grantee grantee;
  grantee.lease_uid = random_id("", 4);  // 128 bits
  grantee.holder = std::move(holder);
  grantee.ttl = ttl;
  return grantee;
}

Result<HeldGrant> acquire(LockStore& store, Clock& clock, const Claim& given, const WaitOptions& options,
                          std::stop_token stop) {
  Claim claim = given;
  claim.shape.access = api::effective_access(claim.shape.capacity, claim.shape.access);
  if (Status valid = check_claim(claim.keys, claim.shape); !valid.ok()) return valid.error();
  return Rounds(store, clock, std::move(claim), options).run(stop);
}

}  // namespace eslease::lock
