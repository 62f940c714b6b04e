// Grants of several documents in Elasticsearch (lock_store.h: GrantRequest), for the
// Elasticsearch lock store.
//
//   grant    POST _bulk   a create per free document, an index ?if_seq_no= per one replaced
//   undo     POST _bulk   a delete ?if_seq_no= per document the grant wrote, when not all did
//   release  POST _bulk   a delete ?if_seq_no= per document of the grant
//
// Elasticsearch answers each item of a _bulk on its own: some may apply while others meet a
// conflict. A grant is kept only when every item applied; otherwise what it wrote is deleted
// again, each document at exactly the version written, so another grant that replaced one
// meanwhile is never touched. When the _bulk's answer is lost, one _mget tells which items
// applied (our own writes are recognised as `same_write`). When that read fails too, the
// documents the grant may have written were never handed to anyone: they expire by TTL.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "es/document_api.h"
#include "lock/lock_index.h"
#include "lock/lock_store.h"
#include "lock/token_guard.h"

namespace eslease::lock {

// A realtime read of document `id` as a lock state: nullopt when absent, kProtocol when it is
// not the lock document of that id. Its token counts among those issued before (token_guard.h).
Result<std::optional<LockState>> lock_state_of(const std::string& id, const es::GetResult& got,
                                               TokenGuard& guard);

// What the grant functions work with: the Elasticsearch lock store's own parts.
struct GrantContext {
  es::DocumentApi& api;
  const std::string& index;
  Clock& clock;
  TokenGuard& guard;
  const std::string& writer;
  std::size_t max_bulk_items;
};

// Slots [0, capacity) of each key, in ceil(keys * capacity / max_bulk_items) _mget requests.
Result<std::vector<std::vector<std::optional<LockState>>>> read_lock_slots(const GrantContext& context,
                                                                           const std::vector<LockKey>& keys,
                                                                           std::int64_t capacity);

// The grant itself; the caller has validated the grantee and checked that grants may go ahead
// (LockIndex::ready_to_grant). kInvalidArgument for a request that cannot be a grant.
// The document granting `key` to `grantee` from `now`, as every write of a grant fills it; the
// caller adds what differs (slot, shape, the grant's id).
LockDocument granted_document(const LockKey& key, const Grantee& grantee, WallTime now, std::int64_t epoch,
                              std::int64_t transitions, const std::string& writer);

Result<GrantOutcome> write_grant(const GrantContext& context, const GrantRequest& request);

Result<ReleaseOutcome> release_held_grant(const GrantContext& context, const HeldGrant& held);

}  // namespace eslease::lock
