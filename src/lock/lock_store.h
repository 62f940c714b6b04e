// The lock protocol: every decision about a lock is ONE conditional write to its
// document, so two writers that both believe they may grant (a leader hand-over, a
// partition, two CLI processes) cannot both succeed: the loser's write is refused.
//
//   acquire   PUT _create             applies only when no document exists
//   renew     PUT _doc ?if_seq_no=     applies only over the holder's own version
//   release   DELETE ?if_seq_no=       removes only the holder's own grant (ReleaseScope)
//   take_over PUT _doc ?if_seq_no=     replaces exactly the version judged dead/expired
//   renew_all POST _bulk, per-item if_seq_no, <= max_bulk_items per request
//
// A write whose answer is lost (timeout, dropped connection, 502/504) or that meets a
// conflict is resolved by a realtime GET compared with what was written (leaseUID +
// acquiredAt identify the grant; writer and renewedAt, unique per process and write, the
// exact write): it is never assumed to have
// failed or succeeded. When the GET fails too, the call returns an Error and the holder's
// deadline (expiry.h) decides: a lock that cannot be confirmed in time is given up.
//
// Fencing tokens never go backwards, also across a lock index that was re-created or
// restored (token_guard.h): a grant is written only once the index's token epoch is
// checked, and kept only when its token is larger than every token known before it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/lease_api.h"
#include "common/clock.h"
#include "common/result.h"
#include "es/document_api.h"
#include "lock/document.h"
#include "lock/names.h"
#include "lock/token_guard.h"

namespace eslease::lock {

inline constexpr const char* kDefaultIndex = "eslease-locks";

// A lock's TTL when nobody says otherwise (the tool's --ttl, a Lease's leaseDurationSeconds).
inline constexpr Millis kDefaultTtl{30000};

// Who a grant goes to, written into the document by acquire and take_over.
struct Grantee {
  std::string lease;      // "<namespace>/<Lease>"; empty outside Kubernetes
  std::string lease_uid;  // the Lease's UID, or a unique id per acquire (required): recognises our own writes
  std::string holder;     // required
  std::string holder_uid;
  std::string node;
  std::string priority = api::to_string(api::Priority::kForeground);
  Millis ttl = kDefaultTtl;
};

// A lock we hold: its document and version, and the local moment our hold ends unless
// renewed (holder_deadline of the write that confirmed it).
struct Grant {
  LockState state;
  MonoTime valid_until{};
};

struct AcquireOutcome {
  std::optional<Grant> grant;        // set: the lock is ours
  std::optional<LockState> current;  // not ours: the document that holds it (nullopt: none now)
  MonoTime observed_at{};            // when `current` was read: its answer time for `sight`
};

struct RenewOutcome {
  std::optional<Grant> grant;        // set: still ours (renewed, or at least not lost)
  bool renewed = false;              // the grant's deadline was extended by this call
  std::optional<LockState> current;  // lost: who holds it now (nullopt: nobody)
};

enum class ReleaseOutcome {
  kReleased,  // our grant is gone (deleted now, or already)
  kNotHeld,   // nothing was deleted: the document belongs to another grant, or (kThisVersion)
              // has moved on from the version given
};

// Which versions of a grant `release` may delete.
enum class ReleaseScope {
  // Any version of the grant: its holder lets go, including renewals whose answers it never
  // saw and renewals made by another process on its behalf.
  kGrant,
  // Only the version given. For a grant handed over because it expired: a later version was
  // written with a later expiresAt, which its holder may have been shown and must be honoured.
  kThisVersion,
};

struct HeldLock {
  LockKey key;
  Grant grant;
  Millis ttl{0};  // 0 = keep the document's ttlMillis
  // The renewal's renewedAt, expiresAt being this plus the TTL: a session renews every grant
  // of a namespace to one moment. Unset: now. Never later than now (see write_time).
  std::optional<WallTime> renewed_at;
};

struct BatchRenewal {
  LockKey key;
  enum class Result { kRenewed, kLost, kFailed } result = Result::kFailed;
  std::optional<Grant> grant;  // kRenewed: the new grant; kFailed: the old one (unconfirmed)
  std::optional<Error> error;  // kFailed: why
};

// Grants of several documents (the design's "Lock shapes"): slots of a semaphore, every slot
// of a lock for an Exclusive claim on capacity N, the locks of a set. One _bulk writes them
// all; Elasticsearch applies its items one by one, so a grant that was only partly applied
// (an item refused, an answer lost) is undone by conditional deletes of exactly what it
// wrote, and nobody is told it holds part of one.
inline constexpr std::size_t kMaxGrantDocuments = 1000;

// One document a grant writes: slot `slot` of `key`, created when `replaces` is unset, else
// written over exactly that version (one judged expired, or whose holder is gone).
struct SlotWrite {
  LockKey key;
  std::int64_t slot = 0;
  std::optional<LockState> replaces;
};

struct GrantRequest {
  std::vector<SlotWrite> writes;  // 1..kMaxGrantDocuments distinct documents
  Grantee grantee;
  std::int64_t capacity = 1;  // of every lock of the grant
  Access access = Access::kExclusive;
};

// A grant we hold. Every document carries the grant's token (the largest (primary term,
// seq_no) its writes returned, in its epoch), which its first renewal writes into each.
struct HeldGrant {
  std::string id;              // the documents' `grant`; empty for a grant of one document
  std::vector<HeldLock> docs;  // in the request's order; HeldLock::ttl is unused
  std::int64_t token = 0;
  MonoTime valid_until{};  // the earliest deadline of its documents
};

struct GrantOutcome {
  std::optional<HeldGrant> grant;  // set: every document is ours
  // Not granted: each write's document as read after the attempt (nullopt: none), in the
  // request's order, and when it was read (for `sight`).
  std::vector<std::optional<LockState>> current;
  MonoTime observed_at{};
};

struct GrantRenewal {
  enum class Result { kRenewed, kLost, kFailed } result = Result::kFailed;
  // kRenewed: the renewed grant. kFailed: each document at its newest confirmed version, the
  // deadline the earliest unconfirmed one's.
  std::optional<HeldGrant> grant;
  std::string why;             // kLost: which document went, and to whom
  std::optional<Error> error;  // kFailed
};

class LockStore {
 public:
  virtual ~LockStore() = default;

