#include "lock/lock_store.h"

#include <algorithm>

namespace eslease::lock {

DocumentRead read_lock(LockStore& store, const LockKey& key) {
  auto read = store.read_slots({SlotRange{key, 1}});
  if (!read.ok()) return read.error();
  if (read->size() != 1 || read->front().size() != 1)
    return make_error(ErrorCode::kInternal,
                      "the lock store answered a read of one document with another count");
  return std::move(read->front().front());
}

Result<GrantOutcome> grant_one(LockStore& store, const GrantRequest& request) {
  std::vector<Result<GrantOutcome>> outcomes = store.grant({request});
  if (outcomes.size() != 1)
    return make_error(ErrorCode::kInternal, "the lock store answered one grant with another count");
  return std::move(outcomes.front());
}

HeldGrant grant_of(std::vector<HeldDocument> docs) {
  HeldGrant held;
  held.valid_until = MonoTime::max();
  for (const HeldDocument& doc : docs) {
    held.token = std::max(held.token, doc.state.token);
    held.valid_until = std::min(held.valid_until, doc.valid_until);
  }
  if (!docs.empty()) held.id = docs.front().state.doc.grant;
  for (HeldDocument& doc : docs) doc.state.token = held.token;
  held.docs = std::move(docs);
  return held;
}

GrantRenewal renew_grant(LockStore& store, const HeldGrant& held, Millis ttl) {
  std::vector<Renewal> renewals;
  renewals.reserve(held.docs.size());
  for (const HeldDocument& doc : held.docs) renewals.push_back(Renewal{doc, ttl, std::nullopt});
  const std::vector<BatchRenewal> results = store.renew_all(renewals);
  GrantRenewal out;
  std::vector<HeldDocument> still_ours;
  for (std::size_t i = 0; i < held.docs.size(); ++i) {
    const BatchRenewal* r = i < results.size() ? &results[i] : nullptr;
    if (r && r->result == RenewalResult::kLost) {
      if (out.why.empty()) {
        out.why = "document " + document_id(held.docs[i].state.doc) + " was lost";
        if (r->current) out.why += " to " + r->current->doc.holder;
      }
      continue;
    }
    if ((!r || r->result == RenewalResult::kFailed) && !out.error)
      out.error = r && r->error ? *r->error : make_error(ErrorCode::kInternal, "renewal not confirmed");
    still_ours.push_back(r && r->held ? *r->held : held.docs[i]);
  }
  HeldGrant next = grant_of(std::move(still_ours));
  next.id = held.id;
  next.token = held.token;
  for (HeldDocument& doc : next.docs) doc.state.token = held.token;
  if (!out.why.empty()) {
    // The grant is over: give back the documents still ours, so nobody waits for their TTL.
    if (!next.docs.empty()) (void)store.release(next, ReleaseScope::kGrant);
    out.result = RenewalResult::kLost;
    return out;
  }
  out.result = out.error ? RenewalResult::kFailed : RenewalResult::kRenewed;
  out.grant = std::move(next);
  return out;
}

}  // namespace eslease::lock
