// Keeps the eslease.io/holds annotation of holder pods ("<Lease>=<fencing token>,..."),
// which tells a pod what it holds without any client code (a downward-API volume turns it
// into a file). The annotation is the controller's to keep right: entries are recorded
// per lock, and each reconcile recomputes exactly its own lock's entries from the statuses
// it decided, so an entry whose Lease vanished (even without passing through deletion) goes
// too. A pod this controller has no record of (another leader's write, a hand edit) has its
// entries taken in under the lock each Lease claims, so that lock's reconcile confirms or
// removes them. Our own writes are remembered until the informer delivers them.
//
// A Lease with spec.holderLabel also has its holder pod labelled KEY: "true", in the same
// patch as the annotation. The label leaves old holders before a new one gets it: the pods
// that lose a label are patched first, and while one of them may still carry it (its patch
// failed; it stays remembered until a patch succeeds or the pod is gone) no pod is given it.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "common/result.h"
#include "controller/cluster_view.h"
#include "controller/decision.h"
#include "controller/lease_writer.h"
#include "controller/own_write.h"
#include "kube/api.h"

namespace eslease::controller {

class HoldsAnnotation {
 public:
  HoldsAnnotation(const ClusterView& cluster, kube::Api& api) : cluster_(cluster), api_(api) {}

  // Brings the annotations of the pods lock `lock_name` of the world concerns (the world's pods,
  // and those that held an entry for it) in line with `statuses`, the statuses decided for the
  // claims filed under it (a set's claim under its first lock). kDeferred when a write that can
  // wait (telling a new holder) was left for later.
  Result<WriteOutcome> update(const LockWorld& world, const std::string& lock_name,
                              const std::map<std::string, LeaseStatus>& statuses);

  // The informer delivered `version` of the pod `uid`: once a version after the one our
  // write produced arrives, our memory of that write is dropped (OwnWriteMark::superseded_by).
  void seen(const std::string& uid, const std::string& version);
  // The pod left the cache.
  void forget(const std::string& uid);

 private:
  struct Hold {
    std::string lock;  // "<ns>/<lock>"
    std::string token;
    std::string label;  // its Lease's spec.holderLabel; empty: none
  };
  // Our writes to one pod, overlaid until the cache shows them (own_write.h).
  struct Written {
    std::string value;
    std::map<std::string, bool> labels;  // holder labels set (true) or removed (false)
    OwnWriteMark mark;
  };
  // What one reconcile wants of one pod.
  struct PodPlan {
    std::optional<std::string> holds;  // the annotation value; nullopt: left as it is
    std::set<std::string> labels;      // holder labels it should carry, for any lock
    std::set<std::string> may_add;     // holder labels this lock gives
    std::set<std::string> may_remove;  // holder labels this lock takes away
  };
  // One pod's patch, worked out against what it carries now.
  struct PodWrite {
    PodRecord pod;
    std::optional<std::string> holds;  // set: the annotation changes to this
    std::set<std::string> add;
    std::set<std::string> remove;
  };
  // What this lock's reconcile wants, by pod key. Needs mutex_.
  std::map<std::string, PodPlan> desired_values(const LockWorld& world, const std::string& lock_name,
                                                const std::map<std::string, LeaseStatus>& statuses);
  // Adds the holder labels this lock may give or take to the plans of its pods. Needs mutex_.
  void plan_labels(const LockWorld& world, const std::string& lock_name, const std::string& lock,
                   const std::map<std::string, std::set<std::string>>& released,
                   std::map<std::string, PodPlan>& plans);
  // Takes in the entries of a pod we have no record of. Needs mutex_.
  void adopt(const std::string& pod_key, const PodRecord& pod, std::set<std::string>& touched);
  // The patch `plan` needs; nullopt when the pod is gone or nothing changes.
  std::optional<PodWrite> work_out(const std::string& pod_key, const PodPlan& plan, MonoTime now);
  Result<WriteOutcome> write(const PodWrite& change, MonoTime now);
  // The holder labels of `lock` that a pod may still carry after failed removals.
  std::set<std::string> pending_labels(const std::string& lock);
  // Drops from `change` the labels in `carried`; an error when it dropped any.
  static Status withhold(PodWrite& change, const std::set<std::string>& carried);
  // Records the outcome of a patch that takes holder labels away. Needs mutex_.
  void note_removal(const std::string& lock, const std::string& pod_key, const std::set<std::string>& keys,
                    bool done);

  const ClusterView& cluster_;
  kube::Api& api_;
  std::mutex mutex_;
  // What each pod holds: pod key -> Lease name -> its lock and token; and per lock, the
  // pods with an entry for it or whose annotation its last reconcile could not write.
  std::unordered_map<std::string, std::map<std::string, Hold>> holds_;
  std::unordered_map<std::string, std::set<std::string>> holders_;
  std::unordered_map<std::string, Written> written_;  // by pod UID
  // Holder labels a pod may still carry because the patch taking them away failed: lock ->
  // pod key -> label keys. The lock gives these keys to no pod until they are gone.
  std::map<std::string, std::map<std::string, std::set<std::string>>> unlabel_pending_;
  std::mutex write_mutex_;  // one annotation write at a time
};

}  // namespace eslease::controller
