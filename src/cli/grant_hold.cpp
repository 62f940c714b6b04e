#include "cli/grant_hold.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "common/backoff.h"

namespace eslease::cli {
namespace {

std::string names_of(const lock::HeldGrant& grant) {
  std::string out;
  for (const lock::HeldLock& doc : grant.docs) {
    if (out.find(doc.key.id()) == std::string::npos) out += (out.empty() ? "" : ", ") + doc.key.id();
  }
  return out;
}

class GrantHold final : public Hold {
 public:
  GrantHold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl, std::ostream& err)
      : store_(store),
        clock_(clock),
        names_(names_of(grant)),
        grant_(std::move(grant)),
        ttl_(ttl),
        err_(err),
        renew_every_(std::max(Millis(1), ttl / 3)),
        retry_(BackoffPolicy{Millis(100), std::max(Millis(100), ttl / 10), 2.0}),
        next_renew_(clock.monotonic() + renew_every_),
        renewer_([this](const std::stop_token& stop) { renew_until_stopped(stop); }) {}

  ~GrantHold() override { stop_renewing(); }
  GrantHold(const GrantHold&) = delete;
  GrantHold& operator=(const GrantHold&) = delete;

  State check() override {
    std::lock_guard lock(mutex_);
    expire_if_due(clock_.monotonic());
    err_ << messages_.str();
    messages_.str("");
    State state;
    state.lost = lost_;
    state.why = why_;
    state.confirmed_until = lost_ ? MonoTime::max() : grant_.valid_until;
    return state;
  }

  void finish(bool lost) override {
    stop_renewing();
    if (lost || lost_) return;  // never release documents that are someone else's now
    auto released = store_.release_grant(grant_);
    if (!released.ok()) {
      err_ << "eslease: cannot release " << names_
           << " (it expires on its own): " << released.error().describe() << "\n";
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
      const lock::HeldGrant held = grant_;
      lock.unlock();
      lock::GrantRenewal renewed = lock::renew_grant(store_, held, ttl_);
      lock.lock();
      const MonoTime now = clock_.monotonic();
      expire_if_due(now);  // a renewal answered after the deadline revives nothing
      if (!held_) return;
      take(std::move(renewed), now);
    }
  }

  // Under mutex_.
  void take(lock::GrantRenewal renewed, MonoTime now) {
    switch (renewed.result) {
      case lock::GrantRenewal::Result::kRenewed:
        grant_ = std::move(*renewed.grant);
        next_renew_ = now + renew_every_;
        retry_.reset();
        break;
      case lock::GrantRenewal::Result::kLost:
        held_ = false;
        lost_ = true;
        why_ = "lock " + names_ + " was lost: " + renewed.why;
        break;
      case lock::GrantRenewal::Result::kFailed:
        if (renewed.grant) grant_ = std::move(*renewed.grant);  // each document at its newest version
        messages_ << "eslease: cannot renew " << names_ << ": "
                  << (renewed.error ? renewed.error->describe() : std::string("unconfirmed")) << "\n";
        next_renew_ = now + retry_.next();
        break;
    }
  }

  // Under mutex_.
  void expire_if_due(MonoTime now) {
    if (held_ && !lost_ && now >= grant_.valid_until) {
      held_ = false;
      messages_ << "eslease: lock " << names_ << " expired before it could be renewed\n";
    }
  }

  void stop_renewing() {
    renewer_.request_stop();
    if (renewer_.joinable()) renewer_.join();
  }

  lock::LockStore& store_;
  Clock& clock_;
  const std::string names_;
  lock::HeldGrant grant_;  // guarded by mutex_, as everything below
  const Millis ttl_;
  std::ostream& err_;
  const Millis renew_every_;
  Backoff retry_;
  MonoTime next_renew_;
  std::mutex mutex_;
  std::condition_variable_any woken_;
  bool held_ = true;
  bool lost_ = false;
  std::string why_;
  std::ostringstream messages_;
  std::jthread renewer_;  // last: it uses everything above
};

}  // namespace

std::unique_ptr<Hold> make_grant_hold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl,
                                      std::ostream& err) {
  return std::make_unique<GrantHold>(store, clock, std::move(grant), ttl, err);
}

}  // namespace eslease::cli
