// The lock document (see the design's "The lock document") and the fencing token rule.
//
// Fencing token: (epoch << 48) | (primary_term << 32) | seq_no, where (primary_term, seq_no)
// is the version of the write that granted the lock (an acquire or a takeover) and the
// epoch is the lock index's (token_guard.h). Sequence numbers only grow on a shard, through
// deletes and re-creates, and a primary-term bump makes every later pair larger, so within
// one index each new grant of a lock gets a larger token, even after release and re-acquire.
// An index that was re-created or restored starts its pairs low again; a higher epoch puts
// all its tokens above those of every earlier epoch.
//
// A write cannot contain its own seq_no, so the granting write stores fencingToken = its
// epoch's base (epoch << 48, whose low 48 bits are zero; 0 in epoch 0), meaning "this base
// plus this version's own pair". The holder's first renewal writes the whole token into the
// field, and it stays there for the life of the grant. Readers use make_state(): the field
// when its low 48 bits are set, else the field plus the version's pair. A token is therefore
// read the same by every process, whichever epoch it last saw.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/lease_api.h"
#include "common/clock.h"
#include "common/result.h"
#include "es/document_api.h"

namespace eslease::lock {

// How a claim holds a lock, and a lock's largest capacity: the API's (api/lease_api.h).
using api::Access;
using api::kMaxCapacity;
using api::to_string;

// A lock has `capacity` slots; slot k is one document, with id `<lock>` for k = 0 (so a
// capacity-1 lock keeps its one document) and `<lock>#<k>` above. Lock names never contain
// '#', so the id names exactly one (lock, slot).
std::string slot_document_id(const std::string& lock_id, std::int64_t slot);

struct LockDocument {
  std::string lock;       // "<namespace>/<lockName>": the lock, whichever slot this is
  std::string lease;      // "<namespace>/<Lease name>"; empty outside Kubernetes
  std::string lease_uid;  // identifies the grantee: our own writes are recognised by it
  std::string holder;     // "<namespace>/<pod>" or a process identity
  std::string holder_uid;
  std::string node;
  std::string priority = api::to_string(api::Priority::kForeground);
  // Wall-clock times, to the millisecond, for people and status only: no decision
  // compares them with another machine's clock. acquiredAt/renewedAt also tell our own
  // writes apart when an answer was lost.
  WallTime acquired_at{};
  WallTime renewed_at{};
  WallTime expires_at{};
  std::int64_t ttl_millis = 0;
  std::int64_t fencing_token = 0;  // the epoch's base in the granting write; see above
  std::int64_t transitions = 0;    // grants of this lock since its document was created
  std::string writer;              // identity of the process that wrote it
  // The lock's shape. Documents written before shapes existed read as slot 0 of capacity 1,
  // Exclusive.
  std::int64_t slot = 0;
  std::int64_t capacity = 1;
  Access access = Access::kExclusive;
  // A grant of several documents (a lock set, or an Exclusive claim on capacity N): its id and
  // the ids of all its documents, so any reader can tell which documents form one grant. Both
  // empty for a grant of one document.
  std::string grant;
  std::vector<std::string> grant_docs;
};

// The document's id: slot_document_id(doc.lock, doc.slot).
std::string document_id(const LockDocument& doc);

// The document as written to Elasticsearch: JSON text, serialized directly (a renewal tick
// writes one per held lock).
es::Source source_of(const LockDocument& doc);
// kProtocol with the field's name when the source does not hold a valid lock document.
Result<LockDocument> parse_lock_document(const nlohmann::json& source);

// Wall time truncated to the millisecond, as written to and read back from documents.
WallTime to_millis(WallTime t);

// The token layout: 15 bits of epoch, 16 of primary term, 32 of sequence number.
inline constexpr int kEpochShift = 48;
inline constexpr std::int64_t kMaxEpoch = (std::int64_t{1} << 15) - 1;
inline constexpr std::int64_t epoch_of(std::int64_t token) {
  return token >> kEpochShift;
}
inline constexpr std::int64_t epoch_base(std::int64_t epoch) {
  return epoch << kEpochShift;
}

// The token of a grant written at `version` in epoch `epoch`. kProtocol when the pair does
// not fit its 32/16-bit field (seq_no >= 2^32 or primary_term >= 2^16) or the epoch is out of
// range: the token would not grow.
Result<std::int64_t> fencing_token_of(const es::Version& version, std::int64_t epoch = 0);

// A lock document as read or written, with its version and fencing token.
struct LockState {
  LockDocument doc;
  es::Version version;
  std::int64_t token = 0;
};
Result<LockState> make_state(LockDocument doc, const es::Version& version);

// True when `doc` belongs to the same grant as `grant` (same lock, slot, grantee and acquire).
bool same_grant(const LockDocument& doc, const LockDocument& grant);
// True when `doc` is exactly the write `written` (same grant, writer, renewedAt, TTL).
bool same_write(const LockDocument& doc, const LockDocument& written);

// {"settings": one shard, "mappings": strict, exactly the document's fields}.
nlohmann::json index_definition();

// How an existing index's mapping fits the lock document.
enum class MappingFit {
  kFits,         // every field, with its type
  kLacksFields,  // some fields are not mapped yet, none differently
  // Besides, keyword fields are mapped as text, the way Elasticsearch's dynamic mapping maps
  // them when a write creates a missing index: lock documents still fit (they are only read
  // by id), but only a non-strict index is taken to have been created so.
  kDynamic,
  kConflicts,  // a field is mapped with a type lock documents do not fit
};
struct MappingCheck {
  MappingFit fit = MappingFit::kFits;
  std::string problem;                                // what is wrong, unless kFits
  nlohmann::json missing = nlohmann::json::object();  // the properties to add
  // kLacksFields only for the fields lock shapes added: an index eslease made before them.
  bool lacks_only_shape_fields = false;
};
MappingCheck check_mapping(const nlohmann::json& mappings);

}  // namespace eslease::lock
