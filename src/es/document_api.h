// The Elasticsearch document API as eslease needs it, behind one small interface so the
// lock protocol is tested against fakes and the HTTP details live in one place.
//
// Outcomes the caller must act on are typed values, not errors: a 409 version conflict is
// WriteStatus::kConflict, a missing document is kNotFound / GetResult::found == false.
// Everything else that goes wrong is an Error carrying Elasticsearch's own error type and
// reason.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace eslease::es {

// A document's _source as sent: JSON text. A JSON value converts to it (serialized once); a
// writer that serializes its documents itself (the lock store, one per held lock every tick)
// hands over its text with from_text. The text is sent as it is.
struct Source {
  Source() = default;
  Source(const nlohmann::json& value) : text(value.dump()) {}  // NOLINT(google-explicit-constructor)
  static Source from_text(std::string json_text) {
    Source source;
    source.text = std::move(json_text);
    return source;
  }
  std::string text;
};

// A document's version on its shard: Elasticsearch's optimistic-concurrency pair.
struct Version {
  std::int64_t seq_no = -1;
  std::int64_t primary_term = 0;
  friend bool operator==(const Version&, const Version&) = default;
};

enum class WriteStatus {
  kApplied,   // created / updated / deleted
  kConflict,  // 409: the document exists (create) or the if_seq_no condition failed
  kNotFound,  // 404 on delete: there was no such document
};

struct WriteResult {
  WriteStatus status = WriteStatus::kApplied;
  std::string result;  // Elasticsearch's "result": created, updated, deleted, not_found
  Version version;     // the version written (kApplied) or reported
  std::int64_t doc_version = 0;
  std::string conflict_reason;  // Elasticsearch's reason on kConflict
  // True when the request was sent more than once and an earlier attempt may have been
  // applied without its answer arriving (connection lost, 502/504). A kConflict or
  // kNotFound may then be the echo of our own earlier write: callers resolve it by reading.
  bool earlier_attempt_may_have_applied = false;
};

struct GetResult {
  bool found = false;
  nlohmann::json source;  // the document's _source when found
  Version version;
};

struct BulkOperation {
  enum class Type { kIndex, kCreate, kDelete };
  Type type = Type::kIndex;
  std::string id;
  Source source;                    // ignored for kDelete
  std::optional<Version> if_match;  // if_seq_no / if_primary_term
};

struct BulkItemResult {
  std::string id;
  // Set when Elasticsearch answered for this item with 2xx, 404 or 409.
  std::optional<WriteStatus> status;
  Version version;
  // Set when the item failed for another reason (e.g. 429, a mapping error).
  std::optional<Error> error;
};

struct BulkResult {
  std::vector<BulkItemResult> items;  // one per operation, in order
  bool earlier_attempt_may_have_applied = false;
};

// An index as GET /{index} reports it, as far as eslease reads it.
struct IndexDescription {
  std::string uuid;         // settings.index.uuid: a re-created or restored index has a new one
  nlohmann::json mappings;  // {"dynamic": ..., "properties": {...}, "_meta": {...}}
};

// The server, as GET / names it.
struct ServerInfo {
  std::string distribution;  // "opensearch"; "elasticsearch" when the answer names none
  std::string version;       // version.number, e.g. "8.11.1" or "2.19.6"
};

struct SearchHit {
  std::string id;
  nlohmann::json source;
  Version version;
};

class DocumentApi {
 public:
  virtual ~DocumentApi() = default;

  // Creates `index` with `definition` ({"settings":..., "mappings":...}) when missing.
  // Returns true when it was created, false when it already existed.
  virtual Result<bool> ensure_index(const std::string& index, const nlohmann::json& definition) = 0;
  // GET /{index}: its UUID and mappings; nullopt when there is no such index.
  virtual Result<std::optional<IndexDescription>> describe_index(const std::string& index) = 0;
  // PUT /{index}/_mapping: merges `mapping` ({"properties":..., "_meta":...}) into the index's
  // mapping. New fields are added; a `_meta` given replaces the old one as a whole.
  virtual Status put_mapping(const std::string& index, const nlohmann::json& mapping) = 0;

  // PUT /{index}/_create/{id}: applies only when the document is absent.
  virtual Result<WriteResult> create(const std::string& index, const std::string& id,
                                     const Source& source) = 0;
  // PUT /{index}/_doc/{id}[?if_seq_no=&if_primary_term=].
  virtual Result<WriteResult> index(const std::string& index, const std::string& id, const Source& source,
                                    std::optional<Version> if_match) = 0;
  // GET /{index}/_doc/{id} (realtime). A missing index reads as a missing document.
  virtual Result<GetResult> get(const std::string& index, const std::string& id) = 0;
  // POST /{index}/_mget {"ids": [...]} (realtime): one result per id, in order. The default
  // reads one by one, for implementations without a multi-get.
  virtual Result<std::vector<GetResult>> mget(const std::string& index, const std::vector<std::string>& ids) {
    std::vector<GetResult> out;
    for (const std::string& id : ids) {
      auto one = get(index, id);
      if (!one.ok()) return one.error();
      out.push_back(std::move(*one));
    }
    return out;
  }
  // DELETE /{index}/_doc/{id}[?if_seq_no=&if_primary_term=].
  virtual Result<WriteResult> remove(const std::string& index, const std::string& id,
                                     std::optional<Version> if_match) = 0;
  // POST /{index}/_bulk with the operations in one NDJSON body; per-item outcomes.
  virtual Result<BulkResult> bulk(const std::string& index, const std::vector<BulkOperation>& operations) = 0;
  // POST /{index}/_search with seq_no_primary_term. Sees only refreshed data.
  virtual Result<std::vector<SearchHit>> search(const std::string& index, const nlohmann::json& query,
                                                int size) = 0;
  // POST /{index}/_refresh.
  virtual Status refresh(const std::string& index) = 0;
  // GET /: which server answers. The default, for implementations without one, cannot tell.
  virtual Result<ServerInfo> describe_server() {
    return make_error(ErrorCode::kInvalidArgument, "this Elasticsearch client cannot describe its server");
  }
};

}  // namespace eslease::es
