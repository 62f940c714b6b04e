// Sessions (the design's "Sessions"): one heartbeat per namespace renews every grant of that
// namespace, so renewing costs the Kubernetes API one write per namespace per tick, not one
// per held lock.
//
// A tick of namespace N, every quarter of the shortest lease duration held there
// (api::renewal_interval):
//   1. R = now. Every grant of N this controller renews is renewed in Elasticsearch to R
//      (batched through _bulk, each document's expiresAt = R + its TTL).
//   2. Every grant N's Leases show Held must then be covered: its document renewed to R (or
//      written after R) by us. A grant whose renewal failed, or that another replica renewed
//      meanwhile, is retried a little later, and the session is not written meanwhile; one
//      still not covered when only a third of the published validity is left is revoked and
//      listed, so the namespace's other holders keep theirs. A Lease showing a grant that is
//      not ours (a stale status, a lost grant) is listed at once; one whose grant is not yet
//      adopted (a new leader) is waited for, on the same terms.
//   3. The session object's renewTime = R is written, conditional on the version read, with
//      the listed grants in its eslease.io/revoked annotation. A conflict re-reads and merges.
// A session therefore never publishes validity that the documents do not cover.
//
// Revocation (`revoke`) lists a grant in the annotation before its Lease status changes; the
// grant is handed over no earlier than the latest renewTime the session showed before that
// write plus its lease duration, timed on our clock from when that renewal was sent (or, for
// another writer's, first seen). A listed grant stays listed until a minute past that time.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "api/session.h"
#include "common/clock.h"
#include "common/result.h"
#include "controller/cluster_view.h"
#include "controller/lock_table.h"
#include "controller/observer.h"
#include "kube/api.h"
#include "lock/lock_store.h"

namespace eslease::controller {

struct SessionOptions {
  std::string identity;  // written as the session's holderIdentity
  // After a renewal that could not be confirmed, or a grant not yet adopted.
  Millis retry_after{1000};
  // A listed grant stays in the annotation this long past its hand-over time.
  Millis keep_listed{std::chrono::minutes(1)};
  std::function<void(const std::string& lock_id)> enqueue;  // a lock needs a reconcile
  std::function<void(bool available)> backend_answered;     // Elasticsearch reachable or not
  // Documents a tick renews at a time (the store's _bulk size): only these wait for it, so a
  // reconcile of a held lock waits for one _bulk, not for the whole namespace's renewal.
  std::size_t renewal_batch = lock::StoreOptions{}.max_bulk_items;
};

class SessionKeeper {
 public:
  SessionKeeper(LockTable& table, lock::LockStore& store, kube::Api& api, const ClusterView& cluster,
                Observer& observer, Clock& clock, SessionOptions options);
  ~SessionKeeper();

  // Ticks namespaces as they come due until `stop`.
  void run(std::stop_token stop);
  // Ticks every namespace that is due now; returns how many were ticked. Exposed for tests.
  int tick_due();
  // `ns` holds a grant of `lease_duration` the session may not cover yet (a new or adopted
  // grant). A grant is usable at once (the design's "Fit for use"): when the validity the
  // session would publish for it leaves less than three quarters of its duration, the
  // namespace ticks now, one tick for every grant of that moment; otherwise its ticks come at
  // least every quarter of that duration from now on.
  void wake(const std::string& ns, Millis lease_duration);

  // Revokes `grant` (of a Lease with `lease_duration`) in its namespace's session, before its
  // Lease status changes. Returns when the validity published to its holder ends, on our
  // clock, or nullopt when the namespace has no session (nothing was ever published).
  Result<std::optional<MonoTime>> revoke(const std::string& ns, const api::GrantRef& grant,
                                         Millis lease_duration);

  // One tick of `ns`, whether due or not. Exposed for tests.
  void tick(const std::string& ns);
  // Namespaces whose state is kept: those that hold, list or have a session. Exposed for tests.
  std::size_t namespaces() const;

 private:
  struct Namespace;
  struct Coverage;
  // The state of `ns`, its mutex held (one session write or read at a time).
  std::pair<std::shared_ptr<Namespace>, std::unique_lock<std::mutex>> lock_state(const std::string& ns);
  // Drops the state of a namespace that holds nothing, lists nothing and has no session.
  void forget_if_idle(const std::string& ns);
  Status load(Namespace& n);
  // A renewal to publish: renewTime `wall`, read at the monotonic instant `mono`.
  struct Renewal {
    WallTime wall;
    MonoTime mono;
  };
  // Writes the session: `renewal` (unset: renewTime as it is) and `add` listed (with their
  // hand-over times). Merges with another writer's version on a conflict.
  Status write(Namespace& n, std::optional<Renewal> renewal, const std::map<api::GrantRef, Millis>& add);
  // Plans a tick of `ns` at `at` unless an earlier one is planned. Under mutex_.
  void schedule(const std::string& ns, MonoTime at);
  // Renews every grant held in `ns`, a batch at a time.
  void renew_held(const std::string& ns, WallTime renewal, Coverage& coverage);
  // Renews the grants of one batch, whole: a grant with documents outside the batch is left
  // to a later one, its documents added to `spread` (when given; else it is judged here).
  void renew_documents(const std::string& ns, WallTime renewal, std::vector<LockTable::Handle>& held,
                       Coverage& coverage, std::set<std::string>* spread);
  // One document's answer in the tick's _bulk, counted into the coverage.
  void record_renewal(LockEntry& entry, lock::BatchRenewal& result, const api::GrantRef& grant,
                      MonoTime after, Coverage& coverage);
  void check_published(const std::string& ns, WallTime renewal, Coverage& coverage);
  // Under the namespace's mutex: lists what must be listed and, when every grant shown is
  // covered (or the wait is over), renews. Fills `revoked` (lock id -> grant listed, its
  // hand-over time); returns the next tick (MonoTime::max(): none, nothing is held).
  MonoTime write_session(const std::string& ns, WallTime renewal, MonoTime started, Coverage& coverage,
                         std::map<std::string, std::pair<api::GrantRef, std::optional<MonoTime>>>& revoked);
  // The grants this tick renews or waits for that the session as last read lists (another
  // writer's listing, a split brain's): lock id by grant.
  static std::map<api::GrantRef, std::string> listed_ours(const Namespace& n, const Coverage& coverage);
  // When the validity published to the holder of `grant`, listed in `n`, ends.
  static std::optional<MonoTime> hand_over_of(const Namespace& n, const api::GrantRef& grant,
                                              Millis lease_duration);
  // Deletes the session of a namespace that holds and lists nothing; true when it is gone.
  bool retire(Namespace& n);

  LockTable& table_;
  lock::LockStore& store_;
  kube::Api& api_;
  const ClusterView& cluster_;
  Observer& observer_;
  Clock& clock_;
  SessionOptions options_;

  mutable std::mutex mutex_;  // namespaces_ and due_
  std::map<std::string, std::shared_ptr<Namespace>> namespaces_;
  std::map<std::string, MonoTime> due_;  // by namespace: its next tick
  // By namespace, on our clock: when the renewal its session last published was picked (R),
  // and when the tick under way picked its own (a grant made since is covered by it).
  std::map<std::string, MonoTime> renewal_picked_;
  std::map<std::string, MonoTime> ticking_since_;
  std::condition_variable_any cv_;
  bool woken_ = false;
};

}  // namespace eslease::controller
