#include "cli/store_hold.h"

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

class StoreHold final : public Hold {
 public:
  StoreHold(lock::LockStore& store, Clock& clock, lock::LockKey key, lock::Grant grant, Millis ttl,
            std::ostream& err)
      : store_(store),
        clock_(clock),
        key_(std::move(key)),
        grant_(std::move(grant)),
        ttl_(ttl),
        err_(err),
        renew_every_(std::max(Millis(1), ttl / 3)),
        retry_(BackoffPolicy{Millis(100), std::max(Millis(100), ttl / 10), 2.0}),
        next_renew_(clock.monotonic() + renew_every_),
        renewer_([this](const std::stop_token& stop) { renew_until_stopped(stop); }) {}

  ~StoreHold() override { stop_renewing(); }
  StoreHold(const StoreHold&) = delete;
  StoreHold& operator=(const StoreHold&) = delete;

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
    auto released = store_.release(key_, grant_, lock::ReleaseScope::kGrant);
    if (!released.ok()) {
      err_ << "eslease: cannot release " << key_.id()
           << " (it expires on its own): " << released.error().message << "\n";
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
      const lock::Grant held = grant_;
      lock.unlock();
      auto renewed = store_.renew(key_, held, ttl_);
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
  void take(Result<lock::RenewOutcome> renewed, MonoTime now) {
    if (renewed.ok() && renewed->grant) {
      grant_ = std::move(*renewed->grant);
      next_renew_ = renewed->renewed ? now + renew_every_ : now;
      if (renewed->renewed) retry_.reset();
    } else if (renewed.ok()) {
      held_ = false;
      lost_ = true;
      why_ = "lock " + key_.id() + " was lost" +
             (renewed->current ? " to " + renewed->current->doc.holder : std::string());
    } else {
      messages_ << "eslease: cannot renew " << key_.id() << ": " << renewed.error().message << "\n";
      next_renew_ = now + retry_.next();
    }
  }

  // Under mutex_. Past the deadline nobody may rely on our hold any more, confirmed or not.
  void expire_if_due(MonoTime now) {
    if (held_ && !lost_ && now >= grant_.valid_until) {
      held_ = false;
      messages_ << "eslease: lock " << key_.id() << " expired before it could be renewed\n";
    }
  }

  void stop_renewing() {
    renewer_.request_stop();
    if (renewer_.joinable()) renewer_.join();  // waits out a renewal in flight
  }

  lock::LockStore& store_;
  Clock& clock_;
  const lock::LockKey key_;
  lock::Grant grant_;  // guarded by mutex_, as everything below
  const Millis ttl_;
  std::ostream& err_;
  const Millis renew_every_;
  Backoff retry_;
  MonoTime next_renew_;
  std::mutex mutex_;
  std::condition_variable_any woken_;  // only a stop request wakes the renewer early
  bool held_ = true;                   // we may still own the document
  bool lost_ = false;                  // another grant replaced ours
  std::string why_;
  std::ostringstream messages_;  // for stderr, said by check()
  std::jthread renewer_;         // last: it uses everything above
};

}  // namespace

std::unique_ptr<Hold> make_store_hold(lock::LockStore& store, Clock& clock, lock::LockKey key,
                                      lock::Grant grant, Millis ttl, std::ostream& err) {
  return std::make_unique<StoreHold>(store, clock, std::move(key), std::move(grant), ttl, err);
}

}  // namespace eslease::cli
