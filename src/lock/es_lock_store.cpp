#include <algorithm>
#include <iomanip>
#include <mutex>
#include <random>
#include <sstream>

#include "common/log.h"
#include "lock/expiry.h"
#include "lock/grant_fence.h"
#include "lock/grant_set.h"
#include "lock/lock_index.h"
#include "lock/lock_store.h"

namespace eslease::lock {
namespace {

using es::WriteStatus;

// Listing reads at most this many documents (Elasticsearch's default max_result_window).
constexpr int kMaxListed = 10000;
// A write time equal to the lock's previous one waits for the clock this many times (1 ms
// each); a clock that does not move is a fake one or broken, and the write goes ahead.
constexpr int kMaxWriteTimeWaits = 5;

Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

Status validate_grantee(const Grantee& grantee) {
  if (auto s = validate_identity("leaseUID", grantee.lease_uid, false); !s.ok()) return s;
  if (auto s = validate_identity("holder", grantee.holder, false); !s.ok()) return s;
  if (auto s = validate_identity("lease", grantee.lease, true); !s.ok()) return s;
  if (auto s = validate_identity("holderUID", grantee.holder_uid, true); !s.ok()) return s;
  if (auto s = validate_identity("node", grantee.node, true); !s.ok()) return s;
  if (auto s = validate_identity("priority", grantee.priority, true); !s.ok()) return s;
  if (grantee.ttl <= Millis(0))
    return make_error(ErrorCode::kInvalidArgument, "the lock TTL must be positive");
  return {};
}

class EsLockStore final : public LockStore {
 public:
  EsLockStore(std::unique_ptr<es::DocumentApi> owned, es::DocumentApi& api, Clock& clock,
              StoreOptions options)
      : owned_(std::move(owned)),
        api_(api),
        clock_(clock),
        options_(std::move(options)),
        guard_(clock, options_.on_fencing),
        index_(api, options_.index, guard_) {}

  Status prepare() override { return index_.prepare(!options_.awaits_token_history); }

  Status check_tokens(const IssuedBeforeSource& issued_before) override {
    guard_.set_source(issued_before);
    return index_.check_now();
  }

  std::optional<std::string> grants_refused() const override { return guard_.refusal(); }

  Result<std::optional<LockState>> get(const LockKey& key) override { return read(key.id()); }

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
    std::sort(out.begin(), out.end(),
              [](const LockState& a, const LockState& b) { return a.doc.lock < b.doc.lock; });
    return out;
  }

  Result<AcquireOutcome> acquire(const LockKey& key, const Grantee& grantee) override {
    if (auto s = validate_grantee(grantee); !s.ok()) return s.error();
    if (Status ready = index_.ready_to_grant(); !ready.ok()) return ready.error();
    const std::int64_t floor = guard_.floor();
    const LockDocument doc = grant_document(key, grantee, 1);
    const MonoTime sent = clock_.monotonic();
    auto written = api_.create(options_.index, key.id(), to_json(doc));
    return keep_if_larger(api_, options_.index, guard_, key,
                          settle_grant(key, doc, grantee.ttl, sent, written, "acquire"), floor);
  }

  Result<AcquireOutcome> take_over(const LockKey& key, const LockState& dead,
                                   const Grantee& grantee) override {
    if (auto s = validate_grantee(grantee); !s.ok()) return s.error();
    if (Status ready = index_.ready_to_grant(); !ready.ok()) return ready.error();
    const std::int64_t floor = std::max(guard_.floor(), dead.token);
    const LockDocument doc = grant_document(key, grantee, dead.doc.transitions + 1, &dead.doc);
    const MonoTime sent = clock_.monotonic();
    auto written = api_.index(options_.index, key.id(), to_json(doc), dead.version);
    return keep_if_larger(api_, options_.index, guard_, key,
                          settle_grant(key, doc, grantee.ttl, sent, written, "take over"), floor);
  }

