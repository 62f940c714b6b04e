// The emulated cluster's data: indices (one shard each), documents with their
// _seq_no/_primary_term/_version, delete tombstones, and the refreshed view that search
// sees. Every public method takes the one store mutex, so handlers may call it from any
// thread; a bulk request runs all its operations under one acquisition.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "emulators/es/es_error.h"

namespace eslease::esemu {

constexpr std::int64_t kUnassignedSeqNo = -2;  // as SequenceNumbers.UNASSIGNED_SEQ_NO
constexpr std::int64_t kUnassignedPrimaryTerm = 0;
constexpr std::int64_t kMatchAnyVersion = -3;      // as Versions.MATCH_ANY: no version given
constexpr std::int64_t kMatchDeletedVersion = -4;  // as Versions.MATCH_DELETED: what a create expects

// How a write's `version` is compared with the stored one, as VersionType does. Internal
// versions are counted by the store; external ones are the writer's (a fencing token, say):
// EXTERNAL applies a version only above the stored one, EXTERNAL_GTE also an equal one.
enum class VersionType { kInternal, kExternal, kExternalGte };

struct Doc {
  nlohmann::ordered_json source;
  std::int64_t seq_no = 0;
  std::int64_t primary_term = 1;
  std::int64_t version = 1;
  bool deleted = false;  // a tombstone: keeps the version for index.gc_deletes
  long long deleted_at_ms = 0;
};

struct Index {
  std::string name;
  std::string uuid;
  long long creation_date_ms = 0;
  nlohmann::ordered_json settings;  // flat {"index.number_of_shards": "1", ...}, values as strings
  nlohmann::ordered_json mappings;  // normalized mappings object
  nlohmann::ordered_json aliases;
  int replicas = 1;
  long long gc_deletes_ms = 60000;
  // index.refresh_interval: search sees writes after the next scheduled refresh; -1: only
  // after an explicit one.
  long long refresh_interval_ms = 1000;
  long long refresh_schedule_start_ms = 0;  // creation, or the last change of the interval
  long long last_scheduled_refresh_ms = 0;  // the latest schedule point already refreshed
  std::int64_t next_seq_no = 0;
  std::int64_t primary_term = 1;
  std::map<std::string, Doc> docs;        // realtime: live documents and tombstones
  std::map<std::string, Doc> searchable;  // as of the last refresh, live documents only
  std::set<std::string> dirty;            // ids changed since the last refresh
};

enum class RefreshPolicy { kNone, kImmediate, kWaitFor };
enum class WriteKind { kIndex, kCreate, kUpdate, kDelete };

struct UpdateSpec {
  nlohmann::ordered_json doc;
  std::optional<nlohmann::ordered_json> upsert;
  bool doc_as_upsert = false;
  bool detect_noop = true;
  bool fetch_source = false;
};

struct WriteOp {
  WriteKind kind = WriteKind::kIndex;
  std::string index;
  std::string id;  // empty: generate one (index and create only)
  nlohmann::ordered_json source;
  std::string raw_source;
  UpdateSpec update;
  std::int64_t if_seq_no = kUnassignedSeqNo;
  std::int64_t if_primary_term = kUnassignedPrimaryTerm;
  std::int64_t version = kMatchAnyVersion;
  VersionType version_type = VersionType::kInternal;
};

struct WriteOutcome {
  std::optional<EsError> error;
  std::string index;
  std::string id;
  std::string result;  // created, updated, deleted, not_found, noop
  int status = 200;
  std::int64_t version = 0;
  std::int64_t seq_no = 0;
  std::int64_t primary_term = 0;
  int shards_total = 0;
  int shards_successful = 0;
  bool forced_refresh = false;
  std::optional<nlohmann::ordered_json> updated_source;  // update with _source requested
  // The response body of a single-document write.
  nlohmann::ordered_json to_json() const;
};

struct GetOutcome {
  std::optional<EsError> error;
  bool found = false;
  std::string index;
  Doc doc;
};

struct ClusterCounts {
  int indices = 0;
  int primaries = 0;
  int unassigned_replicas = 0;
};

class Store {
 public:
  // Wall time from `clock` stamps indices and tombstones and drives the refresh schedule.
  explicit Store(const Clock& clock);

