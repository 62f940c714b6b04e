// An in-memory DocumentApi with Elasticsearch's sequence-number rules, for protocol tests:
// one shard, seq_no grows with every write (deletes included), a primary-term bump, and
// scripted faults that can apply a write and still lose its answer. The index can be
// dropped (a write then creates it anew, empty, as Elasticsearch's auto-create does) and
// restored from a snapshot taken earlier, with its documents and sequence numbers as they were.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "es/document_api.h"

namespace eslease::testing {

class FakeDocumentApi final : public es::DocumentApi {
 public:
  struct Fault {
    std::string op;      // "create", "index", "delete", "get", "bulk"
    bool apply = false;  // perform the operation, then fail with `error` (answer lost)
    Error error;
  };

  void inject(Fault fault) {
    std::lock_guard lock(mutex_);
    faults_.push_back(std::move(fault));
  }
  void bump_primary_term() {
    std::lock_guard lock(mutex_);
    ++index_.term;
  }
  // DELETE /{index}: every document, the mapping and the sequence numbers are gone.
  void drop_index() {
    std::lock_guard lock(mutex_);
    index_ = Index{};
  }
  // A copy of the index as it is now, and later the index restored from it (a new UUID).
  void take_snapshot() {
    std::lock_guard lock(mutex_);
    snapshot_ = index_;
  }
  void restore_snapshot() {
    std::lock_guard lock(mutex_);
    index_ = snapshot_;
    index_.uuid = "uuid-" + std::to_string(++uuids_);
  }
  std::string uuid() const {
    std::lock_guard lock(mutex_);
    return index_.uuid;
  }
  nlohmann::json mappings() const {
    std::lock_guard lock(mutex_);
    return index_.mappings;
  }
  // Overwrites a document behind everyone's back (another writer).
  void put_raw(const std::string& id, nlohmann::json source) {
    std::lock_guard lock(mutex_);
    auto_create();
    index_.docs[id] = Doc{std::move(source), es::Version{index_.seq_no++, index_.term}};
  }
  std::optional<es::GetResult> peek(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = index_.docs.find(id);
    if (it == index_.docs.end()) return std::nullopt;
    return es::GetResult{true, it->second.source, it->second.version};
  }
  int calls(const std::string& op) const {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(op);
    return it == calls_.end() ? 0 : it->second;
  }
  int total_calls() const {
    std::lock_guard lock(mutex_);
    int total = 0;
    for (const auto& [op, n] : calls_) total += n;
    return total;
  }
  std::vector<std::string> ids_seen() const {
    std::lock_guard lock(mutex_);
    return ids_seen_;
  }

  Result<bool> ensure_index(const std::string& index, const nlohmann::json& definition) override {
    std::lock_guard lock(mutex_);
    ++calls_["indices.create"];
    if (auto fault = take_fault("indices.create")) return fault->error;
    if (index_.exists) return false;
    auto_create();
    index_.mappings = definition.value("mappings", nlohmann::json::object());
    return true;
  }
  Result<std::optional<es::IndexDescription>> describe_index(const std::string&) override {
    std::lock_guard lock(mutex_);
    ++calls_["indices.get"];
    if (auto fault = take_fault("indices.get")) return fault->error;
    if (!index_.exists) return std::optional<es::IndexDescription>();
    return std::optional<es::IndexDescription>(es::IndexDescription{index_.uuid, index_.mappings});
  }
  // Adds new properties (an existing one must keep its type); other keys replace the old ones.
  Status put_mapping(const std::string&, const nlohmann::json& mapping) override {
    std::lock_guard lock(mutex_);
    ++calls_["indices.put_mapping"];
    if (auto fault = take_fault("indices.put_mapping")) return fault->error;
    if (!index_.exists) return make_error(ErrorCode::kNotFound, "index_not_found_exception", 404);
    nlohmann::json merged = index_.mappings;
    for (const auto& [key, value] : mapping.items()) {
      if (key != "properties") {
        merged[key] = value;
        continue;
      }
      for (const auto& [field, type] : value.items()) {
        if (merged["properties"].contains(field) && merged["properties"][field] != type)
          return make_error(ErrorCode::kInvalidArgument, "mapper [" + field + "] cannot be changed", 400);
        merged["properties"][field] = type;
      }
    }
    index_.mappings = std::move(merged);
    return {};
  }

