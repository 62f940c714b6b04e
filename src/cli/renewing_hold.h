// The renewal loop shared by direct mode's holds (store_hold.h for one lock document,
// grant_hold.h for a grant of several): what differs is only how a grant is renewed and
// released, which each passes in.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "cli/supervisor.h"
#include "common/backoff.h"
#include "common/clock.h"

namespace eslease::cli {

// What one renewal came to, in the terms the hold acts on.
template <class GrantT>
struct RenewStep {
  enum class Result {
    kRenewed,    // `grant` is the renewed grant
    kRefreshed,  // `grant` is still ours but was not extended: renew it again at once
    kLost,       // `why` says which lock went, and to whom
    kFailed,     // `why` says what went wrong; `grant`, if set, is the newest confirmed state
  } result = Result::kFailed;
  std::optional<GrantT> grant;
  std::string why;
};

// Renews the grant every ttl/3 on a thread of its own, so a renewal that takes its time
// (Elasticsearch timeouts, retries, the read that settles an unknown outcome) never keeps the
// supervisor from stopping the command at the grant's deadline; a renewal that comes back
// after that deadline revives nothing. Releases the grant at the end unless lost.
template <class GrantT>
class RenewingHold final : public Hold {
 public:
  using Renew = std::function<RenewStep<GrantT>(const GrantT&)>;
  using Release = std::function<std::optional<std::string>(const GrantT&)>;  // the error, if any

  // `name` names the lock in messages.
  RenewingHold(Clock& clock, std::string name, GrantT grant, Millis ttl, std::ostream& err, Renew renew,
               Release release)
      : clock_(clock),
        name_(std::move(name)),
        grant_(std::move(grant)),
        err_(err),
        renew_(std::move(renew)),
        release_(std::move(release)),
        renew_every_(std::max(Millis(1), ttl / 3)),
        retry_(BackoffPolicy{Millis(100), std::max(Millis(100), ttl / 10), 2.0}),
        next_renew_(clock.monotonic() + renew_every_),
        renewer_([this](const std::stop_token& stop) { renew_until_stopped(stop); }) {}

  ~RenewingHold() override { stop_renewing(); }
  RenewingHold(const RenewingHold&) = delete;
  RenewingHold& operator=(const RenewingHold&) = delete;

  // Never waits for a renewal: the supervisor calls it to learn whether the deadline is near.
  State check() override {
    std::lock_guard lock(mutex_);
    expire_if_due(clock_.monotonic());
    // Said here, on the supervisor's thread, which owns stderr while the command runs.
    err_ << messages_.str();
    messages_.str("");
    State state;
    state.lost = lost_;
    state.why = why_;
    // A grant taken by someone else gives the command its grace: there is nothing left to
    // protect by killing it sooner.
    state.confirmed_until = lost_ ? MonoTime::max() : grant_.valid_until;
    return state;
  }

  void finish(bool lost) override {
    stop_renewing();
    if (lost || lost_) return;  // never release a grant that is someone else's now
    if (auto failed = release_(grant_)) {
      err_ << "eslease: cannot release " << name_ << " (it expires on its own): " << *failed << "\n";
    }
  }

 private:
  void renew_until_stopped(const std::stop_token& stop) {
    std::unique_lock lock(mutex_);
    for (;;) {
      clock_.wait_until(lock, woken_, next_renew_, stop, [&stop] { return stop.stop_requested(); });
      if (stop.stop_requested()) return;
      expire_if_due(clock_.monotonic());
      if (!held_) return;
      if (clock_.monotonic() < next_renew_) continue;
      const GrantT held = grant_;
      lock.unlock();
      RenewStep<GrantT> renewed = renew_(held);
      lock.lock();
      const MonoTime now = clock_.monotonic();
      // The deadline passed while the renewal was out: the command has been stopped, or is
      // being stopped, and the grant is over for this process whatever the answer says.
      expire_if_due(now);
      if (!held_) return;
      take(std::move(renewed), now);
    }
  }

  // Under mutex_.
  void take(RenewStep<GrantT> renewed, MonoTime now) {
    using Result = typename RenewStep<GrantT>::Result;
    switch (renewed.result) {
      case Result::kRenewed:
        grant_ = std::move(*renewed.grant);
        next_renew_ = now + renew_every_;
        retry_.reset();
        break;
      case Result::kRefreshed:
        grant_ = std::move(*renewed.grant);
        next_renew_ = now;
        break;
      case Result::kLost:
        held_ = false;
        lost_ = true;
        why_ = std::move(renewed.why);
        break;
      case Result::kFailed:
        if (renewed.grant) grant_ = std::move(*renewed.grant);
        messages_ << "eslease: cannot renew " << name_ << ": " << renewed.why << "\n";
        next_renew_ = now + retry_.next();
        break;
    }
  }

  // Under mutex_. Past the deadline nobody may rely on our hold any more, confirmed or not.
  void expire_if_due(MonoTime now) {
    if (held_ && !lost_ && now >= grant_.valid_until) {
      held_ = false;
      messages_ << "eslease: lock " << name_ << " expired before it could be renewed\n";
    }
  }

  void stop_renewing() {
    renewer_.request_stop();
    if (renewer_.joinable()) renewer_.join();  // waits out a renewal in flight
  }

  Clock& clock_;
  const std::string name_;
  GrantT grant_;  // guarded by mutex_, as everything below but the constants
  std::ostream& err_;
  const Renew renew_;
  const Release release_;
  const Millis renew_every_;
  Backoff retry_;
  MonoTime next_renew_;
  std::mutex mutex_;
  std::condition_variable_any woken_;  // only a stop request wakes the renewer early
  bool held_ = true;                   // we may still own the grant
  bool lost_ = false;                  // another grant replaced ours
  std::string why_;
  std::ostringstream messages_;  // for stderr, said by check()
  std::jthread renewer_;         // last: it uses everything above
};

}  // namespace eslease::cli
