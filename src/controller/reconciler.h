// One idempotent reconcile of one lock: gather the world from the caches and the lock
// table, decide (decision.h), carry the decision out in one step (at most one conditional
// Elasticsearch write, or a revocation listed in the namespace's session), and decide again
// on the result until nothing is left to do, for at most kMaxSteps steps; then write the
// Lease statuses and finalizers that differ (LeaseWriter), the pods' holds annotations
// (HoldsAnnotation) and the events. It rebuilds everything from the world, so a restart or a
// new leader loses nothing.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/claim_index.h"
#include "controller/cluster_view.h"
#include "controller/decision.h"
#include "controller/holds_annotation.h"
#include "controller/lease_writer.h"
#include "controller/lock_table.h"
#include "controller/observer.h"
#include "controller/pod_tracker.h"
#include "controller/reconcile_gates.h"
#include "controller/session_keeper.h"
#include "kube/api.h"
#include "kube/event_recorder.h"
#include "lock/lock_store.h"

namespace eslease::controller {

struct ReconcilerOptions {
  bool liveness_takeover = true;
  bool holds_annotation = true;  // keep the eslease.io/holds annotation of holder pods
};

struct ReconcileOutcome {
  std::optional<MonoTime> requeue_at;
  Status status;  // an error: retry with backoff
};

class Reconciler {
 public:
  // One step acts once; a reconcile that still has an action pending after this many steps
  // (the document keeps moving under it) fails with kUnsettled and is retried with backoff.
  // A reconcile that left writes for later because the client's rate limit was busy
  // (kube::Api::patch_unless_busy) runs again this much later: later than the event
  // thread's poll (EventRecorder), as each retry is a whole reconcile of the lock.
  static constexpr Millis kDeferredWritesRequeue{500};
  static constexpr int kMaxSteps = 4;  // e.g. release a deleted claim's lock, then grant it to the next

  // `events` may be null (no events are recorded).
  Reconciler(const ClusterView& cluster, ClaimIndex& index, PodTracker& tracker, LockTable& table,
             lock::LockStore& store, SessionKeeper& sessions, kube::Api& api, kube::EventRecorder* events,
             Observer& observer, Clock& clock, ReconcilerOptions options = {});

  // `stop` ends the term of leadership: once requested nothing more is written.
  ReconcileOutcome reconcile(const std::string& lock_id, std::stop_token stop = {});

  // Start-up: reads every lock document in batches (_mget) and grants the free locks whose
  // next claim is clear in batches (_bulk creates). The reconciles that follow find those
  // grants made and the documents known; a document that could not be read is read by its
  // own reconcile.
  void prime(const std::vector<std::string>& lock_ids);

  bool backend_available() const { return backend_available_.load(); }
  void backend_answered(bool available) { backend_available_.store(available); }

  // Informer deliveries: a Lease or pod version arrived, or the object left the cache.
  void lease_seen(const std::string& uid, const std::string& version) { leases_.seen(uid, version); }
  void pod_seen(const std::string& uid, const std::string& version) { holds_.seen(uid, version); }
  void forget_lease(const std::string& uid) { leases_.forget(uid); }
  void forget_pod(const std::string& uid) { holds_.forget(uid); }

 private:
  // What one reconcile does at each step, for one document or for a lock's slots.
  struct Steps {
    std::function<LockWorld(const std::optional<RecentGrant>&)> gather;
    std::function<Status(const Decision&, const LockWorld&, std::optional<RecentGrant>&)> carry_out;
    std::function<void(const Decision&)> outcome_unknown;  // a write failed: read before deciding
  };
  // Decides and acts until nothing is left to do; false when the reconcile ends here (still
  // changing after `max_steps`, or leadership ended), with `outcome` saying why.
  bool run_steps(const std::string& lock_id, const Steps& steps, int max_steps, LockWorld& world,
                 Decision& decision, ReconcileOutcome& outcome, std::stop_token stop);