  // Creates the index with its strict mapping when missing; checks an existing one.
  virtual Status prepare() = 0;
  // Where the grants made before this store's are learnt (the controller: what its Leases
  // show); the index's fencing tokens are checked again at once. An error leaves grants
  // refused until a later check, made before a grant, succeeds.
  virtual Status check_tokens(const IssuedBeforeSource& /*issued_before*/) { return {}; }
  // Why grants are refused now (fencing tokens not proven larger than those issued before),
  // if they are.
  virtual std::optional<std::string> grants_refused() const { return std::nullopt; }
  // Realtime read of one lock (nullopt: free). Decisions use this.
  virtual Result<std::optional<LockState>> get(const LockKey& key) = 0;
  // Every lock, from search: eventually consistent (only refreshed documents, about one
  // second behind). For display; never for decisions.
  virtual Result<std::vector<LockState>> list() = 0;

  virtual Result<AcquireOutcome> acquire(const LockKey& key, const Grantee& grantee) = 0;
  // Replaces `dead` (a version judged expired or whose holder is gone) with a grant to
  // `grantee`, carrying transitions over. One write; a conflict means someone else moved.
  virtual Result<AcquireOutcome> take_over(const LockKey& key, const LockState& dead,
                                           const Grantee& grantee) = 0;
  // ttl 0 keeps the document's ttlMillis.
  virtual Result<RenewOutcome> renew(const LockKey& key, const Grant& held, Millis ttl) = 0;
  virtual Result<ReleaseOutcome> release(const LockKey& key, const Grant& held, ReleaseScope scope) = 0;
  // Renews many held locks through _bulk, one outcome per lock, in the given order.
  virtual std::vector<BatchRenewal> renew_all(const std::vector<HeldLock>& held) = 0;

  // Start-up batches: many realtime reads, and grants of many free locks, one outcome per
  // key in the given order. A malformed document is that key's kProtocol error.
  virtual Result<std::vector<Result<std::optional<LockState>>>> get_many(const std::vector<LockKey>& keys) {
    std::vector<Result<std::optional<LockState>>> out;
    out.reserve(keys.size());
    for (const LockKey& key : keys) out.push_back(get(key));
    return out;
  }
  // Realtime reads of slots [0, capacity) of each lock: out[i][k] is slot k of keys[i]
  // (nullopt: free). One _mget.
  virtual Result<std::vector<std::vector<std::optional<LockState>>>> read_slots(
      const std::vector<LockKey>& /*keys*/, std::int64_t /*capacity*/) {
    return make_error(ErrorCode::kInternal, "this lock store has no lock shapes");
  }
  // One _bulk of every write of the request: all granted, or none (a partial grant is undone).
  virtual Result<GrantOutcome> grant(const GrantRequest& /*request*/) {
    return make_error(ErrorCode::kInternal, "this lock store has no lock shapes");
  }
  // Releases every document of the grant still ours, in one _bulk of conditional deletes.
  virtual Result<ReleaseOutcome> release_grant(const HeldGrant& /*held*/) {
    return make_error(ErrorCode::kInternal, "this lock store has no lock shapes");
  }

  virtual std::vector<Result<AcquireOutcome>> acquire_many(
      const std::vector<std::pair<LockKey, Grantee>>& grantees) {
    std::vector<Result<AcquireOutcome>> out;
    out.reserve(grantees.size());
    for (const auto& [key, grantee] : grantees) out.push_back(acquire(key, grantee));
    return out;
  }
};

// Renews every document of `held` in one renew_all: lost when any document is lost (the
// others are then released), failed when any renewal is unconfirmed. ttl 0 keeps each
// document's ttlMillis.
GrantRenewal renew_grant(LockStore& store, const HeldGrant& held, Millis ttl);

struct StoreOptions {
  std::string index = kDefaultIndex;
  std::size_t max_bulk_items = 1000;
  // This process's identity, written as `writer` by every write. It must differ between
  // processes: with the per-process unique acquiredAt/renewedAt it tells our own writes
  // from everyone else's. Empty = a random one.
  std::string writer;
  // Told the epoch grants use and every refused grant (token_guard.h), for metrics.
  std::function<void(const FencingReport&)> on_fencing;
  // The caller will report what was issued before (check_tokens): prepare() then leaves the
  // fencing-token check to it. Otherwise prepare() checks with what the store knows.
  bool awaits_token_history = false;
};

// `api` and `clock` must outlive the store. Fails on an invalid index name.
Result<std::unique_ptr<LockStore>> make_es_lock_store(es::DocumentApi& api, Clock& clock,
                                                      StoreOptions options = {});
// The store owns `api`.
Result<std::unique_ptr<LockStore>> make_es_lock_store(std::unique_ptr<es::DocumentApi> api, Clock& clock,
                                                      StoreOptions options = {});

}  // namespace eslease::lock
