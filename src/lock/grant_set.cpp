#include "lock/grant_set.h"

#include <algorithm>
#include <iomanip>
#include <random>
#include <set>
#include <sstream>

#include "common/log.h"
#include "lock/expiry.h"
#include "lock/grant_fence.h"

namespace eslease::lock {
namespace {

using es::BulkOperation;
using es::WriteStatus;

// A grant's undo, or a release, that keeps meeting lost answers gives up after this many
// rounds: what is left expires by TTL.
constexpr int kMaxRounds = 3;
// As the store's write_time: a grant's time differs from each replaced document's, waiting
// at most this many milliseconds for the clock.
constexpr int kMaxWriteTimeWaits = 5;

std::string random_grant_id() {
  std::random_device device;
  std::ostringstream out;
  out << "g-" << std::hex << std::setfill('0');
  for (int i = 0; i < 4; ++i) out << std::setw(8) << device();
  return out.str();
}

Status check_request(const GrantRequest& request, std::vector<std::string>& ids) {
  if (request.writes.empty() || request.writes.size() > kMaxGrantDocuments) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a grant writes 1 to " + std::to_string(kMaxGrantDocuments) + " documents, not " +
                          std::to_string(request.writes.size()));
  }
  if (request.capacity < 1 || request.capacity > kMaxCapacity)
    return make_error(ErrorCode::kInvalidArgument, "capacity must be 1 to " + std::to_string(kMaxCapacity));
  std::set<std::string> seen;
  for (const SlotWrite& write : request.writes) {
    if (write.key.name().find('#') != std::string::npos)
      return make_error(ErrorCode::kInvalidArgument, "lock name " + write.key.name() + " contains '#'");
    if (write.slot < 0 || write.slot >= request.capacity)
      return make_error(ErrorCode::kInvalidArgument, "slot " + std::to_string(write.slot) + " of " +
                                                         write.key.id() + " is outside capacity " +
                                                         std::to_string(request.capacity));
    ids.push_back(slot_document_id(write.key.id(), write.slot));
    if (!seen.insert(ids.back()).second)
      return make_error(ErrorCode::kInvalidArgument, "a grant names document " + ids.back() + " twice");
  }
  return {};
}

WallTime grant_time(Clock& clock, const GrantRequest& request) {
  auto taken = [&](WallTime t) {
    return std::any_of(request.writes.begin(), request.writes.end(),
                       [&](const SlotWrite& w) { return w.replaces && w.replaces->doc.acquired_at == t; });
  };
  WallTime now = to_millis(clock.now());
  for (int waited = 0; taken(now) && waited < kMaxWriteTimeWaits; ++waited) {
    clock.sleep_for(Millis(1), {});
    now = to_millis(clock.now());
  }
  return now;
}

}  // namespace

LockDocument granted_document(const LockKey& key, const Grantee& grantee, WallTime now, std::int64_t epoch,
                              std::int64_t transitions, const std::string& writer) {
  LockDocument doc;
  doc.lock = key.id();
  doc.lease = grantee.lease;
  doc.lease_uid = grantee.lease_uid;
  doc.holder = grantee.holder;
  doc.holder_uid = grantee.holder_uid;
  doc.node = grantee.node;
  doc.priority = grantee.priority;
  doc.acquired_at = now;
  doc.renewed_at = now;
  doc.expires_at = now + grantee.ttl;
  doc.ttl_millis = grantee.ttl.count();
  doc.fencing_token = epoch_base(epoch);  // "this base plus the version's own pair": document.h
  doc.transitions = transitions;
  doc.writer = writer;
  return doc;
}

