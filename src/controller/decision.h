// The heart of the controller: what should happen to some locks, as a pure function of the
// world (their claims, the pods involved, the grants on their slot documents and what this
// controller remembers about those) and the time. No I/O: the reconciler gathers the world,
// carries the decision out (at most one conditional Elasticsearch write per step) and
// decides again on the result, so every rule is tested table-driven on a fake clock.
//
// Every lock is decided the same way, whatever its shape (the design's "Lock shapes"): a lock
// of capacity N has N slots, a single lock is a lock of capacity 1 with one slot, and a lock
// set is decided together with every lock sets link to it. A decision has four parts, each in
// its own file:
// - claim_queue: which claims are valid, which wait, and in which order they are served;
// - grant_rules: what happens to each grant on the locks (keep, adopt, revoke, end now),
//   as an ordered list of named rules (the design's "Claims and phases" and "Liveness");
// - slot_allocation: who gets the slots that are free, or whose grant ends now: the one
//   queueing rule for every shape, election fail-over included;
// - status_projection: the status every claim shows, one function per phase, with the events
//   that go with a change.
// One action per step, in this order: a grant's own action (revoke, adopt), a grant to the
// next claim served (written over the documents of grants that end), then the release of an
// ended grant nobody takes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/lease_api.h"
#include "common/clock.h"
#include "controller/liveness.h"
#include "controller/model.h"
#include "lock/document.h"

namespace eslease::controller {

// One grant on the world's locks: one slot document, or several written together (a set, an
// Exclusive claim on capacity N), judged as one.
struct GrantView {
  // Its first document, with the grant's token (the largest of its documents').
  lock::LockState state;
  std::vector<SlotRef> slots;  // the documents of it on the world's locks
  // When it counts as expired on our monotonic clock unless renewed (the latest of its
  // documents'): our own write's send time plus its TTL, or for anyone else's write the time
  // we first saw that version plus its TTL (lock::sight).
  MonoTime expires_at{};
  // We granted or adopted it and renew every one of its documents for its claim.
  bool renewing = false;
  // We stopped renewing it (PodNotReady, RenewalFailed, Expired, Released); final for this grant.
  std::optional<api::Reason> revoked;
  // This controller saw the pod the grant names (its UID) go: only then is a holder missing
  // from the cache confirmed dead (PodTracker::saw_gone).
  bool holder_seen_gone = false;
  // The Lease the grant names, when it exists (same UID) but no longer claims these locks
  // (its spec changed): its grant is ours to end.
  bool owner_moved = false;
  // We renew part of it while the rest is not ours to renew any more (another writer replaced
  // a document, a document went, or only part of it was revoked): the grant is over.
  bool broken = false;
};

// A grant an earlier step of this reconcile made, so statuses can say how it came about.
struct RecentGrant {
  std::string lease;
  std::optional<api::Reason> takeover_reason;  // nullopt: free slots were acquired
  std::string from_pod;
  WallTime time{};
};

// A lock of the world and its capacity: what its oldest live claim states (1 without one).
// Worked out once per reconcile (claim_queue.h: lock_shapes).
struct LockShape {
  std::string name;
  std::int64_t capacity = 1;
  std::string stated_by;  // the Lease the capacity comes from ("" without one)
};

struct LockWorld {
  std::string ns;
  // Every lock decided together: the lock reconciled first, then those lock sets link to it.
  std::vector<LockShape> locks;
  // Every Lease of the namespace naming any of the locks.
  std::vector<LeaseRecord> claims;
  std::map<std::string, PodState> pods;  // by name: every pod a claim names or selects, and the holders
  // Every grant on the locks' slot documents.
  std::vector<GrantView> grants;
  // False when the documents could not be read (Elasticsearch unreachable): nothing is
  // decided and statuses only gain BackendAvailable=False.
  bool documents_known = true;
  // A document exists that cannot be read as a lock document: nothing is granted.
  std::string malformed_document;
  bool backend_available = true;
  // Set when Elasticsearch answers but the lock store refused a grant because it cannot prove
  // the next fencing token larger than every token issued before (lock/token_guard.h): why.
  std::string grants_refused;
  // False after a write failed in this reconcile: only statuses are projected; the write is
  // retried with backoff.
  bool act = true;
  bool liveness_takeover = true;
  // The grants the earlier steps of this reconcile made, in order: a hand-over of several
  // slots makes one per successor.
  std::vector<RecentGrant> recent_grants;
  WallTime now{};
  MonoTime mono{};