  std::vector<WriteOutcome> write(const std::vector<WriteOp>& ops, RefreshPolicy refresh);

  // body: the create-index request ({settings, mappings, aliases}).
  std::optional<EsError> create_index(const std::string& name, const nlohmann::ordered_json& body);
  std::optional<EsError> delete_indices(const std::string& expression);
  // PUT /{index}/_mapping: merges `body` into the mapping of every index the expression names.
  std::optional<EsError> put_mapping(const std::string& expression, const nlohmann::ordered_json& body);
  // PUT /{index}/_settings: the dynamic settings the emulator honours (refresh_interval,
  // number_of_replicas, gc_deletes).
  std::optional<EsError> put_settings(const std::string& expression, const nlohmann::ordered_json& body);
  bool exists(const std::string& name) const;
  // GET /{index} and GET /{index}/_mapping bodies.
  std::variant<nlohmann::ordered_json, EsError> describe(const std::string& expression,
                                                         bool mappings_only) const;

  // A non-realtime get reads the refreshed view, so it first catches up with the refresh
  // schedule, as searches do.
  GetOutcome get(const std::string& index, const std::string& id, bool realtime);

  // Names matching "a,b,logs-*" ("" / "_all" / "*" = all). A missing concrete name is an
  // error; wildcards matching nothing are not.
  std::variant<std::vector<std::string>, EsError> resolve(const std::string& expression) const;
  using SearchVisitor = std::function<void(const Index& index, const std::string& id, const Doc& doc)>;
  // Visits refreshed documents of the named indices, in index order then _seq_no order.
  // Indices whose refresh_interval has passed since their last scheduled refresh are
  // refreshed first: Elasticsearch refreshes on a timer, and a search-idle shard when it is
  // searched; refreshing when read shows a reader the same thing.
  void for_each_searchable(const std::vector<std::string>& names, const SearchVisitor& visit);
  // Number of shards (one per index) the names cover, and the replica count of each.
  int refresh(const std::vector<std::string>& names);
  int replicas_of(const std::string& name) const;

  std::optional<std::int64_t> bump_primary_term(const std::string& name);

  // Test-only stand-ins for snapshot and restore (the admin API; store_snapshots.cpp).
  // `snapshot` keeps a copy of index `name` (documents, sequence numbers, mapping, settings,
  // primary term) as `snapshot`; false when there is no such index. `restore` brings it back
  // as Elasticsearch restores an index: its documents and `_seq_no` counter as they were
  // then, delete tombstones gone. Over an existing index (Elasticsearch requires it closed)
  // it keeps that index's UUID and the larger of the two primary terms; otherwise the index
  // gets a new UUID and the snapshot's primary term. nullopt: no such snapshot.
  bool snapshot(const std::string& name, const std::string& snapshot);
  std::optional<Index> restore(const std::string& snapshot);
  ClusterCounts counts() const;

 private:
  WriteOutcome apply(const WriteOp& op, std::set<std::string>& touched);
  WriteOutcome apply_index(Index& index, const WriteOp& op, const nlohmann::ordered_json& source,
                           const std::string& raw, bool create);
  WriteOutcome apply_update(Index& index, const WriteOp& op);
  WriteOutcome apply_delete(Index& index, const WriteOp& op);
  // A document or an unexpired tombstone; nullptr when none.
  const Doc* current(const Index& index, const std::string& id) const;
  Index& create_locked(const std::string& name, nlohmann::ordered_json settings,
                       nlohmann::ordered_json mappings, nlohmann::ordered_json aliases);
  void refresh_locked(Index& index);
  void refresh_if_due_locked(Index& index);

  long long now_millis() const;

  const Clock& clock_;
  mutable std::mutex mutex_;
  std::map<std::string, Index> indices_;
  std::map<std::string, Index> snapshots_;
};

std::string random_base64url(std::size_t length);
// Glob match with '*' only, as index patterns use.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace eslease::esemu
