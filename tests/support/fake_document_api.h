// An in-memory DocumentApi with Elasticsearch's sequence-number rules, for protocol tests:
// one shard, seq_no grows with every write (deletes included), a primary-term bump, and
// scripted faults that can apply a write and still lose its answer.
#pragma once

#include <deque>
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
    ++term_;
  }
  // Overwrites a document behind everyone's back (another writer).
  void put_raw(const std::string& id, nlohmann::json source) {
    std::lock_guard lock(mutex_);
    docs_[id] = Doc{std::move(source), es::Version{seq_no_++, term_}};
  }
  std::optional<es::GetResult> peek(const std::string& id) const {
    std::lock_guard lock(mutex_);
    auto it = docs_.find(id);
    if (it == docs_.end()) return std::nullopt;
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
    definition_ = definition;
    const bool created = !index_exists_;
    index_exists_ = true;
    return created;
  }
  Result<nlohmann::json> get_mapping(const std::string&) override {
    std::lock_guard lock(mutex_);
    ++calls_["indices.get_mapping"];
    return definition_["mappings"];
  }

  Result<es::WriteResult> create(const std::string&, const std::string& id,
                                 const nlohmann::json& source) override {
    std::lock_guard lock(mutex_);
    return with_faults("create", id, [&] {
      if (docs_.count(id)) return conflict();
      return applied(id, source, "created");
    });
  }
  Result<es::WriteResult> index(const std::string&, const std::string& id, const nlohmann::json& source,
                                std::optional<es::Version> if_match) override {
    std::lock_guard lock(mutex_);
    return with_faults("index", id, [&] { return index_locked(id, source, if_match); });
  }
  Result<es::GetResult> get(const std::string&, const std::string& id) override {
    std::lock_guard lock(mutex_);
    ++calls_["get"];
    ids_seen_.push_back(id);
    if (auto fault = take_fault("get")) return fault->error;
    auto it = docs_.find(id);
    if (it == docs_.end()) return es::GetResult{};
    return es::GetResult{true, it->second.source, it->second.version};
  }
  Result<es::WriteResult> remove(const std::string&, const std::string& id,
                                 std::optional<es::Version> if_match) override {
    std::lock_guard lock(mutex_);
    return with_faults("delete", id, [&] { return remove_locked(id, if_match); });
  }
  Result<es::BulkResult> bulk(const std::string&, const std::vector<es::BulkOperation>& operations) override {
    std::lock_guard lock(mutex_);
    ++calls_["bulk"];
    auto fault = take_fault("bulk");
    if (fault && !fault->apply) return fault->error;
    es::BulkResult out;
    for (const auto& op : operations) {
      ids_seen_.push_back(op.id);
      es::WriteResult w = op.type == es::BulkOperation::Type::kDelete ? remove_locked(op.id, op.if_match)
                          : op.type == es::BulkOperation::Type::kCreate
                              ? (docs_.count(op.id) ? conflict() : applied(op.id, op.source, "created"))
                              : index_locked(op.id, op.source, op.if_match);
      out.items.push_back(es::BulkItemResult{op.id, w.status, w.version, std::nullopt});
    }
    if (fault) return fault->error;
    return out;
  }
  Result<std::vector<es::SearchHit>> search(const std::string&, const nlohmann::json&, int) override {
    std::lock_guard lock(mutex_);
    ++calls_["search"];
    std::vector<es::SearchHit> hits;
    for (const auto& [id, doc] : docs_) hits.push_back(es::SearchHit{id, doc.source, doc.version});
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
    docs_[id] = Doc{source, es::Version{seq_no_++, term_}};
    es::WriteResult w;
    w.result = result;
    w.version = docs_[id].version;
    return w;
  }
  es::WriteResult index_locked(const std::string& id, const nlohmann::json& source,
                               std::optional<es::Version> if_match) {
    auto it = docs_.find(id);
    if (if_match && (it == docs_.end() || !(it->second.version == *if_match))) return conflict();
    return applied(id, source, it == docs_.end() ? "created" : "updated");
  }
  es::WriteResult remove_locked(const std::string& id, std::optional<es::Version> if_match) {
    auto it = docs_.find(id);
    if (if_match && (it == docs_.end() || !(it->second.version == *if_match))) return conflict();
    es::WriteResult w;
    if (it == docs_.end()) {
      w.status = es::WriteStatus::kNotFound;
      return w;
    }
    docs_.erase(it);
    w.result = "deleted";
    w.version = es::Version{seq_no_++, term_};
    return w;
  }

  mutable std::mutex mutex_;
  std::map<std::string, Doc> docs_;
  std::int64_t seq_no_ = 0;
  std::int64_t term_ = 1;
  bool index_exists_ = false;
  nlohmann::json definition_;
  std::deque<Fault> faults_;
  std::map<std::string, int> calls_;
  std::vector<std::string> ids_seen_;
};

}  // namespace eslease::testing
