#include "lock/grants.h"

#include <algorithm>
#include <set>

#include "common/log.h"
#include "lock/expiry.h"

namespace eslease::lock {
namespace {

using es::BulkOperation;
using es::WriteStatus;

// An undo that keeps meeting lost answers gives up after this many rounds: what is left
// expires by TTL.
constexpr int kMaxUndoRounds = 3;
// A release follows a grant's renewals (kGrant) for at most this many rounds.
constexpr int kMaxReleaseRounds = 3;
// A write time that is taken waits for the clock this many times (1 ms each); a clock that
// does not move is a fake one or broken, and the write goes ahead.
constexpr int kMaxWriteTimeWaits = 5;

// What Elasticsearch answered for one write: its status (nullopt: no answer we can trust) and
// version, or why the answer is missing.
struct Written {
  std::optional<WriteStatus> status;
  es::Version version;
  std::optional<Error> error;
  bool applied() const { return status == WriteStatus::kApplied; }
};

// One write as a single request (create, conditional index or delete), several as one _bulk.
std::vector<Written> write_documents(const GrantContext& context, const std::vector<BulkOperation>& ops) {
  std::vector<Written> out(ops.size());
  if (ops.empty()) return out;
  if (ops.size() == 1) {
    const BulkOperation& op = ops.front();
    Result<es::WriteResult> one = op.type == BulkOperation::Type::kCreate
                                      ? context.api.create(context.index, op.id, op.source)
                                  : op.type == BulkOperation::Type::kIndex
                                      ? context.api.index(context.index, op.id, op.source, op.if_match)
                                      : context.api.remove(context.index, op.id, op.if_match);
    if (!one.ok()) {
      out[0].error = one.error();
    } else if (one->status != WriteStatus::kApplied && one->earlier_attempt_may_have_applied) {
      // A refusal may echo our own earlier attempt: only a read can tell.
      out[0].error =
          make_error(ErrorCode::kUnavailable, "the write's answer was lost and a retry was refused");
    } else {
      out[0].status = one->status;
      out[0].version = one->version;
    }
    return out;
  }
  auto bulk = context.api.bulk(context.index, ops);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!bulk.ok()) {
      out[i].error = bulk.error();
    } else if (i >= bulk->items.size()) {
      out[i].error = make_error(ErrorCode::kProtocol, "the _bulk answer lacks an item");
    } else if (bulk->items[i].error) {
      out[i].error = bulk->items[i].error;
    } else {
      out[i].status = bulk->items[i].status;
      out[i].version = bulk->items[i].version;
    }
  }
  return out;
}

// kInvalidArgument when the grantee cannot be written.
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

Status check_request(const GrantRequest& request) {
  if (request.writes.empty() || request.writes.size() > kMaxGrantDocuments) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a grant writes 1 to " + std::to_string(kMaxGrantDocuments) + " documents, not " +
                          std::to_string(request.writes.size()));
  }
  if (request.capacity < 1 || request.capacity > kMaxCapacity)
    return make_error(ErrorCode::kInvalidArgument, "capacity must be 1 to " + std::to_string(kMaxCapacity));
  if (Status grantee = validate_grantee(request.grantee); !grantee.ok()) return grantee;
  std::set<std::string> seen;
  for (const SlotWrite& write : request.writes) {
    if (write.slot < 0 || write.slot >= request.capacity)
      return make_error(ErrorCode::kInvalidArgument, "slot " + std::to_string(write.slot) + " of " +
                                                         write.key.id() + " is outside capacity " +
                                                         std::to_string(request.capacity));
    const std::string id = slot_document_id(write.key.id(), write.slot);
    if (!seen.insert(id).second)
      return make_error(ErrorCode::kInvalidArgument, "a grant names document " + id + " twice");
  }
  return {};
}

// A grant's time differs from each replaced document's, so the new grant is never taken for
// the one it replaces.
WallTime grant_time(Clock& clock, const GrantRequest& request) {
  return write_time(clock, [&](WallTime t) {
    return std::any_of(request.writes.begin(), request.writes.end(),
                       [&](const SlotWrite& w) { return w.replaces && w.replaces->doc.acquired_at == t; });
  });
}

// One request on its way: what it writes and what is known of each write.
struct Attempt {
  const GrantRequest* request = nullptr;
  std::vector<std::string> ids;
  std::vector<LockDocument> docs;
  std::int64_t floor = 0;  // every token known before it was written
  std::vector<Written> answers;
  std::vector<std::optional<es::Version>> written;  // the versions known to be ours
  MonoTime sent{};
  std::optional<Result<GrantOutcome>> outcome;
};

