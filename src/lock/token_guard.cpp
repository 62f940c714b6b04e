#include "lock/token_guard.h"

#include <algorithm>

#include "lock/document.h"

namespace eslease::lock {

TokenGuard::TokenGuard(Clock& clock, std::function<void(const FencingReport&)> on_report)
    : clock_(clock), on_report_(std::move(on_report)) {}

void TokenGuard::set_source(IssuedBeforeSource source) {
  std::lock_guard lock(mutex_);
  source_ = std::move(source);
  checked_ = false;
}

void TokenGuard::saw(std::int64_t token) {
  std::lock_guard lock(mutex_);
  largest_seen_ = std::max(largest_seen_, token);
}

void TokenGuard::handed_out(MonoTime valid_until) {
  std::lock_guard lock(mutex_);
  latest_validity_ = std::max(latest_validity_, valid_until);
}

bool TokenGuard::needs_check() const {
  std::lock_guard lock(mutex_);
  return !checked_;
}

std::int64_t TokenGuard::known_locked() const {
  return std::max(largest_seen_, reported_.largest_token);
}

Result<EpochPlan> TokenGuard::plan(const IndexTokens& index) {
  IssuedBeforeSource source;
  {
    std::lock_guard lock(mutex_);
    source = source_;
  }
  const IssuedBefore before = source ? source() : IssuedBefore{};  // outside our mutex: it reads caches
  std::lock_guard lock(mutex_);
  reported_ = before;
  const std::int64_t known = known_locked();
  // An epoch whose every token is larger than every token known.
  const std::int64_t above_known = known > 0 ? epoch_of(known) + 1 : 0;
  EpochPlan plan;
  plan.epoch = index.epoch;
  bool changed = false;
  if (!index.exists) {
    plan = EpochPlan{above_known, true, false, std::nullopt, "the lock index is missing"};
    changed = known > 0;
  } else if (!index.recorded) {
    // An index of an eslease without epochs (an upgrade), or one a write auto-created.
    plan = EpochPlan{above_known, true, false, std::nullopt, "the lock index records no token epoch"};
    changed = known > 0 && index.foreign;
  } else if (index.recorded_uuid.empty()) {
    plan = EpochPlan{std::max(index.epoch, above_known), true, false, std::nullopt,
                     "the lock index was created without knowing the tokens issued before"};
    changed = known > 0;
  } else if (index.recorded_uuid != index.uuid) {
    // Tokens of its recorded epoch may have been issued after the copy was taken, also ones
    // no Lease remembers: the next epoch is above them all.
    plan = EpochPlan{
        std::max(index.epoch + 1, above_known), true, false, std::nullopt,
        "the lock index has another UUID than its token epoch was recorded for (restored or copied)"};
    changed = true;
  } else if (raise_) {
    const std::int64_t epoch = std::max(index.epoch, above_known);
    plan = EpochPlan{epoch, epoch != index.epoch, false, std::nullopt,
                     "a grant's token was not larger than a token issued before"};
  } else if (index.epoch < epoch_of(known)) {
    plan = EpochPlan{above_known, true, false, std::nullopt,
                     "the lock index records an epoch below a token issued before (restored?)"};
    changed = true;
  }
  plan.raised = plan.epoch > index.epoch;
  if (plan.epoch > kMaxEpoch) {
    return make_error(ErrorCode::kTokensExhausted,
                      "no fencing token epoch is left above the largest token known (" +
                          std::to_string(known) + "): " + plan.why);
  }
  if (changed) plan.pause_until = std::max(latest_validity_, clock_.monotonic() + reported_.longest_validity);
  return plan;
}

void TokenGuard::pause_locked(MonoTime until, const std::string& why) {
  if (until <= paused_until_) return;
  paused_until_ = until;
  pause_reason_ = why;
}

void TokenGuard::checked(const EpochPlan& plan) {
  std::lock_guard lock(mutex_);
  epoch_ = plan.epoch;
  checked_ = true;
  raise_ = false;
  check_error_.clear();
  if (plan.pause_until) pause_locked(*plan.pause_until, plan.why);
  report(false);
}

void TokenGuard::check_failed(const Error& error) {
  std::lock_guard lock(mutex_);
  // An unreachable Elasticsearch is reported as such by every request; only a check that
  // was answered and still cannot prove the tokens makes grants refused for this reason.
  if (!error.unavailable()) check_error_ = error.message;
  report(true);
}

Status TokenGuard::may_grant() {
  std::lock_guard lock(mutex_);
  const MonoTime now = clock_.monotonic();
  if (now >= paused_until_) return {};
  report(true);
  const auto left = std::chrono::ceil<std::chrono::seconds>(paused_until_ - now).count();
  return make_error(ErrorCode::kGrantsPaused, "grants wait " + std::to_string(left) +
                                                  "s more, until every grant made on the old lock index has "
                                                  "expired: " +
                                                  pause_reason_);
}

std::int64_t TokenGuard::epoch() const {
  std::lock_guard lock(mutex_);
  return epoch_;
}

std::int64_t TokenGuard::floor() const {
  std::lock_guard lock(mutex_);
  return known_locked();
}

bool TokenGuard::accept(std::int64_t token, std::int64_t floor) {
  std::lock_guard lock(mutex_);
  if (token > floor) {
    largest_seen_ = std::max(largest_seen_, token);
    return true;
  }
  checked_ = false;
  raise_ = true;
  pause_locked(std::max(latest_validity_, clock_.monotonic() + reported_.longest_validity),
               "a grant's fencing token " + std::to_string(token) + " was not larger than token " +
                   std::to_string(floor) +
                   " issued before: the lock index went back (re-created or restored)");
  report(true);
  return false;
}

void TokenGuard::grant_vanished() {
  std::lock_guard lock(mutex_);
  // The index lost documents (a delete, a restore over it): its pairs may have gone back too,
  // so the next epoch is taken rather than found out by a refused grant.
  checked_ = false;
  raise_ = true;
  pause_locked(std::max(latest_validity_, clock_.monotonic() + reported_.longest_validity),
               "the document of a held lock vanished (the lock index, or the document, was deleted)");
}

std::optional<std::string> TokenGuard::refusal() const {
  std::lock_guard lock(mutex_);
  const MonoTime now = clock_.monotonic();
  // Worded the same for the whole pause: it becomes a Lease condition's message.
  if (now < paused_until_) {
    return "fencing tokens are not proven larger than those issued before: " + pause_reason_ +
           "; grants wait until every grant made on the old lock index has expired";
  }
  if (!check_error_.empty())
    return "fencing tokens are not proven larger than those issued before: " + check_error_;
  return std::nullopt;
}

void TokenGuard::report(bool refused) const {
  if (on_report_) on_report_(FencingReport{epoch_, refused});
}

}  // namespace eslease::lock