  Result<es::WriteResult> create(const std::string&, const std::string& id,
                                 const es::Source& source) override {
    std::lock_guard lock(mutex_);
    return with_faults("create", id, [&] {
      if (index_.docs.count(id)) return conflict();
      return applied(id, nlohmann::json::parse(source.text), "created");
    });
  }
  Result<es::WriteResult> index(const std::string&, const std::string& id, const es::Source& source,
                                std::optional<es::Version> if_match) override {
    std::lock_guard lock(mutex_);
    return with_faults("index", id,
                       [&] { return index_locked(id, nlohmann::json::parse(source.text), if_match); });
  }
  Result<es::GetResult> get(const std::string&, const std::string& id) override {
    std::lock_guard lock(mutex_);
    ++calls_["get"];
    ids_seen_.push_back(id);
    if (auto fault = take_fault("get")) return fault->error;
    auto it = index_.docs.find(id);
    if (it == index_.docs.end()) return es::GetResult{};
    return es::GetResult{true, it->second.source, it->second.version};
  }
  // One request for every id, as the real _mget.
  Result<std::vector<es::GetResult>> mget(const std::string&, const std::vector<std::string>& ids) override {
    std::lock_guard lock(mutex_);
    ++calls_["mget"];
    if (auto fault = take_fault("mget")) return fault->error;
    std::vector<es::GetResult> out;
    for (const std::string& id : ids) {
      ids_seen_.push_back(id);
      auto it = index_.docs.find(id);
      out.push_back(it == index_.docs.end() ? es::GetResult{}
                                            : es::GetResult{true, it->second.source, it->second.version});
    }
    return out;
  }
  Result<es::WriteResult> remove(const std::string&, const std::string& id,
                                 std::optional<es::Version> if_match) override {
    std::lock_guard lock(mutex_);
    return with_faults("delete", id, [&] { return remove_locked(id, if_match); });
  }
  // Runs at the start of every _bulk, outside the store's lock: a test can make it take time.
  void before_each_bulk(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    before_bulk_ = std::move(hook);
  }

  Result<es::BulkResult> bulk(const std::string&, const std::vector<es::BulkOperation>& operations) override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      hook = before_bulk_;
    }
    if (hook) hook();
    std::lock_guard lock(mutex_);
    ++calls_["bulk"];
    auto fault = take_fault("bulk");
    if (fault && !fault->apply) return fault->error;
    auto_create();
    es::BulkResult out;
    for (const auto& op : operations) {
      ids_seen_.push_back(op.id);
      es::WriteResult w =
          op.type == es::BulkOperation::Type::kDelete ? remove_locked(op.id, op.if_match)
          : op.type == es::BulkOperation::Type::kCreate
              ? (index_.docs.count(op.id) ? conflict()
                                          : applied(op.id, nlohmann::json::parse(op.source.text), "created"))
              : index_locked(op.id, nlohmann::json::parse(op.source.text), op.if_match);
      out.items.push_back(es::BulkItemResult{op.id, w.status, w.version, std::nullopt});
    }
    if (fault) return fault->error;
    return out;
  }
  Result<std::vector<es::SearchHit>> search(const std::string&, const nlohmann::json&, int) override {
    std::lock_guard lock(mutex_);
    ++calls_["search"];
    std::vector<es::SearchHit> hits;
    for (const auto& [id, doc] : index_.docs) hits.push_back(es::SearchHit{id, doc.source, doc.version});
    return hits;
  }
  Status refresh(const std::string&) override { return {}; }

 private:
  struct Doc {
    nlohmann::json source;
    es::Version version;
  };

  template <typename Op>
  Result<es::WriteResult> with_faults(const std::string& op, const std::string& id, Op perform) {
    ++calls_[op];
    ids_seen_.push_back(id);
    auto fault = take_fault(op);
    if (fault && !fault->apply) return fault->error;
    if (op != "delete") auto_create();
    es::WriteResult result = perform();
    if (fault) return fault->error;
    return result;
  }

  std::optional<Fault> take_fault(const std::string& op) {
    for (auto it = faults_.begin(); it != faults_.end(); ++it) {
      if (it->op == op) {
        Fault f = *it;
        faults_.erase(it);
        return f;
      }
    }
    return std::nullopt;
  }

  static es::WriteResult conflict() {
    es::WriteResult w;
    w.status = es::WriteStatus::kConflict;
    return w;
  }
  es::WriteResult applied(const std::string& id, const nlohmann::json& source, const char* result) {
    index_.docs[id] = Doc{source, es::Version{index_.seq_no++, index_.term}};
    es::WriteResult w;
    w.result = result;
    w.version = index_.docs[id].version;
    return w;
  }
  es::WriteResult index_locked(const std::string& id, const nlohmann::json& source,
                               std::optional<es::Version> if_match) {
    auto it = index_.docs.find(id);
    if (if_match && (it == index_.docs.end() || !(it->second.version == *if_match))) return conflict();
    return applied(id, source, it == index_.docs.end() ? "created" : "updated");
  }
  es::WriteResult remove_locked(const std::string& id, std::optional<es::Version> if_match) {
    auto it = index_.docs.find(id);
    if (if_match && (it == index_.docs.end() || !(it->second.version == *if_match))) return conflict();
    es::WriteResult w;
    if (it == index_.docs.end()) {
      w.status = es::WriteStatus::kNotFound;
      return w;
    }
    index_.docs.erase(it);
    w.result = "deleted";
    w.version = es::Version{index_.seq_no++, index_.term};
    return w;
  }

  struct Index {
    bool exists = false;
    std::string uuid;
    nlohmann::json mappings = nlohmann::json::object();
    std::map<std::string, Doc> docs;
    std::int64_t seq_no = 0;
    std::int64_t term = 1;
  };

  // A write to a missing index creates it, empty, with a new UUID.
  void auto_create() {
    if (index_.exists) return;
    index_.exists = true;
    index_.uuid = "uuid-" + std::to_string(++uuids_);
  }

  mutable std::mutex mutex_;
  Index index_;
  Index snapshot_;
  int uuids_ = 0;
  std::deque<Fault> faults_;
  std::map<std::string, int> calls_;
  std::function<void()> before_bulk_;
  std::vector<std::string> ids_seen_;
};

}  // namespace eslease::testing
