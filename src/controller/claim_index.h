// Which locks an event concerns. Leases are indexed by every lock they claim; pods map to the
// locks that name them (claim mode), that may select them (election claims of their
// namespace) or that they hold. An event on a pod or a Lease then wakes exactly those locks.
// The index also counts the Leases by phase and priority as they change, so reporting the
// counts does not walk every Lease.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "controller/model.h"

namespace eslease::controller {

// Leases by phase and priority names (a Lease without a status yet counts as Pending); only
// counts above 0.
using ClaimCounts = std::map<std::pair<std::string, std::string>, int>;

class ClaimIndex {
 public:
  // Returns the locks the Lease claimed before and claims now (both need a reconcile).
  std::vector<std::string> lease_changed(const LeaseRecord* before, const LeaseRecord* now);

  // Every lock with at least one claim.
  std::vector<std::string> locks() const;
  // Keys (ns/name) of the Leases of namespace `ns` shown Held, as last seen, in no order.
  std::vector<std::string> held_in(const std::string& ns) const;
  // Lease keys (ns/name) claiming `lock_id`.
  std::vector<std::string> claims_of(const std::string& lock_id) const;
  // Locks a change to this pod may concern: named by a claim, selectable by an election
  // claim of its namespace (old or new labels), or held by it.
  std::vector<std::string> locks_for_pod(const PodRecord* before, const PodRecord* now) const;

  // The reconciler records who holds each lock, so a holder's events reach its lock.
  void set_holder(const std::string& lock_id, const std::string& pod_key);

  // The Lease `uid` arrived through the watch (not a list) now: its place in the queue among
  // claims created in the same second, in the order the API server created them (a watch
  // delivers them in that order). Arrivals are kept to the microsecond, strictly increasing,
  // while the claim waits (its status records the same instant as status.queuedAt).
  void arrived(const std::string& uid, WallTime at);
  std::optional<WallTime> arrival_of(const std::string& uid) const;
  // A claim a list brought (the start-up list, or a re-list after the watch expired) that no
  // controller has queued (no status yet): made while no controller watched.
  struct Unqueued {
    std::string uid;
    std::string name;
    WallTime created;  // creationTimestamp: whole seconds
    std::string resource_version;
    std::vector<std::string> lock_ids;
  };
  // Their arrivals: each at its creationTimestamp, claims created in the same second a
  // microsecond apart in the order the API server wrote them (their resourceVersions, which
  // are comparable since Kubernetes 1.35; by name where one cannot be ordered). A claim's
  // last write may be after its creation (a label added): it then stands later in its second,
  // never in another. A re-list's (`relisted`) claims were made after those the watch
  // brought: they arrive after them. From the start-up list, an arrival is kept only where the
  // creationTimestamp alone would not place the claim (another claim of its lock made in its
  // second); an arrival already known is kept.
  void listed_unqueued(std::vector<Unqueued> claims, bool relisted);

  // Every Lease seen, counted as it was last seen.
  ClaimCounts counts() const;
  // What serves a claim not served yet: the pod it names, or (election) its namespace and
  // selector.
  struct UnservedClaim {
    std::string pod_key;  // claim mode: ns/pod; empty in election mode
    std::string ns;       // election mode only
    std::optional<LabelSelector> selector;
  };
  // The claims of the Leases with a lock name not served yet (Pending, or no phase) and not
  // being deleted, in no order: the candidates for waiters, kept so that counting them reads
  // neither every Lease nor any of them.
  std::vector<UnservedClaim> unserved_claims() const;

 private:
  // What the index keeps of one Lease (a Lease without a lock name is only counted).
  struct IndexedLease {
    std::vector<std::string> lock_ids;  // every lock it claims (a set: each); empty: no lock name
    std::string pod_key;                // claim mode
    std::optional<LabelSelector> selector;
    Phase phase = Phase::kNone;
    Priority priority = Priority::kForeground;
    bool being_deleted = false;
    // Indexed the same way (locks, pod, selector, priority): only the phase and deletion may differ.
    bool indexed_as(const IndexedLease& other) const {
      return lock_ids == other.lock_ids && pod_key == other.pod_key && selector == other.selector &&
             priority == other.priority;
    }
  };
  // What the index keeps of `lease`.
  static IndexedLease indexed(const LeaseRecord& lease);
  void remove(const std::string& lease_key);
  void add(const std::string& lease_key, const LeaseRecord& lease);
  // Counting a Lease by phase and priority, and among the unserved and the held.
  void uncount(const std::string& lease_key, const IndexedLease& claim);
  void count(const std::string& lease_key, const LeaseRecord& lease);
  // A claim's arrival is kept while it waits, also once its status records it (queuedAt): a
  // reconcile that read the Lease just before the watch brought that status, and asks for the
  // arrival just after, still ranks the claim where it came instead of at its creation second.
  void forget_arrival_once_served(const LeaseRecord& lease);

  mutable std::mutex mutex_;
  // Hashed where nothing walks the keys in order: at 100,000 Leases every event looks up
  // several of these, and a tree of strings costs a cache miss per level.
  std::unordered_map<std::string, IndexedLease> leases_;                    // by lease key
  std::unordered_map<std::string, std::set<std::string>> by_lock_;          // lock id -> lease keys
  std::unordered_map<std::string, std::map<std::string, int>> by_pod_;      // pod key -> lock id -> claims
  std::unordered_map<std::string, std::set<std::string>> elections_by_ns_;  // ns -> lease keys
  std::unordered_map<std::string, std::string> holder_of_;                  // lock id -> pod key
  std::unordered_map<std::string, std::set<std::string>> held_by_;          // pod key -> lock ids
  std::map<std::pair<Phase, Priority>, int> counts_;                        // Leases, only counts above 0
  std::unordered_set<std::string> unserved_;  // lease keys, see unserved_claims()
  std::unordered_map<std::string, std::unordered_set<std::string>> held_;  // ns -> lease keys, see held_in()
  std::unordered_map<std::string, WallTime> arrivals_;                     // by Lease UID, see arrival_of()
  WallTime last_arrival_{};
};

}  // namespace eslease::controller
