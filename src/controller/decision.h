// The heart of the controller: what should happen to one lock, as a pure function of the
// world (its claims, the pods involved, its lock document and what this controller
// remembers about that document) and the time. No I/O: the reconciler gathers the world,
// carries the decision out (at most one conditional Elasticsearch write per step) and
// decides again on the result, so every rule below is tested table-driven on a fake clock.
//
// Rules (the design's "Claims and phases" and "Liveness"):
// - A live holder keeps its lock; a holder is never pre-empted.
// - The next claim is the first live one by priority (Foreground first), then by when it
//   started waiting (creation, or the moment it last lost the lock), then by age and name.
// - A confirmed-dead holder (pod gone, replaced, finished) is handed over in one write; a
//   presumed-dead one (unready past its grace) is revoked and handed over only once its
//   grant has expired on our clock, unless its claim is deleted or its pod then dies.
// - A document this controller did not grant (another process, another replica before a
//   restart) is respected until it expires on our clock.
// - With liveness takeover off, a dead holder's grant is simply no longer renewed and is
//   handed over when it expires (reason Expired), as TTL-based locks behave.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

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
  // its TTL.
  MonoTime expires_at{};
  // We granted or adopted it and keep renewing it for its claim.
  bool active = false;
  // We stopped renewing it (reason: PodNotReady, RenewalFailed, Expired); final for this grant.
  std::string revoked_reason;
  // The Lease the document names, when it exists (same UID) but no longer claims this lock
  // (its lockName changed): its grant is ours to release.
  bool owner_moved = false;
};

// A grant the previous step of this reconcile made, so statuses can say how it came about.
struct RecentGrant {
  std::string lease;
  std::string takeover_reason;  // empty: a free lock was acquired
  std::string from_pod;
  WallTime time{};
};

struct LockWorld {
  std::string ns;
  std::string lock_name;
  std::vector<LeaseRecord> claims;       // every Lease of the namespace naming this lock
  std::map<std::string, PodState> pods;  // by name: every pod a claim names or selects, and the holder
  // False when the document could not be read (Elasticsearch unreachable): nothing is
  // decided and statuses only gain BackendAvailable=False.
  bool document_known = true;
  std::optional<DocumentView> document;  // nullopt: the lock is free
  // The document exists but cannot be read as a lock document: nothing is granted.
  std::string malformed_document;
  bool backend_available = true;
  // False after a write failed in this reconcile: only statuses are projected; the write is
  // retried with backoff.
  bool act = true;
  bool liveness_takeover = true;
  std::optional<RecentGrant> recent_grant;
  WallTime now{};
  MonoTime mono{};
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
  std::string takeover_reason;           // kTakeOver: why the previous grant ended
  std::string from_pod;                  // kTakeOver: the previous holder ("" when none)
  WallTime waiting_since{};              // for eslease_acquire_wait_seconds
  std::optional<MonoTime> dead_seen_at;  // for eslease_takeover_latency_seconds
};

struct PlannedEvent {
  std::string lease;
  bool warning = false;
  std::string reason;
  std::string message;
};

struct Decision {
  Action action = Action::kNone;
  GrantPlan grant;             // kAcquire, kTakeOver
  std::string action_reason;   // kRelease / kRevoke: why
  std::string action_message;  // for logs
  // Desired status of every claim not being deleted, by Lease name.
  std::map<std::string, LeaseStatus> statuses;
  std::vector<PlannedEvent> events;
  std::vector<std::string> add_finalizer;     // Lease names
  std::vector<std::string> remove_finalizer;  // Lease names being deleted that hold nothing
  std::optional<MonoTime> requeue_at;         // the next moment something changes on its own
};

Decision decide(const LockWorld& world);

// How long a claim has waited counts from here: its creation, or when it last lost the lock.
WallTime waiting_since(const LeaseRecord& lease);

}  // namespace eslease::controller
