#include <algorithm>
#include <tuple>

#include "common/log.h"
#include "lock/expiry.h"
#include "lock/grants.h"
#include "lock/lock_index.h"
#include "lock/lock_store.h"

namespace eslease::lock {
namespace {

using es::WriteStatus;

// Listing reads at most this many documents (Elasticsearch's default max_result_window).
constexpr int kMaxListed = 10000;

class EsLockStore final : public LockStore {
 public:
  EsLockStore(std::unique_ptr<es::DocumentApi> owned, es::DocumentApi& api, Clock& clock,
              StoreOptions options)
      : owned_(std::move(owned)),
        api_(api),
        clock_(clock),
        options_(std::move(options)),
        guard_(clock, options_.on_fencing),
        index_(api, options_.index, guard_),
        context_{api, options_.index, clock, guard_, options_.writer, options_.max_bulk_items} {}

  Status prepare() override { return index_.prepare(!options_.awaits_token_history); }

  Status check_tokens(const IssuedBeforeSource& issued_before) override {
    guard_.set_source(issued_before);
    return index_.check_now();
  }

  std::optional<std::string> grants_refused() const override { return guard_.refusal(); }

  Result<std::vector<std::vector<DocumentRead>>> read_slots(const std::vector<SlotRange>& locks) override {
    std::vector<std::string> ids;
    for (const SlotRange& lock : locks) {
      if (lock.slots < 1 || lock.slots > kMaxCapacity)
        return make_error(ErrorCode::kInvalidArgument,
                          "a lock has 1 to " + std::to_string(kMaxCapacity) + " slots to read");
      for (std::int64_t k = 0; k < lock.slots; ++k) ids.push_back(slot_document_id(lock.key.id(), k));
    }
    auto read = read_documents(context_, ids);
    if (!read.ok()) return read.error();
    std::vector<std::vector<DocumentRead>> out(locks.size());
    std::size_t at = 0;
    for (std::size_t i = 0; i < locks.size(); ++i)
      for (std::int64_t k = 0; k < locks[i].slots; ++k) out[i].push_back(std::move((*read)[at++]));
    return out;
  }

  Result<std::vector<LockState>> list() override {
    auto hits =
        api_.search(options_.index, nlohmann::json{{"match_all", nlohmann::json::object()}}, kMaxListed);
    if (!hits.ok()) return hits.error();
    std::vector<LockState> out;
    for (es::SearchHit& hit : *hits) {
      auto doc = parse_lock_document(hit.source);
      auto state = doc.ok() ? make_state(std::move(*doc), hit.version) : Result<LockState>(doc.error());
      if (!state.ok() || document_id(state->doc) != hit.id) {
        log::warn("skipping a malformed lock document", {{"id", hit.id}});
        continue;
      }
      out.push_back(std::move(*state));
    }
    std::sort(out.begin(), out.end(), [](const LockState& a, const LockState& b) {
      return std::tie(a.doc.lock, a.doc.slot) < std::tie(b.doc.lock, b.doc.slot);
    });
    return out;
  }

  std::vector<Result<GrantOutcome>> grant(const std::vector<GrantRequest>& requests) override {
    if (Status ready = index_.ready_to_grant(); !ready.ok())
      return std::vector<Result<GrantOutcome>>(requests.size(), Result<GrantOutcome>(ready.error()));
    return write_grants(context_, requests);
  }

  Result<ReleaseOutcome> release(const HeldGrant& held, ReleaseScope scope) override {
    return release_held_grant(context_, held, scope);
  }

  std::vector<BatchRenewal> renew_all(const std::vector<Renewal>& renewals) override {
    std::vector<BatchRenewal> out;
    out.reserve(renewals.size());
    const std::size_t chunk = std::max<std::size_t>(1, options_.max_bulk_items);
    for (std::size_t begin = 0; begin < renewals.size(); begin += chunk) {
      const std::size_t end = std::min(renewals.size(), begin + chunk);
      std::vector<LockDocument> docs;
      std::vector<es::BulkOperation> operations;
      docs.reserve(end - begin);
      operations.reserve(end - begin);
      for (std::size_t i = begin; i < end; ++i) {
        const Renewal& r = renewals[i];
        docs.push_back(renewal_document(r.held.state, effective_ttl(r), r.renewed_at));
        operations.push_back(es::BulkOperation{es::BulkOperation::Type::kIndex, document_id(docs.back()),
                                               source_of(docs.back()), r.held.state.version});
      }
      const MonoTime sent = clock_.monotonic();
      auto bulk = api_.bulk(options_.index, operations);
      for (std::size_t i = begin; i < end; ++i) {
        const Renewal& r = renewals[i];
        LockDocument& doc = docs[i - begin];
        // Most renewals are applied: the held document is copied only when one is not.
        BatchRenewal renewal{RenewalResult::kFailed, std::nullopt, std::nullopt, std::nullopt};
        auto failed = [&](const Error& error) {
          renewal.held = r.held;
          renewal.error = error;
        };
        if (!bulk.ok()) {
          failed(bulk.error());
        } else if (i - begin >= bulk->items.size()) {
          failed(make_error(ErrorCode::kProtocol, "the _bulk answer lacks an item"));
        } else if (const es::BulkItemResult& item = bulk->items[i - begin]; item.error) {
          failed(*item.error);
        } else if (item.status == WriteStatus::kApplied) {
          auto state = make_state(std::move(doc), item.version);
          if (state.ok()) {
            renewal.result = RenewalResult::kRenewed;
            renewal.held = hold(r.held.key, std::move(*state), holder_deadline(sent, effective_ttl(r)));
          } else {
            failed(state.error());
          }
        } else {
          renewal.held = r.held;
          settle_renewal(r, doc, sent, renewal);
        }
        out.push_back(std::move(renewal));
      }
    }
    return out;
  }

