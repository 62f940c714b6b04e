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
#include "common/text.h"

namespace eslease::cli {
namespace {

class StoreHold final : public Hold {
 public:
  StoreHold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl, std::ostream& err)
      : store_(store),
        clock_(clock),
        name_(join(lock_ids_of(grant), ", ")),
        ttl_(ttl),
        grant_(std::move(grant)),
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
    // A grant taken by someone else gives the command its grace: there is nothing left to
    // protect by killing it sooner.
    return State{lost_, why_, lost_ ? MonoTime::max() : grant_.valid_until};
  }

  void finish(bool lost) override {
    stop_renewing();
    if (lost || lost_) return;  // never release a grant that is someone else's now
    auto released = store_.release(grant_, lock::ReleaseScope::kGrant);
    if (!released.ok())
      err_ << "eslease: cannot release " << name_ << " (it expires on its own): " << released.error().message
           << "\n";
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
      // The deadline passed while the renewal was out: the command has been stopped, or is
      // being stopped, and the grant is over for this process whatever the answer says.
      expire_if_due(now);
      if (!held_) return;
      take(std::move(renewed), now);
    }
  }

  // Under mutex_.
  void take(lock::GrantRenewal renewed, MonoTime now) {
    using Result = lock::RenewalResult;
    switch (renewed.result) {
      case Result::kRenewed:
        grant_ = std::move(*renewed.grant);
        next_renew_ = now + renew_every_;
        retry_.reset();
        break;
      case Result::kLost:
        held_ = false;
        lost_ = true;
        why_ = "lock " + name_ + " was lost: " + renewed.why;
        break;
      case Result::kFailed:
        // Each document at its newest confirmed version; the deadline stays.
        if (renewed.grant) grant_ = std::move(*renewed.grant);
        messages_ << "eslease: cannot renew " << name_ << ": "
                  << (renewed.error ? renewed.error->message : std::string("unconfirmed")) << "\n";
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

  lock::LockStore& store_;
  Clock& clock_;
  const std::string name_;
  const Millis ttl_;
  lock::HeldGrant grant_;  // guarded by mutex_, as everything below but the constants
  std::ostream& err_;
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

}  // namespace

std::vector<std::string> lock_ids_of(const lock::HeldGrant& grant) {
  std::vector<std::string> ids;
  for (const lock::HeldDocument& doc : grant.docs)
    if (std::find(ids.begin(), ids.end(), doc.key.id()) == ids.end()) ids.push_back(doc.key.id());
  return ids;
}

std::unique_ptr<Hold> make_store_hold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl,
                                      std::ostream& err) {
  return std::make_unique<StoreHold>(store, clock, std::move(grant), ttl, err);
}

}  // namespace eslease::cli
