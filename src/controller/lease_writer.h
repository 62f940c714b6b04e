// Writes what the reconciler decided to Lease objects: their status and the release
// finalizer. It remembers its own status writes until the informer delivers them
// (own_write.h), so a cache that has not caught up is not mistaken for the truth; from then
// on the cache is the truth again, so a status another writer put there (a second replica
// that also believes it leads, a hand edit) is seen and put right, at most once per
// kCorrectionPace so two replicas cannot overwrite each other as fast as the API answers.
//
// Every write is conditional on the resourceVersion it was decided on: the cached one, or,
// while the cache has not shown our own last write of the Lease, the version that write
// produced (a grant's status follows its finalizer in one reconcile). A writer whose view is
// behind (a second replica, a cache that skipped a version) gets a conflict and decides again
// on what is there, so it never writes a status over one it has not seen.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/result.h"
#include "controller/model.h"
#include "controller/own_write.h"
#include "kube/api.h"

namespace eslease::controller {

// What a Kubernetes write the reconcile asked for came to, when it did not fail. A write left
// for later is not a failure: the reconcile runs again shortly and writes whatever is still
// not right.
enum class WriteOutcome {
  kSent,
  kSkipped,   // nothing written: already so, or the object is gone
  kPaced,     // a correction of what someone else wrote, waiting for its pace (retry_at says when)
  kDeferred,  // a write that can wait, not sent while the client is busy (kube::Api::patch_unless_busy)
  kConflict,  // the Lease changed since the version decided on: decided again once the cache shows it
};

// Whether writing `desired` over `now` grants the lock (Held with a new token).
bool grants_the_lock(const LeaseStatus& now, const LeaseStatus& desired);

// How a status write ranks among the controller's Kubernetes writes (kube::CallOptions).
enum class Urgency {
  kCanWait,   // queue positions, conditions, and the status of a holder confirmed dead (its
              // pod gone or finished: it reads nothing, so it is told after every successor)
  kUrgent,    // a grant of a free lock
  kHandOver,  // a takeover's grant, or taking the lock from a holder that may still run
};
Urgency status_write_urgency(const LeaseStatus& now, const LeaseStatus& desired, bool holder_confirmed_dead);

class LeaseWriter {
 public:
  static constexpr Millis kCorrectionPace{1000};

  explicit LeaseWriter(kube::Api& api) : api_(api) {}

  // Replaces `lease`'s status by the one we last wrote while the cache has not caught up.
  // Call it on a copy taken under the cache's lock (ClusterView::read_lease): seen() may end
  // the memory as soon as the cache shows our write.
  void overlay(LeaseRecord& lease, MonoTime now) const;

  // Writes `desired` when it differs from `lease.status`, ranked by `urgency`
  // (status_write_urgency): one that can wait is deferred while the client is busy, so
  // grants and revocations go first. When the status there is someone else's and we put it
  // right less than kCorrectionPace ago, the write waits (kPaced): `retry_at` is moved to
  // when it may go. A Lease that is gone is not an error.
  Result<WriteOutcome> write_status(const LeaseRecord& lease, const LeaseStatus& desired, Urgency urgency,
                                    MonoTime now, std::optional<MonoTime>& retry_at);
  // Adds or removes the eslease.io/release finalizer, conditional on the cached
  // resourceVersion, so another writer's finalizer is never lost (kConflict: decided again on
  // the newer version). It can wait: deferred while the client is busy.
  Result<WriteOutcome> write_finalizer(const LeaseRecord& lease, bool present);

  // The Lease's cached status was written by someone else (another replica, a hand edit), not
  // by our last write of it.
  bool written_by_another(const LeaseRecord& lease) const;

  // The informer delivered `version` of the Lease `uid`, its cache showing it: once that is
  // the version our write produced, our memory of that write is dropped.
  void seen(const std::string& uid, const std::string& version);
  // The Lease left the cache.
  void forget(const std::string& uid);

 private:
  struct Written {
    LeaseStatus status;
    OwnWriteMark mark;
  };
  // False when the write must wait for the correction pace; `correcting` says whether it
  // would overwrite someone else's status (the pace starts when such a write is sent).
  bool may_write(const LeaseRecord& lease, MonoTime now, std::optional<MonoTime>& retry_at, bool& correcting);
  // The resourceVersion a write to `lease` is conditional on. Needs mutex_.
  std::string precondition(const LeaseRecord& lease) const;
  bool written_by_another_locked(const LeaseRecord& lease) const;
  // Records our write of `lease` that produced `version`; `status_ours` says whether the
  // status at that version is ours. Needs mutex_.
  void wrote(const LeaseRecord& lease, const std::string& version, bool status_ours);

  kube::Api& api_;
  mutable std::mutex mutex_;
  // By Lease UID: our last status write while the cache has not shown it.
  mutable std::unordered_map<std::string, Written> pending_;
  // By Lease UID: our last write (status or finalizer): the version it was decided on and the
  // one it produced; and when we last overwrote a status someone else wrote.
  struct LastWrite {
    std::string base;     // the cached resourceVersion it was decided on
    std::string version;  // the resourceVersion it produced
    bool status_ours = true;
  };
  std::unordered_map<std::string, LastWrite> last_write_;
  std::unordered_map<std::string, MonoTime> corrected_at_;
};

// The resourceVersion an API write answered with (empty if the answer has none).
std::string resource_version_of(const nlohmann::json& object);

}  // namespace eslease::controller
