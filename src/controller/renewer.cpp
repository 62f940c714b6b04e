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
  // Entries are held for the whole batch, so a reconcile of one of these locks waits for
  // the outcome instead of deciding on a version that is being replaced.
  std::vector<LockTable::Handle> due;
  std::vector<lock::HeldLock> held;
  for (const std::string& id : table_.renewing_ids()) {
    std::optional<LockTable::Handle> entry = table_.try_lock(id);
    if (!entry) continue;  // being reconciled; next tick
    if (!(*entry)->renewing() || !(*entry)->grant() || (*entry)->next_renewal() > now) continue;
    held.push_back(lock::HeldLock{(*entry)->key(), *(*entry)->grant(), Millis(0)});
    due.push_back(std::move(*entry));
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
        entry.renewed(*result.grant, after);
        ++renewed;
        any_answer = true;
        enqueue(entry.key().id());
        break;
      case lock::BatchRenewal::Result::kLost:
        log::warn("held lock was taken by someone else", {{"lock", entry.key().id()}});
        entry.lost();
        any_answer = true;
        enqueue(entry.key().id());
        break;
      case lock::BatchRenewal::Result::kFailed: {
        any_unavailable = any_unavailable || (result.error && result.error->unavailable());
        std::optional<lock::LockState> still_ours;
        if (result.grant) still_ours = result.grant->state;
        if (entry.renewal_not_confirmed(still_ours, after, after + options_.retry_after)) {
          observer_.renewal_failed();
          log::warn("lock renewal failed until the grant expired",
                    {{"lock", entry.key().id()}, {"error", result.error ? result.error->describe() : ""}});
          enqueue(entry.key().id());
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
      for (const LockTable::Handle& entry : due) enqueue(entry->key().id());
    }
  }
  return renewed;
}

void Renewer::enqueue(const std::string& lock_id) {
  if (options_.enqueue) options_.enqueue(lock_id);
}

}  // namespace eslease::controller