namespace {

std::vector<LockDocument> grant_documents(const GrantContext& context, const GrantRequest& request,
                                          const std::vector<std::string>& ids) {
  const WallTime now = grant_time(context.clock, request);
  const bool several = request.writes.size() > 1;
  const std::string id = several ? random_grant_id() : std::string();
  std::vector<LockDocument> docs;
  docs.reserve(request.writes.size());
  for (const SlotWrite& write : request.writes) {
    LockDocument doc =
        granted_document(write.key, request.grantee, now, context.guard.epoch(),
                         write.replaces ? write.replaces->doc.transitions + 1 : 1, context.writer);
    doc.slot = write.slot;
    doc.capacity = request.capacity;
    doc.access = request.access;
    doc.grant = id;
    if (several) doc.grant_docs = ids;
    docs.push_back(std::move(doc));
  }
  return docs;
}

// Deletes each document at the version the grant wrote it, re-reading those whose delete's
// answer was lost. True when none of them is left.
bool undo(const GrantContext& context, const std::vector<std::string>& ids,
          const std::vector<LockDocument>& docs, std::vector<std::optional<es::Version>> written) {
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<BulkOperation> deletes;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < written.size(); ++i) {
      if (!written[i]) continue;
      deletes.push_back(BulkOperation{BulkOperation::Type::kDelete, ids[i], {}, *written[i]});
      which.push_back(i);
    }
    if (deletes.empty()) return true;
    auto removed = context.api.bulk(context.index, deletes);
    std::vector<std::string> unsure;
    std::vector<std::size_t> unsure_at;
    for (std::size_t n = 0; n < which.size(); ++n) {
      if (removed.ok() && !removed->items[n].error && removed->items[n].status) {
        written[which[n]].reset();  // deleted, or no longer at our version: not ours to delete
      } else {
        unsure.push_back(ids[which[n]]);
        unsure_at.push_back(which[n]);
      }
    }
    if (unsure.empty()) return true;
    auto current = context.api.mget(context.index, unsure);
    if (!current.ok()) continue;
    for (std::size_t n = 0; n < unsure.size(); ++n) {
      auto state = lock_state_of(unsure[n], (*current)[n], context.guard);
      const std::size_t i = unsure_at[n];
      if (state.ok() && *state && same_write((*state)->doc, docs[i])) {
        written[i] = (*state)->version;
      } else if (state.ok()) {
        written[i].reset();
      }
    }
  }
  log::warn("could not undo a partly applied grant; its documents expire by TTL",
            {{"document", ids.front()}});
  return false;
}

// Every document written: the grant, if its token is larger than every one known before.
Result<GrantOutcome> keep(const GrantContext& context, const GrantRequest& request,
                          const std::vector<std::string>& ids, const std::vector<LockDocument>& docs,
                          const std::vector<std::optional<es::Version>>& written, MonoTime sent,
                          std::int64_t floor) {
  HeldGrant held;
  held.id = docs.front().grant;
  held.valid_until = holder_deadline(sent, request.grantee.ttl);
  for (std::size_t i = 0; i < docs.size(); ++i) {
    auto token = fencing_token_of(*written[i], epoch_of(docs[i].fencing_token));
    if (!token.ok()) return token.error();
    held.token = std::max(held.token, *token);
  }
  if (!context.guard.accept(held.token, floor)) {
    const bool deleted = undo(context, ids, docs, written);
    log::error("a new grant's fencing token was not larger than one issued before; the grant is undone",
               {{"document", ids.front()},
                {"token", held.token},
                {"largest_known", floor},
                {"deleted", deleted ? "yes" : "no"}});
    return undone_grant(held.token, floor);
  }
  for (std::size_t i = 0; i < docs.size(); ++i) {
    auto state = make_state(docs[i], *written[i]);
    if (!state.ok()) return state.error();
    state->token = held.token;
    held.docs.push_back(
        HeldLock{request.writes[i].key, Grant{std::move(*state), held.valid_until}, Millis(0), {}});
  }
  context.guard.handed_out(held.valid_until);
  return GrantOutcome{std::move(held), {}, {}};
}

}  // namespace

Result<std::optional<LockState>> lock_state_of(const std::string& id, const es::GetResult& got,
                                               TokenGuard& guard) {
  if (!got.found) return std::optional<LockState>();
  auto doc = parse_lock_document(got.source);
  if (!doc.ok()) {
    Error error = doc.error();
    error.message = "lock " + id + ": " + error.message;
    return error;
  }
  if (document_id(*doc) != id) {
    return make_error(ErrorCode::kProtocol,
                      "document " + id + " claims to be " + document_id(*doc).substr(0, 300));
  }
  auto state = make_state(std::move(*doc), got.version);
  if (!state.ok()) return state.error();
  guard.saw(state->token);
  return std::optional<LockState>(std::move(*state));
}