 private:
  // A renewal whose holder may believe it holds until `valid_until`.
  HeldDocument hold(const LockKey& key, LockState state, MonoTime valid_until) {
    guard_.handed_out(valid_until);
    return HeldDocument{key, std::move(state), valid_until};
  }

  static Millis effective_ttl(const Renewal& r) {
    return r.ttl > Millis(0) ? r.ttl : Millis(r.held.state.doc.ttl_millis);
  }

  LockDocument renewal_document(const LockState& held, Millis ttl, std::optional<WallTime> at) {
    LockDocument doc = held.doc;
    // A renewal's time differs from the last one written, so its lost answer is recognised.
    const WallTime now =
        at ? to_millis(*at) : write_time(clock_, [&](WallTime t) { return t == held.doc.renewed_at; });
    doc.writer = options_.writer;
    doc.renewed_at = now;
    doc.expires_at = now + ttl;
    doc.ttl_millis = ttl.count();
    doc.fencing_token = held.token;
    return doc;
  }

  // After a renewal that did not plainly apply: read the document and compare.
  void settle_renewal(const Renewal& r, const LockDocument& doc, MonoTime sent, BatchRenewal& renewal) {
    auto read = read_documents(context_, {document_id(doc)});
    if (!read.ok()) {
      renewal.error = read.error();
      return;
    }
    DocumentRead& current = read->front();
    if (!current.ok()) {
      renewal.error = current.error();
      return;
    }
    // Gone without anyone taking it over: the document, or the whole index, was deleted.
    if (!*current) guard_.grant_vanished();
    if (!*current || !same_grant((*current)->doc, r.held.state.doc)) {
      renewal.result = RenewalResult::kLost;
      renewal.held.reset();
      renewal.current = std::move(*current);
      return;
    }
    if (same_write((*current)->doc, doc) && !((*current)->version == r.held.state.version)) {
      renewal.result = RenewalResult::kRenewed;
      renewal.held = hold(r.held.key, std::move(**current), holder_deadline(sent, effective_ttl(r)));
      return;
    }
    // Still our grant, but not confirmed by this write: the deadline stays where it was.
    renewal.held = HeldDocument{r.held.key, std::move(**current), r.held.valid_until};
    renewal.error =
        make_error(ErrorCode::kConflict, "renewal not confirmed; the lock is still held at a newer version");
  }

  std::unique_ptr<es::DocumentApi> owned_;  // null when the caller keeps the client
  es::DocumentApi& api_;
  Clock& clock_;
  StoreOptions options_;
  TokenGuard guard_;
  LockIndex index_;
  const GrantContext context_;  // the grant functions' view of the above
};

Status checked(StoreOptions& options) {
  if (auto status = validate_index_name(options.index); !status.ok()) return status.error();
  if (options.writer.empty()) options.writer = random_id("eslease-", 2);
  return validate_identity("writer", options.writer, false);
}

}  // namespace

Result<std::unique_ptr<LockStore>> make_es_lock_store(es::DocumentApi& api, Clock& clock,
                                                      StoreOptions options) {
  if (auto status = checked(options); !status.ok()) return status.error();
  return std::unique_ptr<LockStore>(std::make_unique<EsLockStore>(nullptr, api, clock, std::move(options)));
}

Result<std::unique_ptr<LockStore>> make_es_lock_store(std::unique_ptr<es::DocumentApi> api, Clock& clock,
                                                      StoreOptions options) {
  if (auto status = checked(options); !status.ok()) return status.error();
  es::DocumentApi& ref = *api;
  return std::unique_ptr<LockStore>(
      std::make_unique<EsLockStore>(std::move(api), ref, clock, std::move(options)));
}

}  // namespace eslease::lock
