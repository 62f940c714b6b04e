// Keeps the eslease.io/holds annotation of holder pods ("<Lease>=<fencing token>,..."),
// which tells a pod what it holds without any client code (a downward-API volume turns it
// into a file). The annotation is the controller's to keep right: entries are recorded
// per lock, and each reconcile recomputes exactly its own lock's entries from the statuses
// it decided, so an entry whose Lease vanished (even without passing through deletion) goes
// too. A pod this controller has no record of (another leader's write, a hand edit) has its
// entries taken in under the lock each Lease claims, so that lock's reconcile confirms or
// removes them. Our own writes are remembered until the informer delivers them.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "common/result.h"
#include "controller/cluster_view.h"
#include "controller/decision.h"
#include "kube/api.h"

namespace eslease::controller {

class HoldsAnnotation {
 public:
  HoldsAnnotation(const ClusterView& cluster, kube::Api& api) : cluster_(cluster), api_(api) {}

  // Brings the annotations of the pods this lock concerns (the world's pods, and those
  // that held an entry for it) in line with `statuses`, the statuses decided for its claims.
  Status update(const LockWorld& world, const std::map<std::string, LeaseStatus>& statuses);

  // The informer delivered `version` of the pod `uid`: once it is the one our write
  // produced, our memory of that write is dropped.
  void seen(const std::string& uid, const std::string& version);
  // The pod left the cache.
  void forget(const std::string& uid);

 private:
  struct Hold {
    std::string lock;  // "<ns>/<lock>"
    std::string token;
  };
  struct Written {
    std::string value;
    std::string version;  // the resourceVersion our write produced
  };
  // The annotation values this lock's reconcile wants, by pod key. Needs mutex_.
  std::map<std::string, std::string> desired_values(const LockWorld& world,
                                                    const std::map<std::string, LeaseStatus>& statuses);
  // Takes in the entries of a pod we have no record of. Needs mutex_.
  void adopt(const std::string& pod_key, const PodRecord& pod, std::set<std::string>& touched);
  Status write(const std::string& pod_key, const std::string& value);

  const ClusterView& cluster_;
  kube::Api& api_;
  std::mutex mutex_;
  // What each pod holds: pod key -> Lease name -> its lock and token; and per lock, the
  // pods with an entry for it or whose annotation its last reconcile could not write.
  std::map<std::string, std::map<std::string, Hold>> holds_;
  std::map<std::string, std::set<std::string>> holders_;
  std::map<std::string, Written> written_;  // by pod UID
  std::mutex write_mutex_;                  // one annotation write at a time
};

}  // namespace eslease::controller