Result<std::vector<std::vector<std::optional<LockState>>>> read_lock_slots(const GrantContext& context,
                                                                           const std::vector<LockKey>& keys,
                                                                           std::int64_t capacity) {
  if (capacity < 1 || capacity > kMaxCapacity)
    return make_error(ErrorCode::kInvalidArgument, "capacity must be 1 to " + std::to_string(kMaxCapacity));
  std::vector<std::string> ids;
  for (const LockKey& key : keys)
    for (std::int64_t k = 0; k < capacity; ++k) ids.push_back(slot_document_id(key.id(), k));
  std::vector<std::vector<std::optional<LockState>>> out(keys.size());
  const std::size_t chunk = std::max<std::size_t>(1, context.max_bulk_items);
  for (std::size_t begin = 0; begin < ids.size(); begin += chunk) {
    const std::vector<std::string> part(
        ids.begin() + static_cast<std::ptrdiff_t>(begin),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), begin + chunk)));
    auto got = context.api.mget(context.index, part);
    if (!got.ok()) return got.error();
    for (std::size_t n = 0; n < part.size(); ++n) {
      auto state = lock_state_of(part[n], (*got)[n], context.guard);
      if (!state.ok()) return state.error();
      out[(begin + n) / static_cast<std::size_t>(capacity)].push_back(std::move(*state));
    }
  }
  return out;
}

Result<GrantOutcome> write_grant(const GrantContext& context, const GrantRequest& request) {
  std::vector<std::string> ids;
  if (Status valid = check_request(request, ids); !valid.ok()) return valid.error();
  std::int64_t floor = context.guard.floor();
  for (const SlotWrite& w : request.writes)
    if (w.replaces) floor = std::max(floor, w.replaces->token);
  const std::vector<LockDocument> docs = grant_documents(context, request, ids);
  std::vector<BulkOperation> operations;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const auto& replaces = request.writes[i].replaces;
    operations.push_back(BulkOperation{replaces ? BulkOperation::Type::kIndex : BulkOperation::Type::kCreate,
                                       ids[i], to_json(docs[i]),
                                       replaces ? std::optional(replaces->version) : std::nullopt});
  }
  const MonoTime sent = context.clock.monotonic();
  auto bulk = context.api.bulk(context.index, operations);
  std::vector<std::optional<es::Version>> written(docs.size());
  bool all = bulk.ok();
  for (std::size_t i = 0; bulk.ok() && i < docs.size(); ++i) {
    const es::BulkItemResult& item = bulk->items[i];
    if (!item.error && item.status == WriteStatus::kApplied) {
      written[i] = item.version;
    } else {
      all = false;
    }
  }
  if (all) return keep(context, request, ids, docs, written, sent, floor);
  // Not every item applied, or the answer was lost: read what is there now.
  auto current = context.api.mget(context.index, ids);
  const MonoTime observed_at = context.clock.monotonic();
  if (!current.ok()) {
    if (bulk.ok()) undo(context, ids, docs, written);
    Error error = current.error();
    error.message = "grant outcome unknown, and its documents cannot be read: " + error.message;
    return error;
  }
  GrantOutcome outcome;
  outcome.observed_at = observed_at;
  all = true;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    auto state = lock_state_of(ids[i], (*current)[i], context.guard);
    if (state.ok() && *state && same_write((*state)->doc, docs[i])) {
      written[i] = (*state)->version;  // ours, also when the answer was lost
      outcome.current.emplace_back();
      continue;
    }
    all = false;
    written[i].reset();
    outcome.current.push_back(state.ok() ? std::move(*state) : std::nullopt);
  }
  if (all) return keep(context, request, ids, docs, written, sent, floor);
  undo(context, ids, docs, written);
  if (!bulk.ok()) {
    // Nothing of it stands; the caller may retry at once if the lock was free.
    const bool free = std::none_of(outcome.current.begin(), outcome.current.end(),
                                   [](const std::optional<LockState>& s) { return s.has_value(); });
    if (free) return bulk.error();
  }
  return outcome;
}

