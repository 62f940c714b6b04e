#include "controller/renewer.h"

#include <algorithm>
#include <vector>

#include "common/log.h"
#include "controller/model.h"

namespace eslease::controller {

Renewer::Renewer(LockTable& table, lock::LockStore& store, Observer& observer, Clock& clock,
                 RenewerOptions options)
    : table_(table), store_(store), observer_(observer), clock_(clock), options_(std::move(options)) {}

void Renewer::wake() {
  std::lock_guard lock(mutex_);
  woken_ = true;
  cv_.notify_all();
}

void Renewer::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    tick();
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, stop, options_.tick, [this] { return woken_; });
    woken_ = false;
  }
}

int Renewer::tick() {
  const MonoTime now = clock_.monotonic();
  // Entries are locked for the whole batch, so a reconcile of one of these locks waits for
  // the outcome instead of deciding on a version that is being replaced.
  std::vector<LockEntry*> due;
  std::vector<std::unique_lock<std::mutex>> locks;
  std::vector<lock::HeldLock> held;
  for (const std::string& id : table_.active_ids()) {
    LockEntry* entry = table_.find(id);
    if (!entry) continue;
    std::unique_lock lock(entry->mutex, std::try_to_lock);
    if (!lock.owns_lock()) continue;  // being reconciled; next tick
    if (!entry->active || !entry->grant || entry->next_renewal > now) continue;
    held.push_back(lock::HeldLock{entry->key, *entry->grant, Millis(0)});
    due.push_back(entry);
    locks.push_back(std::move(lock));
  }
  if (held.empty()) return 0;

  std::vector<lock::BatchRenewal> results = store_.renew_all(held);
  const MonoTime after = clock_.monotonic();
  int renewed = 0;
  bool any_answer = false;
  bool any_unavailable = false;
  for (std::size_t i = 0; i < due.size() && i < results.size(); ++i) {
    LockEntry& entry = *due[i];
    const lock::BatchRenewal& result = results[i];
    switch (result.result) {
      case lock::BatchRenewal::Result::kRenewed:
        entry.hold(*result.grant, after);
        ++renewed;
        any_answer = true;
        if (options_.enqueue) options_.enqueue(entry.key.id());
        break;
      case lock::BatchRenewal::Result::kLost:
        log::warn("held lock was taken by someone else", {{"lock", entry.key.id()}});
        entry.drop();
        any_answer = true;
        if (options_.enqueue) options_.enqueue(entry.key.id());
        break;
      case lock::BatchRenewal::Result::kFailed: {
        const bool unavailable = result.error && (result.error->code == ErrorCode::kUnavailable ||
                                                  result.error->code == ErrorCode::kTimeout ||
                                                  result.error->code == ErrorCode::kTooManyRequests);
        any_unavailable = any_unavailable || unavailable;
        if (result.grant && !(result.grant->state.version == entry.grant->state.version)) {
          // Still our grant, renewed by another process (a second replica acting as leader):
          // renew from its version next time, and hand it over no earlier than its expiry,
          // which the holder may have been shown.
          entry.observe(result.grant->state, after);
          entry.grant->state = result.grant->state;
        }
        if (after >= entry.grant->valid_until) {
          // Not confirmed in time: the holder has stopped; the grant is over.
          entry.active = false;
          entry.revoked_reason = reason::kRenewalFailed;
          entry.expires_at = std::max(entry.expires_at, entry.grant->valid_until);
          observer_.renewal_failed();
          log::warn("lock renewal failed until the grant expired",
                    {{"lock", entry.key.id()}, {"error", result.error ? result.error->describe() : ""}});
          if (options_.enqueue) options_.enqueue(entry.key.id());
        } else {
          entry.next_renewal = after + options_.retry_after;
        }
        break;
      }
    }
  }
  if (options_.backend_answered) {
    if (any_answer) options_.backend_answered(true);
    if (any_unavailable && !any_answer) {
      options_.backend_answered(false);
      // Let every affected Lease show BackendAvailable=False.
      for (LockEntry* entry : due)
        if (options_.enqueue) options_.enqueue(entry->key.id());
    }
  }
  return renewed;
}

}  // namespace eslease::controller