  // The pod named `name` (nullptr: none is known).
  const PodState* pod(const std::string& name) const {
    auto it = pods.find(name);
    return it == pods.end() ? nullptr : &it->second;
  }
  // The shape of lock `name` (nullptr: not one of the world's).
  const LockShape* lock(const std::string& name) const;
  // The capacity of lock `name` (1 when it is not one of the world's).
  std::int64_t capacity_of(const std::string& name) const;
  // The grant holding slot `ref`, if any.
  const GrantView* grant_on(const SlotRef& ref) const;
  // The grant the claim `lease` has on the locks (renewed or not), if any.
  const GrantView* grant_of(const LeaseRecord& lease) const;
};

enum class Action {
  kNone,
  kGrant,    // write the grant `grant` (free slots created, ended grants written over)
  kRelease,  // delete the documents of grant `subject` (its claim is gone, nobody takes them)
  kRevoke,   // stop renewing grant `subject` (no write); hand over once it expires
  kAdopt,    // renew grant `subject` on its claim's behalf (a new leader, a restart)
};
const char* to_string(Action action);

struct GrantPlan {
  std::string lease;  // Lease name in the locks' namespace
  std::string lease_uid;
  std::string pod;  // pod name
  std::string pod_uid;
  std::string node;
  Priority priority = Priority::kForeground;
  Millis ttl{30000};
  WallTime waiting_since{};  // for eslease_acquire_wait_seconds
  // The slots granted, in the order of the claim's locks, each lock's from the lowest: a free
  // slot is created, one whose grant ended is written over at the version decided on.
  std::vector<SlotRef> slots;
  lock::Access access = lock::Access::kExclusive;
  // Written over a grant that ended because its holder is gone or it expired (not one its
  // holder let go of): why, and from which pod. nullopt: free slots were acquired.
  std::optional<api::Reason> takeover_reason;
  std::string from_pod;
  std::optional<MonoTime> dead_seen_at;  // for eslease_takeover_latency_seconds
  bool takes_over() const { return takeover_reason.has_value(); }
};

struct PlannedEvent {
  std::string lease;
  bool warning = false;
  api::Reason reason = api::Reason::kWaiting;
  std::string message;
};

struct Decision {
  Action action = Action::kNone;
  const char* rule = "";  // the rule that decided (grant_rules.h, or serve_the_next_claims)
  GrantPlan grant;        // kGrant
  // kRelease, kRevoke, kAdopt: the slots of the grant concerned, and why.
  std::vector<SlotRef> subject;
  std::optional<api::Reason> action_reason;
  std::string action_message;  // for logs
  // Desired status of every claim not being deleted, by Lease name. Projected only when
  // there is no action: after an action the world changes and is decided on again.
  std::map<std::string, LeaseStatus> statuses;
  std::vector<PlannedEvent> events;
  std::vector<std::string> add_finalizer;     // Lease names
  std::vector<std::string> remove_finalizer;  // Lease names being deleted that hold nothing
  std::optional<MonoTime> requeue_at;         // the next moment something changes on its own
};

Decision decide(const LockWorld& world);

// How the pod a claim's status names as its holder is, judged with no readiness grace and on
// the cache's word, for the status it shows; kAlive when the status names no holder.
HolderHealth shown_holder_health(const LockWorld& world, const LeaseRecord& lease);

// How long a claim has waited counts from here: its creation, or when it last lost the lock.
WallTime waiting_since(const LeaseRecord& lease);

// Whether a grant on slots `a` and one on slots `b` share a slot: the later is written over the other.
bool share_a_slot(const std::vector<SlotRef>& a, const std::vector<SlotRef>& b);

}  // namespace eslease::controller
