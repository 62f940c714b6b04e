// The grant protocol in Elasticsearch (lock_store.h), for the Elasticsearch lock store:
// reads (reads.cpp), grants of any shape, their undo, and releases.
//
//   read     GET (one document) or _mget     realtime, in batches of max_bulk_items
//   grant    PUT _create / PUT _doc?if_seq_no= for one document; otherwise POST _bulk, a
//            create per free document and an index ?if_seq_no= per one replaced, for every
//            request of the call (start-up grants many locks at once)
//   undo     a delete ?if_seq_no= per document a grant wrote, when not all of it applied
//   release  a delete ?if_seq_no= per document of the grant
//
// Elasticsearch answers each item of a _bulk on its own: some may apply while others meet a
// conflict. A grant is kept only when every item applied; otherwise what it wrote is deleted
// again, each document at exactly the version written, so another grant that replaced one
// meanwhile is never touched. When an answer is lost, one read tells which items applied (our
// own writes are recognised as `same_write`). When that read fails too, the documents the
// grant may have written were never handed to anyone: they expire by TTL.
//
// A grant is kept only when its fencing token is larger than every token known before it was
// written (token_guard.h). Otherwise the lock index went back (re-created, restored): the
// grant, which nobody has been told of yet, is undone, and the caller gets kGrantsPaused.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "es/document_api.h"
#include "lock/lock_store.h"
#include "lock/token_guard.h"

namespace eslease::lock {

// What the grant functions work with: the Elasticsearch lock store's own parts.
struct GrantContext {
  es::DocumentApi& api;
  const std::string& index;
  Clock& clock;
  TokenGuard& guard;
  const std::string& writer;
  std::size_t max_bulk_items;
};

// Realtime reads of documents: one GET for one id, else ceil(n / max_bulk_items) _mget.
Result<std::vector<DocumentRead>> read_documents(const GrantContext& context,
                                                 const std::vector<std::string>& ids);

// The wall time to write, to the millisecond. It never runs ahead of the clock: the expiresAt
// a holder is shown must not be later than the deadline the store reports (`sent` + TTL, on
// the monotonic clock), or a successor could be granted while the holder still believes it
// holds. It is not one `taken` refuses (the time of the write it follows or replaces), so a
// write whose answer was lost is recognised as ours (`same_write`) and a new grant is never
// taken for an old one: while the clock has not moved on, it waits (about a millisecond).
WallTime write_time(Clock& clock, const std::function<bool(WallTime)>& taken);

// The grants themselves; the caller has checked that grants may go ahead
// (LockIndex::ready_to_grant). A request that cannot be a grant is its kInvalidArgument.
std::vector<Result<GrantOutcome>> write_grants(const GrantContext& context,
                                               const std::vector<GrantRequest>& requests);

Result<ReleaseOutcome> release_held_grant(const GrantContext& context, const HeldGrant& held,
                                          ReleaseScope scope);

}  // namespace eslease::lock