Attempt prepare_attempt(const GrantContext& context, const GrantRequest& request) {
  Attempt a;
  a.request = &request;
  a.floor = context.guard.floor();
  for (const SlotWrite& w : request.writes)
    if (w.replaces) a.floor = std::max(a.floor, w.replaces->token);
  const WallTime now = grant_time(context.clock, request);
  const bool several = request.writes.size() > 1;
  const std::string id = several ? random_id("g-", 4) : std::string();
  for (const SlotWrite& write : request.writes) a.ids.push_back(slot_document_id(write.key.id(), write.slot));
  const Grantee& grantee = request.grantee;
  for (const SlotWrite& write : request.writes) {
    LockDocument doc;
    doc.lock = write.key.id();
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
    // "This base plus the version's own pair": document.h.
    doc.fencing_token = epoch_base(context.guard.epoch());
    doc.transitions = write.replaces ? write.replaces->doc.transitions + 1 : 1;
    doc.writer = context.writer;
    doc.slot = write.slot;
    doc.capacity = request.capacity;
    doc.access = api::effective_access(request.capacity, request.access);
    doc.grant = id;
    if (several) doc.grant_docs = a.ids;
    a.docs.push_back(std::move(doc));
  }
  a.written.resize(a.docs.size());
  return a;
}

// Deletes every document still pending, each at its version, in one request; a delete whose
// answer `settles` it is done with. The others are unsure: which they are, with their errors.
struct UnsureDeletes {
  std::vector<std::size_t> at;
  std::vector<std::string> ids;
  std::vector<std::optional<Error>> errors;
};

UnsureDeletes delete_pending(const GrantContext& context, const std::vector<std::string>& ids,
                             std::vector<std::optional<es::Version>>& pending,
                             bool (*settles)(const Written&)) {
  std::vector<BulkOperation> deletes;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!pending[i]) continue;
    deletes.push_back(BulkOperation{BulkOperation::Type::kDelete, ids[i], {}, *pending[i]});
    which.push_back(i);
  }
  UnsureDeletes unsure;
  const std::vector<Written> removed = write_documents(context, deletes);
  for (std::size_t n = 0; n < which.size(); ++n) {
    if (settles(removed[n])) {
      pending[which[n]].reset();
      continue;
    }
    unsure.at.push_back(which[n]);
    unsure.ids.push_back(ids[which[n]]);
    unsure.errors.push_back(removed[n].error);
  }
  return unsure;
}

// What a document read after a delete of it (at `tried`) that was not plainly applied means
// for a release: the version to delete next, or none (gone, or someone else's now).
struct ReleaseStep {
  std::optional<es::Version> next;
  bool left_to_others = false;
};

Result<ReleaseStep> after_unsure_delete(const DocumentRead& state, const LockDocument& held,
                                        const es::Version& tried, const std::optional<Error>& failure,
                                        ReleaseScope scope) {
  if (!state.ok()) return state.error();
  if (!*state) return ReleaseStep{};  // gone: deleted by an answer we never saw, or by someone else
  const bool ours = same_grant((*state)->doc, held);
  if (ours && (*state)->version == tried) {
    // Still there at the version we tried to delete: the delete failed; say why.
    if (failure) return *failure;
    return ReleaseStep{tried, false};
  }
  // Another grant's now, or (kThisVersion) moved on: a later expiresAt its holder may have seen.
  if (!ours || scope == ReleaseScope::kThisVersion) return ReleaseStep{std::nullopt, true};
  // Still the grant, at a version written by a renewal whose answer we never saw, or by another
  // process: the holder lets go of the grant, whichever version it is at.
  return ReleaseStep{(*state)->version, false};
}