  std::vector<LeaseRecord> claims_of(const lock::LockKey& key, MonoTime now) const;
  // The world of locks without their documents: claims (of any of them), clocks, options.
  LockWorld world_around(const std::vector<lock::LockKey>& keys,
                         const std::optional<RecentGrant>& recent) const;
  LockWorld gather(const LockEntry& entry, const std::optional<RecentGrant>& recent) const;
  void gather_pods(LockWorld& world, const std::vector<std::string>& holders) const;
  std::optional<DocumentView> document_view(const LockWorld& world, const LockEntry& entry) const;
  void read_document(LockEntry& entry);
  Status carry_out(LockEntry& entry, const Decision& decision, const LockWorld& world,
                   std::optional<RecentGrant>& recent);
  Status release(const std::vector<LockEntry*>& entries, const Decision& decision);
  Status revoke(const std::vector<LockEntry*>& entries, const Decision& decision, const LockWorld& world);
  lock::Grantee grantee(const LockWorld& world, const GrantPlan& plan) const;
  // Records the outcome of a granting write; true when the write won.
  bool record_grant(LockEntry& entry, const lock::AcquireOutcome& outcome, const Decision& decision,
                    const LockWorld& world, const char* op);
  // Metrics, session wake-up and log of a grant made.
  void announce_grant(const std::string& lock_id, std::int64_t token, const Decision& decision,
                      const LockWorld& world);

  // A shaped reconcile (shaped_reconcile.cpp): a lock of capacity above 1, one with slot
  // documents left from one, or the locks lock sets link together, decided as one world.
  struct LockSlots {
    lock::LockKey key;
    std::int64_t capacity = 1;
    std::vector<LockTable::Handle> entries;  // index: slot
  };
  using ShapedEntries = std::vector<LockSlots>;  // in the order of `keys` given to reconcile_shaped
  // Every lock linked to `key` through lock sets (claims naming several locks), `key` first.
  std::vector<lock::LockKey> linked_locks(const lock::LockKey& key) const;
  // The locks linked to `key`, decided together behind their gates.
  ReconcileOutcome reconcile_linked(const lock::LockKey& key, std::stop_token stop);
  // `slots`: how many slot documents of each lock to read and decide on at least.
  ReconcileOutcome reconcile_shaped(const std::vector<lock::LockKey>& keys, std::int64_t slots,
                                    std::stop_token stop);
  // Every slot document of the locks, taken, read, and each lock's capacity from its claims.
  ShapedEntries take_slots(const std::vector<lock::LockKey>& keys, std::int64_t slots);
  ShapedEntries lock_slots(const std::vector<lock::LockKey>& keys, const std::vector<std::int64_t>& slots);
  void read_slots(ShapedEntries& locks);
  LockWorld gather_slots(const ShapedEntries& locks, const std::optional<RecentGrant>& recent) const;
  std::vector<LockEntry*> entries_of(ShapedEntries& locks, const std::vector<SlotRef>& slots) const;
  Status carry_out_slots(ShapedEntries& locks, const Decision& decision, const LockWorld& world,
                         std::optional<RecentGrant>& recent);
  Status grant_slots(ShapedEntries& locks, const Decision& decision, const LockWorld& world,
                     std::optional<RecentGrant>& recent);
  // The holds annotation of every lock of the world, each with the claims filed under it.
  Result<WriteOutcome> update_holds(const LockWorld& world, const Decision& decision);
  // `retry_at` is moved earlier when a status write waits for the correction pace or a
  // write that can wait was left for later.
  Status write_to_cluster(const LockWorld& world, const Decision& decision,
                          std::optional<MonoTime>& retry_at);
  // Records the decision's events, but none for a Lease in `not_written` (its status write
  // was deferred or failed, and the retry plans the event again).
  void record_events(const LockWorld& world, const Decision& decision,
                     const std::set<std::string>& not_written);
  void note_error(const Error& error);

  const ClusterView& cluster_;
  ClaimIndex& index_;
  PodTracker& tracker_;
  LockTable& table_;
  lock::LockStore& store_;
  SessionKeeper& sessions_;
  kube::EventRecorder* events_;
  Observer& observer_;
  Clock& clock_;
  ReconcilerOptions options_;
  std::atomic<bool> backend_available_{true};
  LeaseWriter leases_;
  HoldsAnnotation holds_;
  ReconcileGates gates_;
};

}  // namespace eslease::controller
