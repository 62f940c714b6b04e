// The heart of the controller: what should happen to one lock, as a pure function of the
// world (its claims, the pods involved, its lock document and what this controller
// remembers about that document) and the time. No I/O: the reconciler gathers the world,
// carries the decision out (at most one conditional Elasticsearch write per step) and
// decides again on the result, so every rule is tested table-driven on a fake clock.
//
// A decision has three parts, each in its own file:
// - claim_queue: which claims wait, in which order, and who is served next;
// - grant_rules: the action on the lock document, as an ordered list of named rules (the
//   design's "Claims and phases" and "Liveness"); the first rule that applies decides;
// - status_projection: the status every claim shows, one function per phase, with the
//   events that go with a change.
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

// What the controller knows about the lock document.
struct DocumentView {
  lock::LockState state;
  // When it counts as expired on our monotonic clock unless renewed: our own write's send
  // time plus its TTL, or for anyone else's write the time we first saw that version plus
  // its TTL (lock::sight).
  MonoTime expires_at{};
  // We granted or adopted it and keep renewing it for its claim.
  bool renewing = false;
  // We stopped renewing it (PodNotReady, RenewalFailed, Expired, Released); final for this grant.
  std::optional<api::Reason> revoked;
  // This controller saw the pod the document names (its UID) go: only then is a holder missing
  // from the cache confirmed dead (PodTracker::saw_gone).
  bool holder_seen_gone = false;
  // The Lease the document names, when it exists (same UID) but no longer claims this lock
  // (its lockName changed): its grant is ours to end.
  bool owner_moved = false;
  // A shaped world: the slots this grant holds (one document each), on one lock or on every
  // lock of a set. `state` is the document of the first, with the grant's token (the largest
  // of its documents'), and `expires_at` the latest of theirs.
  std::vector<SlotRef> slots;
  // Part of a grant of several documents is no longer ours (another writer replaced one) while
  // we still renew the rest: the grant is over, and revoked.
  bool broken = false;
};

// A grant the previous step of this reconcile made, so statuses can say how it came about.
struct RecentGrant {
  std::string lease;
  std::optional<api::Reason> takeover_reason;  // nullopt: a free lock was acquired
  std::string from_pod;
  WallTime time{};
};

// A lock decided in a shaped world, and its capacity (from its oldest live claim).
struct LockShape {
  std::string name;
  std::int64_t capacity = 1;
};

struct LockWorld {
  std::string ns;
  std::string lock_name;  // the lock reconciled; in a shaped world of several locks, the first
  // Every Lease of the namespace naming this lock; in a shaped world, any of its locks.
  std::vector<LeaseRecord> claims;
  std::map<std::string, PodState> pods;  // by name: every pod a claim names or selects, and the holder
  // False when the document could not be read (Elasticsearch unreachable): nothing is
  // decided and statuses only gain BackendAvailable=False.
  bool document_known = true;
  // The lock's capacity, from its oldest live claim (claim_queue.h: lock_capacity). Above 1
  // the lock has a slot document per holder, `grants` lists every grant on them, and
  // `document` is the one of them the decision looks at (decide_shaped).
  std::int64_t capacity = 1;
  // Decided slot by slot (decide_shaped): capacity above 1, slot documents of an earlier
  // capacity still on the lock, or a lock set among the claims.
  bool shaped = false;
  // A shaped world of several locks (lock sets link them): every lock decided together. Empty:
  // the one lock `lock_name` of `capacity` (shaped_locks).
  std::vector<LockShape> locks;
  std::vector<DocumentView> grants;
  std::optional<DocumentView> document;  // nullopt: the lock is free
  // The document exists but cannot be read as a lock document: nothing is granted.
  std::string malformed_document;
  bool backend_available = true;
  // Set when Elasticsearch answers but the lock store refused a grant because it cannot prove
  // the next fencing token larger than every token issued before (lock/token_guard.h): why.
  std::string grants_refused;
  // False after a write failed in this reconcile: only statuses are projected; the write is
  // retried with backoff.
  bool act = true;
  bool liveness_takeover = true;
  std::optional<RecentGrant> recent_grant;
  WallTime now{};
  MonoTime mono{};

  // The pod named `name` (nullptr: none is known).
  const PodState* pod(const std::string& name) const {
    auto it = pods.find(name);
    return it == pods.end() ? nullptr : &it->second;
  }
};

enum class Action {
  kNone,
  kAcquire,   // create the document for `grant` (the lock is free)
  kTakeOver,  // replace the document (a dead, expired or revoked grant) with `grant`
  kRelease,   // delete the document (its claim is gone or no live claim remains)
  kRevoke,    // stop renewing the document's grant (no write); hand over once it expires
  kAdopt,     // renew an existing grant on its claim's behalf (a new leader, a restart)
};
const char* to_string(Action action);

struct GrantPlan {
  std::string lease;  // Lease name in the lock's namespace
  std::string lease_uid;
  std::string pod;  // pod name
  std::string pod_uid;
  std::string node;
  Priority priority = Priority::kForeground;
  Millis ttl{30000};
  std::optional<api::Reason> takeover_reason;  // kTakeOver: why the previous grant ended
  std::string from_pod;                        // kTakeOver: the previous holder ("" when none)
  WallTime waiting_since{};                    // for eslease_acquire_wait_seconds
  std::optional<MonoTime> dead_seen_at;        // for eslease_takeover_latency_seconds
  // A shaped world: the slots granted (a free slot is created, one whose grant ended is
  // written over at the version decided on), and how the claim holds them.
  std::vector<SlotRef> slots;
  lock::Access access = lock::Access::kExclusive;
};

struct PlannedEvent {
  std::string lease;
  bool warning = false;
  api::Reason reason = api::Reason::kWaiting;
  std::string message;
};

struct Decision {
  Action action = Action::kNone;
  const char* rule = "";                     // the grant rule that decided (grant_rules.h)
  GrantPlan grant;                           // kAcquire, kTakeOver
  std::optional<api::Reason> action_reason;  // kRelease, kRevoke: why
  // A shaped world: the slots of the grant a kRelease, kRevoke or kAdopt concerns.
  std::vector<SlotRef> slots;
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

// The locks of a shaped world: `locks`, or the one lock `lock_name` of `capacity`.
std::vector<LockShape> shaped_locks(const LockWorld& world);
// The capacity of the world's lock `name` (1 when it is not one of them).
std::int64_t capacity_of(const LockWorld& world, const std::string& name);

// How the pod a claim's status names as its holder is, judged with no readiness grace and on
// the cache's word, for the status it shows; kAlive when the status names no holder.
HolderHealth shown_holder_health(const LockWorld& world, const LeaseRecord& lease);

// How long a claim has waited counts from here: its creation, or when it last lost the lock.
WallTime waiting_since(const LeaseRecord& lease);

}  // namespace eslease::controller
