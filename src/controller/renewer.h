// Renews every lock this controller holds, in batches: one tick collects the grants due
// (a third of their TTL after the last confirmed write) and renews them all through _bulk
// with per-item if_seq_no, so 10,000 held locks cost 10 requests, not 10,000. A renewed
// grant's lock is queued so its Lease status shows the new expireTime; a lost one is queued
// to be decided again; one that could not be confirmed before it expired is revoked
// (RenewalFailed): its holder has stopped itself by then.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "controller/lock_table.h"
#include "controller/observer.h"
#include "lock/lock_store.h"

namespace eslease::controller {

struct RenewerOptions {
  Millis tick{250};                                         // how often due grants are collected
  Millis retry_after{1000};                                 // after a failed renewal
  std::function<void(const std::string& lock_id)> enqueue;  // a lock needs a reconcile
  std::function<void(bool available)> backend_answered;     // Elasticsearch reachable or not
};

class Renewer {
 public:
  Renewer(LockTable& table, lock::LockStore& store, Observer& observer, Clock& clock, RenewerOptions options);

  // Runs ticks until `stop`.
  void run(std::stop_token stop);
  // Renews what is due now; returns how many grants were renewed. Exposed for tests.
  int tick();
  // Makes the next tick happen now (an adopted grant is due).
  void wake();

 private:
  void enqueue(const std::string& lock_id);

  LockTable& table_;
  lock::LockStore& store_;
  Observer& observer_;
  Clock& clock_;
  RenewerOptions options_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  bool woken_ = false;
};

}  // namespace eslease::controller
