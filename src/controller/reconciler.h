// One idempotent reconcile of one lock: gather the world from the caches and the lock
// table, decide (decision.h), carry the decision out with at most one conditional
// Elasticsearch write, decide again on the result until nothing is left to do, then write
// only the Lease statuses, finalizers and pod annotations that differ, and record events.
// It rebuilds everything from the world, so a restart or a new leader loses nothing.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "controller/claim_index.h"
#include "controller/cluster_view.h"
#include "controller/decision.h"
#include "controller/lock_table.h"
#include "controller/observer.h"
#include "controller/pod_tracker.h"
#include "kube/api.h"
#include "kube/event_recorder.h"
#include "lock/lock_store.h"

namespace eslease::controller {

struct ReconcilerOptions {
  bool liveness_takeover = true;
  bool holds_annotation = true;  // keep the eslease.io/holds annotation of holder pods
  // Called when an adopted grant should be renewed now.
  std::function<void()> wake_renewer;
};

struct ReconcileOutcome {
  std::optional<MonoTime> requeue_at;
  Status status;  // an error: retry with backoff
};

class Reconciler {
 public:
  Reconciler(const ClusterView& cluster, ClaimIndex& index, PodTracker& tracker, LockTable& table,
             lock::LockStore& store, kube::Api& api, kube::EventRecorder* events, Observer& observer,
             Clock& clock, ReconcilerOptions options = {});

  ReconcileOutcome reconcile(const std::string& lock_id);

  // Start-up: reads every lock document in batches (_mget) and grants the free locks whose
  // next claim is clear in batches (_bulk creates). The reconciles that follow then only
  // write statuses.
  void prime(const std::vector<std::string>& lock_ids);

  bool backend_available() const { return backend_available_.load(); }
  void backend_answered(bool available) { backend_available_.store(available); }

  // The informer delivered a Lease or pod version: once it is the one our write produced,
  // the cache has caught up and what we wrote is forgotten.
  void lease_seen(const std::string& uid, const std::string& version);
  void pod_seen(const std::string& uid, const std::string& version);
  // A Lease or pod left the cache: forget what we wrote to it.
  void forget_lease(const std::string& uid);
  void forget_pod(const std::string& uid);

 private:
  LockWorld gather(const LockEntry& entry, const std::optional<RecentGrant>& recent) const;
  void read_document(LockEntry& entry);
  Status carry_out(LockEntry& entry, const Decision& decision, const LockWorld& world,
                   std::optional<RecentGrant>& recent);
  lock::Claim claim_for(const LockWorld& world, const GrantPlan& plan) const;
  void record_grant(LockEntry& entry, const lock::AcquireOutcome& outcome, const Decision& decision,
                    const LockWorld& world, std::optional<RecentGrant>& recent, const char* op);
  // `retry_at` is moved earlier when a status write is held back (pace_correction).
  Status apply_to_cluster(const LockWorld& world, const Decision& decision,
                          std::optional<MonoTime>& retry_at);
  // False when the Lease's status was written by someone else and we already put it right
  // within the last kCorrectionPace: the write waits for `retry_at`.
  bool pace_correction(const LeaseRecord& lease, MonoTime now, std::optional<MonoTime>& retry_at);
  Status write_finalizers(const LockWorld& world, const Decision& decision);
  Status write_status(const LeaseRecord& lease, const LeaseStatus& status);
  Status update_annotations(const LockWorld& world, const Decision& decision);
  // A pod this session has no holds for yet, whose annotation (another leader's write, or
  // a hand edit) lists entries: each entry is recorded under the lock its Lease claims, so
  // that lock's next reconcile confirms or removes it, and entries of other locks are kept
  // meanwhile; an entry whose Lease is gone marks the pod for rewriting. Needs memory_mutex_.
  void adopt_holds(const std::string& pod_key, const PodRecord& pod, std::set<std::string>& touched);
  void note_error(const Error& error);

  const ClusterView& cluster_;
  ClaimIndex& index_;
  PodTracker& tracker_;
  LockTable& table_;
  lock::LockStore& store_;
  kube::Api& api_;
  kube::EventRecorder* events_;
  Observer& observer_;
  Clock& clock_;
  ReconcilerOptions options_;
  std::atomic<bool> backend_available_{true};

  // What we last wrote, so a cache that has not caught up with our own write is not
  // mistaken for the truth. The memory lasts until the cache shows our write: the informer
  // delivers the resourceVersion our write produced (`seen`), or the cache holds the same
  // value. From then on the cache is the truth again, so a later write by another replica
  // that also believes it leads is seen and corrected, not hidden behind our memory.
  template <typename Value>
  struct Written {
    Value value;
    std::string version;  // the resourceVersion our write produced
  };
  template <typename Value>
  static void forget_if_seen(std::map<std::string, Written<Value>>& memory, const std::string& uid,
                             const std::string& version) {
    if (auto it = memory.find(uid); it != memory.end() && it->second.version == version) memory.erase(it);
  }
  mutable std::mutex memory_mutex_;
  mutable std::map<std::string, Written<LeaseStatus>> written_status_;  // by Lease UID
  // By Lease UID: the resourceVersion of our last status write, and when we last overwrote
  // a status someone else wrote (pace_correction).
  std::map<std::string, std::string> status_version_;
  std::map<std::string, MonoTime> corrected_at_;
  // What each pod holds, for its eslease.io/holds annotation: pod key -> Lease name -> the
  // lock ("<ns>/<lock>") and token. `holders_` lists, per lock, the pods with an entry for
  // it, so each reconcile recomputes exactly its own lock's entries: a Lease that vanished
  // without passing through deletion (removed before its finalizer was added) loses its
  // entry too.
  struct Hold {
    std::string lock;
    std::string token;
  };
  std::map<std::string, std::map<std::string, Hold>> holds_;
  std::map<std::string, std::set<std::string>> holders_;            // lock -> pod keys
  std::map<std::string, Written<std::string>> written_annotation_;  // by pod UID
  std::mutex annotation_mutex_;                                     // one annotation write at a time per pod
};

}  // namespace eslease::controller
