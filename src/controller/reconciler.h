// One idempotent reconcile of a lock: gather the world from the caches and the lock table,
// decide (decision.h), carry the decision out in one step (at most one conditional
// Elasticsearch write, or a revocation listed in the namespace's session), and decide again
// on the result until nothing is left to do, for a bounded number of steps; then write the
// Lease statuses and finalizers that differ (LeaseWriter), the pods' holds annotations
// (HoldsAnnotation) and the events. It rebuilds everything from the world, so a restart or a
// new leader loses nothing.
//
// Every lock is reconciled the same way, whatever its shape: a lock of capacity N has N slot
// documents (a single lock one), and the locks that lock sets link together, through their
// claims or through a grant's documents, are decided as one world. The reconcile holds the
// gates of all of them (reconcile_gates.h) and every slot document's lock-table entry, taken in
// the order of their ids as the session keeper takes them, so overlapping sets never make two
// workers wait for each other; the entries not known yet are read in one request.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <unordered_map>
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
  // A reconcile that still has an action pending after this many steps, plus two per slot
  // document (a release, then a grant of its slot), fails with kUnsettled and is retried with
  // backoff: the documents keep moving under it.
  static constexpr int kMaxSteps = 4;  // e.g. release a deleted claim's lock, then grant it to the next
  // A reconcile that left writes for later because the client's rate limit was busy
  // (kube::Api::patch_unless_busy), or met a Lease changed since it was read, runs again this
  // much later (the watch event of the change normally brings it sooner): later than the
  // event thread's poll (EventRecorder), as each retry is a whole reconcile of the lock.
  static constexpr Millis kDeferredWritesRequeue{500};

  // `events` may be null (no events are recorded).
  Reconciler(const ClusterView& cluster, ClaimIndex& index, PodTracker& tracker, LockTable& table,
             lock::LockStore& store, SessionKeeper& sessions, kube::Api& api, kube::EventRecorder* events,
             Observer& observer, Clock& clock, ReconcilerOptions options = {});

  // `stop` ends the term of leadership: once requested nothing more is written.
  ReconcileOutcome reconcile(const std::string& lock_id, std::stop_token stop = {});

  // Start-up: reads every lock document in batches (_mget) and makes the first grant of every
  // lock (or linked group) whose grant is on free slots in batches (_bulk). The reconciles that
  // follow find those grants made and the documents known; a document that could not be read
  // is read by its own reconcile.
  void prime(const std::vector<std::string>& lock_ids);

  bool backend_available() const { return backend_available_.load(); }
  void backend_answered(bool available) { backend_available_.store(available); }

  // Informer deliveries: a Lease or pod version arrived, or the object left the cache.
  void lease_seen(const std::string& uid, const std::string& version) { leases_.seen(uid, version); }
  void pod_seen(const std::string& uid, const std::string& version) { holds_.seen(uid, version); }
  void forget_lease(const std::string& uid) {
    leases_.forget(uid);
    std::lock_guard lock(caught_up_mutex_);
    caught_up_.erase(uid);
  }
  void forget_pod(const std::string& uid) { holds_.forget(uid); }

 private:
  // The locks one reconcile decides together, with their claims (read once per reconcile)
  // and their shapes (worked out once from those claims).
  struct Group {
    std::vector<lock::LockKey> keys;  // the lock reconciled first
    std::vector<LockShape> shapes;    // in the order of `keys`
    std::vector<LeaseRecord> claims;  // every claim of any of them, once
    std::vector<std::string> ids() const;
  };
  // Every slot-document entry of the group's locks, held: entries[i][k] is slot k of keys[i].
  using Entries = std::vector<std::vector<LockTable::Handle>>;

  // The locks linked to `key` (and to `more`) through the lock sets their claims name.
  Group group_of(const lock::LockKey& key, const std::vector<lock::LockKey>& more = {}) const;
  std::vector<LeaseRecord> claims_of(const lock::LockKey& key, MonoTime now) const;
  // Takes every slot entry of the group in the order of their ids, reads those not known, and
  // again with more slots when a document states a larger capacity than was taken.
  Entries take(const Group& group);
  // How many slot documents of each of the group's locks are taken: its capacity, or more
  // where a lock still has documents above it (left from a larger capacity).
  std::vector<std::int64_t> slots_to_take(const Group& group) const;
  // Start-up (reconciler_prime.cpp): a batch of groups read in one request and their first
  // grants on free slots written in one. A planned grant keeps what announcing it reads, not
  // the world it was decided on: a batch plans a thousand of them before its write.
  struct PrimeGrant {
    const Group* group = nullptr;
    Decision decision;
    WallTime decided_at{};
    lock::GrantRequest request;
  };
  bool prime_batch(std::vector<Group>& batch);
  std::optional<PrimeGrant> plan_prime_grant(const Group& group, std::vector<lock::DocumentRead>* docs,
                                             MonoTime answered);
  void write_prime_grants(std::vector<PrimeGrant>& plans);
  void read_unknown(const Group& group, Entries& entries);
  // A claim's Lease shows Held under a token later than every document of its locks we know,
  // and someone else wrote that status: another controller (a second replica that also
  // believed it led) granted it, and our entries are behind. They are read again, once per
  // version of such a Lease, so that the decision sees that grant (grant_rules.h:
  // give_way_to_the_recorded_grant) instead of writing an older one over it.
  void catch_up(const Group& group, Entries& entries);
  // Locks a grant's documents name that the group does not decide: the group grows by them.
  std::vector<lock::LockKey> unseen_locks(const Group& group, const Entries& entries) const;
  LockWorld gather(const Group& group, const Entries& entries, const std::vector<RecentGrant>& recent) const;
  void gather_pods(LockWorld& world, const std::vector<std::string>& holders) const;
  std::vector<GrantView> grants_on(const LockWorld& world, const Group& group, const Entries& entries) const;
  std::vector<LockEntry*> entries_of(const Group& group, Entries& entries,
                                     const std::vector<SlotRef>& slots) const;

  // One step's action, carried out (reconcile_writes.cpp).
  Status carry_out(const Group& group, Entries& entries, const Decision& decision, const LockWorld& world,
                   std::vector<RecentGrant>& recent);
  Status grant(const Group& group, Entries& entries, const Decision& decision, const LockWorld& world,
               std::vector<RecentGrant>& recent);
  Status release(const std::vector<LockEntry*>& entries, const Decision& decision);
  Status revoke(const std::vector<LockEntry*>& entries, const Decision& decision, const LockWorld& world);
  lock::GrantRequest grant_request(const std::vector<LockEntry*>& entries, const Decision& decision,
                                   const LockWorld& world) const;
  // Records a granting write's outcome in the entries; true when the write won.
  bool record_grant(const std::vector<LockEntry*>& entries, const lock::GrantOutcome& outcome,
                    const Decision& decision);
  // Metrics, session wake-up and log of a grant made in namespace `ns`, decided at `decided_at`.
  void announce_grant(const std::string& lock_id, std::int64_t token, const Decision& decision,
                      const std::string& ns, WallTime decided_at, bool ended_grant_expired);

  // Decides and acts until nothing is left to do; false when the reconcile ends here (still
  // changing after its steps, or leadership ended), with `outcome` saying why.
  bool run_steps(const Group& group, Entries& entries, LockWorld& world, Decision& decision,
                 ReconcileOutcome& outcome, std::stop_token stop);

  // The holds annotation of every lock of the world, each with the claims filed under it, as
  // `statuses` show them.
  Result<WriteOutcome> update_holds(const LockWorld& world,
                                    const std::map<std::string, LeaseStatus>& statuses);
  // `retry_at` is moved earlier when a status write waits for the correction pace or a
  // write that can wait was left for later (reconcile_cluster_writes.cpp).
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
  // By Lease UID: the version of the Lease catch_up last read the documents for.
  std::mutex caught_up_mutex_;
  std::unordered_map<std::string, std::string> caught_up_;
};

}  // namespace eslease::controller
