// The lock document (see the design's "The lock document") and the fencing token rule.
//
// Fencing token: (primary_term << 32) | seq_no of the write that granted the lock (an
// acquire or a takeover). Sequence numbers only grow on a shard, through deletes and
// re-creates, and a primary-term bump makes every later pair larger, so each new grant of
// a lock gets a larger token, even after release and re-acquire.
//
// A write cannot contain its own seq_no, so the granting write stores fencingToken = 0,
// meaning "the token is this version's own (_primary_term, _seq_no)". The holder's first
// renewal writes the real value into the field, and it stays there for the life of the
// grant. Readers use fencing_token_of(): the field when non-zero, else the version's pair.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "es/document_api.h"

namespace eslease::lock {

struct LockDocument {
  std::string lock;       // "<namespace>/<lockName>", equal to the document id
  std::string lease;      // "<namespace>/<Lease name>"; empty outside Kubernetes
  std::string lease_uid;  // identifies the grantee: our own writes are recognised by it
  std::string holder;     // "<namespace>/<pod>" or a process identity
  std::string holder_uid;
  std::string node;
  std::string priority = "Foreground";
  // Wall-clock times, to the millisecond, for people and status only: no decision
  // compares them with another machine's clock. acquiredAt/renewedAt also tell our own
  // writes apart when an answer was lost.
  WallTime acquired_at{};
  WallTime renewed_at{};
  WallTime expires_at{};
  std::int64_t ttl_millis = 0;
  std::int64_t fencing_token = 0;  // 0 in the granting write; see above
  std::int64_t transitions = 0;    // grants of this lock since its document was created
  std::string writer;              // identity of the process that wrote it
};

nlohmann::json to_json(const LockDocument& doc);
// kProtocol with the field's name when the source does not hold a valid lock document.
Result<LockDocument> parse_lock_document(const nlohmann::json& source);

// Wall time truncated to the millisecond, as written to and read back from documents.
WallTime to_millis(WallTime t);

// The token of a grant written at `version`. kProtocol when the pair does not fit the
// 32/31-bit layout (seq_no >= 2^32 or primary_term >= 2^31): the token would not grow.
Result<std::int64_t> fencing_token_of(const es::Version& version);

// A lock document as read or written, with its version and fencing token.
struct LockState {
  LockDocument doc;
  es::Version version;
  std::int64_t token = 0;
};
Result<LockState> make_state(LockDocument doc, const es::Version& version);

// True when `doc` belongs to the same grant as `grant` (same lock, grantee and acquire).
bool same_grant(const LockDocument& doc, const LockDocument& grant);
// True when `doc` is exactly the write `written` (same grant, writer, renewedAt, TTL).
bool same_write(const LockDocument& doc, const LockDocument& written);

// {"settings": one shard, "mappings": strict, exactly the document's fields}.
nlohmann::json index_definition();
// Checks an existing index's mapping for every field with the right type.
Status check_mapping(const nlohmann::json& mappings);

}  // namespace eslease::lock