  Result<RenewOutcome> renew(const LockKey& key, const Grant& held, Millis ttl) override {
    const Millis effective_ttl = ttl > Millis(0) ? ttl : Millis(held.state.doc.ttl_millis);
    const LockDocument doc = renewal_document(held, effective_ttl);
    const MonoTime sent = clock_.monotonic();
    auto written = api_.index(options_.index, document_id(doc), to_json(doc), held.state.version);
    if (written.ok() && written->status == WriteStatus::kApplied) {
      auto state = make_state(doc, written->version);
      if (!state.ok()) return state.error();
      return RenewOutcome{hold(std::move(*state), holder_deadline(sent, effective_ttl)), true, std::nullopt};
    }
    auto settled = settle_renewal(key, held, doc, effective_ttl, sent);
    if (!settled.ok()) {
      if (!written.ok())
        return with_context(settled.error(), "renewal outcome unknown (" + written.error().describe() + ")");
      return settled.error();
    }
    // The renewal did not apply and the lock is still ours at the version we sent: report
    // the write's own failure so the caller retries.
    if (!written.ok() && settled->grant && !settled->renewed &&
        settled->grant->state.version == held.state.version) {
      return written.error();
    }
    return settled;
  }

  Result<ReleaseOutcome> release(const LockKey& key, const Grant& held, ReleaseScope scope) override {
    es::Version version = held.state.version;
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto removed = api_.remove(options_.index, document_id(held.state.doc), version);
      if (removed.ok() && removed->status == WriteStatus::kApplied) return ReleaseOutcome::kReleased;
      auto current = read(document_id(held.state.doc));
      if (!current.ok()) {
        if (!removed.ok())
          return with_context(current.error(),
                              "release outcome unknown (" + removed.error().describe() + ")");
        return current.error();
      }
      if (!*current) return ReleaseOutcome::kReleased;
      if (!same_grant((*current)->doc, held.state.doc)) return ReleaseOutcome::kNotHeld;
      if (!removed.ok() && (*current)->version == version) return removed.error();
      if (scope == ReleaseScope::kThisVersion) return ReleaseOutcome::kNotHeld;
      // Still the grant, at a version written by a renewal whose answer we never saw, or
      // by another process: the holder lets go of the grant, whichever version it is at.
      version = (*current)->version;
    }
    return make_error(ErrorCode::kConflict, "cannot release " + key.id() + ": its document keeps changing");
  }

  // ceil(n / max_bulk_items) _mget requests.
  Result<std::vector<Result<std::optional<LockState>>>> get_many(const std::vector<LockKey>& keys) override {
    std::vector<Result<std::optional<LockState>>> out;
    out.reserve(keys.size());
    const std::size_t chunk = std::max<std::size_t>(1, options_.max_bulk_items);
    for (std::size_t begin = 0; begin < keys.size(); begin += chunk) {
      std::vector<std::string> ids;
      for (std::size_t i = begin; i < std::min(keys.size(), begin + chunk); ++i) ids.push_back(keys[i].id());
      auto got = api_.mget(options_.index, ids);
      if (!got.ok()) return got.error();
      for (std::size_t i = 0; i < ids.size(); ++i) out.push_back(state_of(ids[i], (*got)[i]));
    }
    return out;
  }

  // ceil(n / max_bulk_items) _bulk creates, plus one _mget per batch for the items that met
  // a conflict or whose outcome is unknown (compared with what was written, as acquire does).
  std::vector<Result<AcquireOutcome>> acquire_many(
      const std::vector<std::pair<LockKey, Grantee>>& grantees) override {
    if (Status ready = index_.ready_to_grant(); !ready.ok())
      return std::vector<Result<AcquireOutcome>>(grantees.size(), Result<AcquireOutcome>(ready.error()));
    const std::int64_t floor = guard_.floor();
    std::vector<Result<AcquireOutcome>> out;
    out.reserve(grantees.size());
    const std::size_t chunk = std::max<std::size_t>(1, options_.max_bulk_items);
    for (std::size_t begin = 0; begin < grantees.size(); begin += chunk) {
      auto results = acquire_chunk(grantees, begin, std::min(grantees.size(), begin + chunk));
      keep_larger_grants(api_, options_.index, guard_, grantees, begin, results, floor);
      for (auto& r : results) out.push_back(std::move(r));
    }
    return out;
  }

  Result<std::vector<std::vector<std::optional<LockState>>>> read_slots(const std::vector<LockKey>& keys,
                                                                        std::int64_t capacity) override {
    return read_lock_slots(grants(), keys, capacity);
  }