// Deletes each document at the version the grant wrote it, re-reading those whose delete's
// answer was lost. True when none of them is left.
bool undo(const GrantContext& context, const std::vector<std::string>& ids,
          const std::vector<LockDocument>& docs, std::vector<std::optional<es::Version>> written) {
  for (int round = 0; round < kMaxUndoRounds; ++round) {
    // Any answer settles a delete: deleted, or no longer at our version (not ours to delete).
    const UnsureDeletes unsure =
        delete_pending(context, ids, written, [](const Written& w) { return w.status.has_value(); });
    if (unsure.ids.empty()) return true;
    auto current = read_documents(context, unsure.ids);
    if (!current.ok()) continue;
    for (std::size_t n = 0; n < unsure.ids.size(); ++n) {
      const DocumentRead& state = (*current)[n];
      const std::size_t i = unsure.at[n];
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
Result<GrantOutcome> keep(const GrantContext& context, const Attempt& a) {
  const GrantRequest& request = *a.request;
  HeldGrant held;
  held.id = a.docs.front().grant;
  held.valid_until = holder_deadline(a.sent, request.grantee.ttl);
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    auto token = fencing_token_of(*a.written[i], epoch_of(a.docs[i].fencing_token));
    if (!token.ok()) return token.error();
    held.token = std::max(held.token, *token);
  }
  if (!context.guard.accept(held.token, a.floor)) {
    const bool deleted = undo(context, a.ids, a.docs, a.written);
    log::error(
        "a new grant's fencing token was not larger than one issued before; the grant is undone and "
        "grants wait for the lock index's token epoch to be raised",
        {{"document", a.ids.front()},
         {"token", held.token},
         {"largest_known", a.floor},
         {"deleted", deleted ? "yes" : "no"}});
    return make_error(ErrorCode::kGrantsPaused, "the new grant's fencing token " +
                                                    std::to_string(held.token) +
                                                    " is not larger than token " + std::to_string(a.floor) +
                                                    " issued before: the lock index was re-created or "
                                                    "restored; the grant was undone");
  }
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    auto state = make_state(a.docs[i], *a.written[i]);
    if (!state.ok()) return state.error();
    state->token = held.token;
    held.docs.push_back(HeldDocument{request.writes[i].key, std::move(*state), held.valid_until});
  }
  context.guard.handed_out(held.valid_until);
  return GrantOutcome{std::move(held), {}, {}};
}

// The attempt's documents as read after a write that did not plainly apply.
void settle(const GrantContext& context, Attempt& a, const std::vector<DocumentRead>& read,
            MonoTime observed_at) {
  GrantOutcome outcome;
  outcome.observed_at = observed_at;
  bool all = true;
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    const DocumentRead& state = read[i];
    if (state.ok() && *state && same_write((*state)->doc, a.docs[i])) {
      a.written[i] = (*state)->version;  // ours, also when the answer was lost
      outcome.current.emplace_back();
      continue;
    }
    all = false;
    a.written[i].reset();
    outcome.current.push_back(state.ok() ? *state : std::nullopt);
  }
  if (all) {
    a.outcome = keep(context, a);
    return;
  }
  undo(context, a.ids, a.docs, a.written);
  // A document that is not a lock document (malformed, another lock's) is granted over by nobody.
  const auto unreadable =
      std::find_if(read.begin(), read.end(), [](const DocumentRead& r) { return !r.ok(); });
  if (unreadable != read.end()) {
    a.outcome = unreadable->error();
    return;
  }
  // Nothing of it stands and the write itself failed: the caller may retry at once.
  const bool free = std::none_of(outcome.current.begin(), outcome.current.end(),
                                 [](const std::optional<LockState>& s) { return s.has_value(); });
  const auto failed =
      std::find_if(a.answers.begin(), a.answers.end(), [](const Written& w) { return w.error; });
  if (free && failed != a.answers.end()) {
    a.outcome = *failed->error;
    return;
  }
  a.outcome = std::move(outcome);
}

// Writes the attempts in one request, then settles those not plainly applied with one read.
void write_batch(const GrantContext& context, const std::vector<Attempt*>& batch) {
  std::vector<BulkOperation> ops;
  for (const Attempt* a : batch) {
    for (std::size_t i = 0; i < a->docs.size(); ++i) {
      const auto& replaces = a->request->writes[i].replaces;
      ops.push_back(BulkOperation{replaces ? BulkOperation::Type::kIndex : BulkOperation::Type::kCreate,
                                  a->ids[i], source_of(a->docs[i]),
                                  replaces ? std::optional(replaces->version) : std::nullopt});
    }
  }
  const MonoTime sent = context.clock.monotonic();
  const std::vector<Written> answers = write_documents(context, ops);
  std::vector<Attempt*> unsettled;
  std::vector<std::string> ids;
  std::size_t at = 0;
  for (Attempt* a : batch) {
    a->sent = sent;
    a->answers.assign(answers.begin() + static_cast<std::ptrdiff_t>(at),
                      answers.begin() + static_cast<std::ptrdiff_t>(at + a->docs.size()));
    at += a->docs.size();
    for (std::size_t i = 0; i < a->docs.size(); ++i)
      if (a->answers[i].applied()) a->written[i] = a->answers[i].version;
    if (std::all_of(a->answers.begin(), a->answers.end(), [](const Written& w) { return w.applied(); })) {
      a->outcome = keep(context, *a);
    } else {
      unsettled.push_back(a);
      ids.insert(ids.end(), a->ids.begin(), a->ids.end());
    }
  }
  if (unsettled.empty()) return;
  auto current = read_documents(context, ids);
  const MonoTime observed_at = context.clock.monotonic();
  at = 0;
  for (Attempt* a : unsettled) {
    if (!current.ok()) {
      undo(context, a->ids, a->docs, a->written);
      Error error = current.error();
      error.message = "grant outcome unknown, and its documents cannot be read: " + error.message;
      a->outcome = error;
      continue;
    }
    const std::vector<DocumentRead> read(current->begin() + static_cast<std::ptrdiff_t>(at),
                                         current->begin() + static_cast<std::ptrdiff_t>(at + a->ids.size()));
    at += a->ids.size();
    settle(context, *a, read, observed_at);
  }
}

}  // namespace

