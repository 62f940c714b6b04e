// The lock protocol: every decision about a lock is ONE conditional write of its documents,
// so two writers that both believe they may grant (a leader hand-over, a partition, two CLI
// processes) cannot both succeed: the loser's write is refused.
//
// A lock of capacity N has N slot documents (document.h); a grant holds one or several of
// them (a semaphore slot, every slot for an Exclusive claim, the locks of a set). The store
// speaks grants, whatever their shape:
//
//   read_slots  GET (one document) or _mget       realtime reads of the slots asked for
//   grant       PUT _create / PUT _doc?if_seq_no  one grant of one document
//               POST _bulk                        anything more: several documents, several
//                                                 grants (start-up), undone where partly applied
//   release     DELETE?if_seq_no / _bulk          only the grant's own documents (ReleaseScope)
//   renew_all   POST _bulk, per-item if_seq_no    every document renewed in one tick
//
// A write whose answer is lost (timeout, dropped connection, 502/504) or that meets a
// conflict is resolved by a realtime read compared with what was written (leaseUID +
// acquiredAt identify the grant; writer and renewedAt, unique per process and write, the
// exact write): it is never assumed to have failed or succeeded. When the read fails too,
// the call returns an Error and the holder's deadline (expiry.h) decides: a grant that
// cannot be confirmed in time is given up.
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

// The most documents one grant writes (an Exclusive claim on a lock of the largest capacity).
inline constexpr std::size_t kMaxGrantDocuments = 1000;

// Who a grant goes to, written into its documents.
struct Grantee {
  std::string lease;      // "<namespace>/<Lease>"; empty outside Kubernetes
  std::string lease_uid;  // the Lease's UID, or a unique id per acquire (required): recognises our own writes
  std::string holder;     // required
  std::string holder_uid;
  std::string node;
  std::string priority = api::to_string(api::Priority::kForeground);
  Millis ttl = kDefaultTtl;
};

// One lock document we hold: its version, and the local moment our hold of it ends unless
// renewed (holder_deadline of the write that confirmed it).
struct HeldDocument {
  LockKey key;
  LockState state;
  MonoTime valid_until{};
};

// A grant we hold: every document it wrote. Each carries the grant's token (the largest
// (primary term, seq_no) its writes returned, in its epoch), which its first renewal writes
// into each.
struct HeldGrant {
  std::string id;                  // the documents' `grant`; empty for a grant of one document
  std::vector<HeldDocument> docs;  // in the order they were asked for
  std::int64_t token = 0;
  MonoTime valid_until{};  // the earliest deadline of its documents
};

// Slots [0, slots) of one lock.
struct SlotRange {
  LockKey key;
  std::int64_t slots = 1;
};

// A realtime read of one document: nullopt when absent; kProtocol when it is not the lock
// document of its id (nothing is granted over it).
using DocumentRead = Result<std::optional<LockState>>;

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

struct GrantOutcome {
  std::optional<HeldGrant> grant;  // set: every document is ours
  // Not granted: each write's document as read after the attempt (nullopt: none), in the
  // request's order, and when it was read (for `sight`).
  std::vector<std::optional<LockState>> current;
  MonoTime observed_at{};
};

enum class ReleaseOutcome {
  kReleased,  // none of the grant's documents is left (deleted now, or already)
  kNotHeld,   // some are not deleted: they belong to another grant now, or (kThisVersion) have
              // moved on from the version given; the rest were deleted
};

// Which versions of a grant's documents `release` may delete.
enum class ReleaseScope {
  // Any version of the grant: its holder lets go, including renewals whose answers it never
  // saw and renewals made by another process on its behalf.
  kGrant,
  // Only the versions given. For a grant handed over because it expired: a later version was
  // written with a later expiresAt, which its holder may have been shown and must be honoured.
  kThisVersion,
};

// One document to renew in a batch.
struct Renewal {
  HeldDocument held;
  Millis ttl{0};  // 0 = keep the document's ttlMillis
  // The renewal's renewedAt, expiresAt being this plus the TTL: a session renews every grant
  // of a namespace to one moment. Unset: now. Never later than now.
  std::optional<WallTime> renewed_at;
};

// How a renewal of one document (BatchRenewal) or of a whole grant (GrantRenewal) ended.
enum class RenewalResult { kRenewed, kLost, kFailed };

struct BatchRenewal {
  RenewalResult result = RenewalResult::kFailed;
  // kRenewed: the document renewed; kFailed: the newest confirmed version (unconfirmed
  // renewal: the deadline stays); kLost: unset.
  std::optional<HeldDocument> held;
  std::optional<Error> error;  // kFailed: why
  // kLost: who holds the document now (nullopt: nobody).
  std::optional<LockState> current;
};

struct GrantRenewal {
  RenewalResult result = RenewalResult::kFailed;
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
  virtual Status check_tokens(const IssuedBeforeSource& issued_before) = 0;
  // Why grants are refused now (fencing tokens not proven larger than those issued before),
  // if they are.
  virtual std::optional<std::string> grants_refused() const = 0;

  // Realtime reads of the slots asked for: out[i][k] is slot k of locks[i]. Decisions use this.
  virtual Result<std::vector<std::vector<DocumentRead>>> read_slots(const std::vector<SlotRange>& locks) = 0;
  // Every lock document, from search: eventually consistent (only refreshed documents, about
  // one second behind). For display; never for decisions.
  virtual Result<std::vector<LockState>> list() = 0;

  // Each request is granted whole or not at all (a grant partly applied is undone); one
  // outcome per request, in order. One request of one document is one write; anything more is
  // one _bulk per max_bulk_items documents, plus one _mget for the requests to settle.
  virtual std::vector<Result<GrantOutcome>> grant(const std::vector<GrantRequest>& requests) = 0;
  // Deletes every document of the grant still ours (within `scope`).
  virtual Result<ReleaseOutcome> release(const HeldGrant& held, ReleaseScope scope) = 0;
  // Renews documents through _bulk, one outcome per document, in the given order.
  virtual std::vector<BatchRenewal> renew_all(const std::vector<Renewal>& renewals) = 0;
};

// The slot-0 document of one lock (nullopt: free).
DocumentRead read_lock(LockStore& store, const LockKey& key);
// One grant.
Result<GrantOutcome> grant_one(LockStore& store, const GrantRequest& request);
// Renews every document of `held` in one renew_all: lost when any document is lost (the
// others are then released), failed when any renewal is unconfirmed. ttl 0 keeps each
// document's ttlMillis.
GrantRenewal renew_grant(LockStore& store, const HeldGrant& held, Millis ttl);
// The grant of `docs` (documents of one grant as read: token the largest, deadline the earliest).
HeldGrant grant_of(std::vector<HeldDocument> docs);

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