  Result<GrantOutcome> grant(const GrantRequest& request) override {
    if (auto s = validate_grantee(request.grantee); !s.ok()) return s.error();
    if (Status ready = index_.ready_to_grant(); !ready.ok()) return ready.error();
    return write_grant(grants(), request);
  }

  Result<ReleaseOutcome> release_grant(const HeldGrant& held) override {
    return release_held_grant(grants(), held);
  }

  std::vector<BatchRenewal> renew_all(const std::vector<HeldLock>& held) override {
    std::vector<BatchRenewal> out;
    out.reserve(held.size());
    const std::size_t chunk = std::max<std::size_t>(1, options_.max_bulk_items);
    for (std::size_t begin = 0; begin < held.size(); begin += chunk) {
      const std::size_t end = std::min(held.size(), begin + chunk);
      std::vector<LockDocument> docs;
      std::vector<es::BulkOperation> operations;
      docs.reserve(end - begin);
      operations.reserve(end - begin);
      for (std::size_t i = begin; i < end; ++i) {
        const Millis ttl = effective_ttl(held[i]);
        docs.push_back(renewal_document(held[i].grant, ttl, held[i].renewed_at));
        operations.push_back(es::BulkOperation{es::BulkOperation::Type::kIndex, document_id(docs.back()),
                                               to_json(docs.back()), held[i].grant.state.version});
      }
      const MonoTime sent = clock_.monotonic();
      auto bulk = api_.bulk(options_.index, operations);
      for (std::size_t i = begin; i < end; ++i) {
        const HeldLock& lock = held[i];
        BatchRenewal renewal{lock.key, BatchRenewal::Result::kFailed, lock.grant, std::nullopt};
        const LockDocument& doc = docs[i - begin];
        if (!bulk.ok()) {
          renewal.error = bulk.error();
        } else if (const es::BulkItemResult& item = bulk->items[i - begin]; item.error) {
          renewal.error = item.error;
        } else if (item.status == WriteStatus::kApplied) {
          auto state = make_state(doc, item.version);
          if (state.ok()) {
            renewal.result = BatchRenewal::Result::kRenewed;
            renewal.grant = hold(std::move(*state), holder_deadline(sent, effective_ttl(lock)));
          } else {
            renewal.error = state.error();
          }
        } else {
          apply(settle_renewal(lock.key, lock.grant, doc, effective_ttl(lock), sent), renewal);
        }
        out.push_back(std::move(renewal));
      }
    }
    return out;
  }

 private:
  GrantContext grants() {
    return GrantContext{api_, options_.index, clock_, guard_, options_.writer, options_.max_bulk_items};
  }

  // A grant, or a renewal, whose holder may believe it holds until `valid_until`.
  Grant hold(LockState state, MonoTime valid_until) {
    guard_.handed_out(valid_until);
    return Grant{std::move(state), valid_until};
  }

  // acquire_chunk's creates whose answer did not settle them (`unsettled`: indexes from
  // `begin`), read back with one _mget: ours when the document is the one we wrote.
  void settle_by_reading(const std::vector<std::pair<LockKey, Grantee>>& grantees, std::size_t begin,
                         const std::vector<LockDocument>& docs, const Result<es::BulkResult>& bulk,
                         MonoTime sent, const std::vector<std::size_t>& unsettled,
                         std::vector<std::optional<Result<AcquireOutcome>>>& results) {
    std::vector<std::string> ids;
    ids.reserve(unsettled.size());
    for (std::size_t k : unsettled) ids.push_back(grantees[begin + k].first.id());
    auto current = api_.mget(options_.index, ids);
    const MonoTime observed_at = clock_.monotonic();
    for (std::size_t n = 0; n < unsettled.size(); ++n) {
      const std::size_t k = unsettled[n];
      if (!current.ok()) {
        results[k] = Result<AcquireOutcome>(current.error());
        continue;
      }
      auto state = state_of(ids[n], (*current)[n]);
      if (!state.ok()) {
        results[k] = Result<AcquireOutcome>(state.error());
      } else if (*state && same_write((*state)->doc, docs[k])) {
        results[k] = Result<AcquireOutcome>(
            AcquireOutcome{Grant{std::move(**state), holder_deadline(sent, grantees[begin + k].second.ttl)},
                           std::nullopt,
                           {}});
      } else if (!*state && !bulk.ok()) {
        results[k] = Result<AcquireOutcome>(bulk.error());  // not applied; the lock is free
      } else {
        results[k] = Result<AcquireOutcome>(AcquireOutcome{std::nullopt, std::move(*state), observed_at});
      }
    }
  }