Result<ReleaseOutcome> release_held_grant(const GrantContext& context, const HeldGrant& held) {
  std::vector<std::string> ids;
  std::vector<std::optional<es::Version>> versions;
  for (const HeldLock& doc : held.docs) {
    ids.push_back(document_id(doc.grant.state.doc));
    versions.push_back(doc.grant.state.version);
  }
  bool ours = false;
  std::optional<Error> last;
  for (int round = 0; round < kMaxRounds; ++round) {
    std::vector<BulkOperation> deletes;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!versions[i]) continue;
      deletes.push_back(BulkOperation{BulkOperation::Type::kDelete, ids[i], {}, versions[i]});
      which.push_back(i);
    }
    if (deletes.empty()) return ours ? ReleaseOutcome::kReleased : ReleaseOutcome::kNotHeld;
    auto removed = context.api.bulk(context.index, deletes);
    std::vector<std::string> unsure;
    std::vector<std::size_t> unsure_at;
    for (std::size_t n = 0; n < which.size(); ++n) {
      if (removed.ok() && !removed->items[n].error && removed->items[n].status == WriteStatus::kApplied) {
        ours = true;
        versions[which[n]].reset();
      } else {
        if (!removed.ok()) last = removed.error();
        if (removed.ok() && removed->items[n].error) last = removed->items[n].error;
        unsure.push_back(ids[which[n]]);
        unsure_at.push_back(which[n]);
      }
    }
    if (unsure.empty()) continue;
    auto current = context.api.mget(context.index, unsure);
    if (!current.ok()) {
      last = current.error();
      continue;
    }
    for (std::size_t n = 0; n < unsure.size(); ++n) {
      auto state = lock_state_of(unsure[n], (*current)[n], context.guard);
      if (!state.ok()) return state.error();
      const std::size_t i = unsure_at[n];
      if (*state && same_grant((*state)->doc, held.docs[i].grant.state.doc)) {
        ours = true;
        versions[i] = (*state)->version;  // renewed by a write whose answer we never saw
      } else {
        versions[i].reset();  // gone, or another grant's now
      }
    }
  }
  if (std::none_of(versions.begin(), versions.end(), [](const auto& v) { return v.has_value(); }))
    return ours ? ReleaseOutcome::kReleased : ReleaseOutcome::kNotHeld;
  return last ? *last
              : make_error(ErrorCode::kConflict,
                           "cannot release grant " + held.id + ": its documents keep changing");
}

GrantRenewal renew_grant(LockStore& store, const HeldGrant& held, Millis ttl) {
  std::vector<HeldLock> docs = held.docs;
  for (HeldLock& doc : docs) doc.ttl = ttl;
  const std::vector<BatchRenewal> renewals = store.renew_all(docs);
  GrantRenewal out;
  HeldGrant next = held;
  next.docs.clear();
  bool failed = false;
  for (std::size_t i = 0; i < renewals.size() && i < held.docs.size(); ++i) {
    const BatchRenewal& r = renewals[i];
    if (r.result == BatchRenewal::Result::kLost) {
      if (out.why.empty()) out.why = "document " + document_id(held.docs[i].grant.state.doc) + " was lost";
      continue;
    }
    if (r.result == BatchRenewal::Result::kFailed && !failed) {
      failed = true;
      out.error = r.error ? *r.error : make_error(ErrorCode::kInternal, "renewal not confirmed");
    }
    HeldLock doc = held.docs[i];
    if (r.grant) doc.grant = *r.grant;
    doc.grant.state.token = held.token;
    next.docs.push_back(std::move(doc));
  }
  if (!out.why.empty()) {
    // The grant is over: give back the documents still ours, so nobody waits for their TTL.
    if (!next.docs.empty()) (void)store.release_grant(next);
    out.result = GrantRenewal::Result::kLost;
    return out;
  }
  next.valid_until = MonoTime::max();
  for (const HeldLock& doc : next.docs) next.valid_until = std::min(next.valid_until, doc.grant.valid_until);
  out.result = failed ? GrantRenewal::Result::kFailed : GrantRenewal::Result::kRenewed;
  out.grant = std::move(next);
  return out;
}

}  // namespace eslease::lock