WallTime write_time(Clock& clock, const std::function<bool(WallTime)>& taken) {
  WallTime now = to_millis(clock.now());
  for (int waited = 0; taken(now) && waited < kMaxWriteTimeWaits; ++waited) {
    clock.sleep_for(Millis(1), {});
    now = to_millis(clock.now());
  }
  return now;
}

std::vector<Result<GrantOutcome>> write_grants(const GrantContext& context,
                                               const std::vector<GrantRequest>& requests) {
  std::vector<Attempt> attempts;
  attempts.reserve(requests.size());
  for (const GrantRequest& request : requests) {
    if (Status valid = check_request(request); !valid.ok()) {
      Attempt refused;
      refused.outcome = valid.error();
      attempts.push_back(std::move(refused));
      continue;
    }
    attempts.push_back(prepare_attempt(context, request));
  }
  // Whole requests per _bulk, up to max_bulk_items documents (a larger grant goes alone).
  std::vector<Attempt*> batch;
  std::size_t documents = 0;
  for (Attempt& a : attempts) {
    if (a.outcome) continue;
    if (!batch.empty() && documents + a.docs.size() > context.max_bulk_items) {
      write_batch(context, batch);
      batch.clear();
      documents = 0;
    }
    batch.push_back(&a);
    documents += a.docs.size();
  }
  if (!batch.empty()) write_batch(context, batch);
  std::vector<Result<GrantOutcome>> out;
  out.reserve(attempts.size());
  for (Attempt& a : attempts) out.push_back(std::move(*a.outcome));
  return out;
}

Result<ReleaseOutcome> release_held_grant(const GrantContext& context, const HeldGrant& held,
                                          ReleaseScope scope) {
  std::vector<std::string> ids;
  std::vector<std::optional<es::Version>> pending;  // still to delete, at this version
  for (const HeldDocument& doc : held.docs) {
    ids.push_back(document_id(doc.state.doc));
    pending.push_back(doc.state.version);
  }
  bool left_to_others = false;  // a document belongs to another grant, or moved on (kThisVersion)
  for (int round = 0; round < kMaxReleaseRounds; ++round) {
    const UnsureDeletes unsure =
        delete_pending(context, ids, pending, [](const Written& w) { return w.applied(); });
    if (unsure.ids.empty()) break;
    auto current = read_documents(context, unsure.ids);
    if (!current.ok()) {
      Error error = current.error();
      if (unsure.errors.front())
        error.message =
            "release outcome unknown (" + unsure.errors.front()->describe() + "): " + error.message;
      return error;
    }
    for (std::size_t n = 0; n < unsure.ids.size(); ++n) {
      const std::size_t i = unsure.at[n];
      auto step =
          after_unsure_delete((*current)[n], held.docs[i].state.doc, *pending[i], unsure.errors[n], scope);
      if (!step.ok()) return step.error();
      pending[i] = step->next;
      left_to_others = left_to_others || step->left_to_others;
    }
  }
  if (std::any_of(pending.begin(), pending.end(), [](const auto& v) { return v.has_value(); }))
    return make_error(ErrorCode::kConflict,
                      "cannot release the grant of " + ids.front() + ": its documents keep changing");
  return left_to_others ? ReleaseOutcome::kNotHeld : ReleaseOutcome::kReleased;
}

}  // namespace eslease::lock