  // One _bulk of creates for grantees [begin, end), then one _mget for the items to settle.
  std::vector<Result<AcquireOutcome>> acquire_chunk(const std::vector<std::pair<LockKey, Grantee>>& grantees,
                                                    std::size_t begin, std::size_t end) {
    std::vector<LockDocument> docs;
    std::vector<es::BulkOperation> operations;
    std::vector<std::optional<Error>> invalid(end - begin);
    for (std::size_t i = begin; i < end; ++i) {
      const auto& [key, grantee] = grantees[i];
      if (auto s = validate_grantee(grantee); !s.ok()) invalid[i - begin] = s.error();
      docs.push_back(grant_document(key, grantee, 1));
      if (!invalid[i - begin])
        operations.push_back(
            es::BulkOperation{es::BulkOperation::Type::kCreate, key.id(), to_json(docs.back()), {}});
    }
    const MonoTime sent = clock_.monotonic();
    auto bulk = api_.bulk(options_.index, operations);
    std::vector<std::size_t> unsettled;  // indexes (from begin) to resolve by reading
    std::vector<std::optional<Result<AcquireOutcome>>> results(end - begin);
    std::size_t item = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t k = i - begin;
      if (invalid[k]) {
        results[k] = Result<AcquireOutcome>(*invalid[k]);
        continue;
      }
      const std::size_t at = item++;
      if (bulk.ok() && bulk->items[at].status == WriteStatus::kApplied && !bulk->items[at].error) {
        auto state = make_state(docs[k], bulk->items[at].version);
        results[k] = state.ok() ? Result<AcquireOutcome>(AcquireOutcome{
                                      Grant{std::move(*state), holder_deadline(sent, grantees[i].second.ttl)},
                                      std::nullopt,
                                      {}})
                                : Result<AcquireOutcome>(state.error());
      } else {
        unsettled.push_back(k);
      }
    }
    if (!unsettled.empty()) settle_by_reading(grantees, begin, docs, bulk, sent, unsettled, results);
    std::vector<Result<AcquireOutcome>> out;
    out.reserve(results.size());
    for (auto& r : results) out.push_back(std::move(*r));
    return out;
  }

  static Millis effective_ttl(const HeldLock& lock) {
    return lock.ttl > Millis(0) ? lock.ttl : Millis(lock.grant.state.doc.ttl_millis);
  }

  static void apply(const Result<RenewOutcome>& settled, BatchRenewal& renewal) {
    if (!settled.ok()) {
      renewal.error = settled.error();
    } else if (!settled->grant) {
      renewal.result = BatchRenewal::Result::kLost;
      renewal.grant.reset();
    } else if (settled->renewed) {
      renewal.result = BatchRenewal::Result::kRenewed;
      renewal.grant = settled->grant;
    } else {
      renewal.grant = settled->grant;
      renewal.error = make_error(ErrorCode::kConflict,
                                 "renewal not confirmed; the lock is still held at a newer version");
    }
  }

  // The wall time to write, to the millisecond. It never runs ahead of the clock: the
  // expiresAt a holder is shown must not be later than the deadline this store reports
  // (`sent` + TTL, on the monotonic clock), or a successor could be granted while the
  // holder still believes it holds. It differs from `previous`, this lock's last written
  // time, so a write whose answer was lost is recognised as ours (`same_write`); when the
  // clock has not yet moved past `previous`, the store waits for it (about a millisecond).
  WallTime write_time(WallTime previous) {
    WallTime now = to_millis(clock_.now());
    for (int waited = 0; now == previous && waited < kMaxWriteTimeWaits; ++waited) {
      clock_.sleep_for(Millis(1), {});
      now = to_millis(clock_.now());
    }
    return now;
  }

  // `replaced` is the document a takeover overwrites (none for an acquire).
  LockDocument grant_document(const LockKey& key, const Grantee& grantee, std::int64_t transitions,
                              const LockDocument* replaced = nullptr) {
    const WallTime now = write_time(replaced ? replaced->acquired_at : WallTime{});
    return granted_document(key, grantee, now, guard_.epoch(), transitions, options_.writer);
  }

  LockDocument renewal_document(const Grant& held, Millis ttl, std::optional<WallTime> at = std::nullopt) {
    LockDocument doc = held.state.doc;
    const WallTime now = at ? to_millis(*at) : write_time(held.state.doc.renewed_at);
    doc.writer = options_.writer;
    doc.renewed_at = now;
    doc.expires_at = now + ttl;
    doc.ttl_millis = ttl.count();
    doc.fencing_token = held.state.token;
    return doc;
  }

  Result<std::optional<LockState>> read(const std::string& id) {
    auto got = api_.get(options_.index, id);
    if (!got.ok()) return got.error();
    return state_of(id, *got);
  }

  Result<std::optional<LockState>> state_of(const std::string& id, const es::GetResult& got) {
    return lock_state_of(id, got, guard_);
  }

  // After a granting write that did not plainly apply: read the document and compare.
  Result<AcquireOutcome> settle_grant(const LockKey& key, const LockDocument& doc, Millis ttl, MonoTime sent,
                                      const Result<es::WriteResult>& written, const char* what) {
    if (written.ok() && written->status == WriteStatus::kApplied) {
      auto state = make_state(doc, written->version);
      if (!state.ok()) return state.error();
      return AcquireOutcome{Grant{std::move(*state), holder_deadline(sent, ttl)}, std::nullopt, {}};
    }
    auto current = read(key.id());
    const MonoTime observed_at = clock_.monotonic();
    if (!current.ok()) {
      if (!written.ok()) {
        return with_context(current.error(), std::string(what) + " outcome unknown (" +
                                                 written.error().describe() +
                                                 "), and the lock cannot be read");
      }
      return current.error();
    }
    if (*current && same_write((*current)->doc, doc)) {
      // Our own write, applied although its answer was lost or a retry met it as a conflict.
      return AcquireOutcome{Grant{std::move(**current), holder_deadline(sent, ttl)}, std::nullopt, {}};
    }
    if (!written.ok() && !*current) return written.error();  // not applied; the lock is free
    return AcquireOutcome{std::nullopt, std::move(*current), observed_at};
  }

  // After a renewal that did not plainly apply: read the document and compare.
  Result<RenewOutcome> settle_renewal(const LockKey& /*key*/, const Grant& held, const LockDocument& doc,
                                      Millis ttl, MonoTime sent) {
    auto current = read(document_id(doc));
    if (!current.ok()) return current.error();
    // Gone without anyone taking it over: the document, or the whole index, was deleted.
    if (!*current) guard_.grant_vanished();
    if (!*current || !same_grant((*current)->doc, held.state.doc)) {
      return RenewOutcome{std::nullopt, false, std::move(*current)};
    }
    if (same_write((*current)->doc, doc) && !((*current)->version == held.state.version)) {
      return RenewOutcome{hold(std::move(**current), holder_deadline(sent, ttl)), true, std::nullopt};
    }
    // Still our grant, but not confirmed by this write: the deadline stays where it was.
    return RenewOutcome{Grant{std::move(**current), held.valid_until}, false, std::nullopt};
  }

  std::unique_ptr<es::DocumentApi> owned_;  // null when the caller keeps the client
  es::DocumentApi& api_;
  Clock& clock_;
  StoreOptions options_;
  TokenGuard guard_;
  LockIndex index_;
};

std::string random_writer() {
  std::random_device device;
  std::ostringstream out;
  out << "eslease-" << std::hex << std::setfill('0') << std::setw(8) << device() << std::setw(8) << device();
  return out.str();
}

Status checked(StoreOptions& options) {
  if (auto status = validate_index_name(options.index); !status.ok()) return status.error();
  if (options.writer.empty()) options.writer = random_writer();
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
