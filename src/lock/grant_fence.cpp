#include "lock/grant_fence.h"

#include "common/log.h"

namespace eslease::lock {
namespace {

void log_undone(const std::string& lock, std::int64_t token, std::int64_t floor, bool deleted) {
  log::error(
      "a new grant's fencing token was not larger than one issued before; the grant is undone and "
      "grants wait for the lock index's token epoch to be raised",
      {{"lock", lock}, {"token", token}, {"largest_known", floor}, {"deleted", deleted ? "yes" : "no"}});
}

}  // namespace

Error undone_grant(std::int64_t token, std::int64_t floor) {
  return make_error(ErrorCode::kGrantsPaused, "the new grant's fencing token " + std::to_string(token) +
                                                  " is not larger than token " + std::to_string(floor) +
                                                  " issued before: the lock index was re-created or "
                                                  "restored; the grant was undone");
}

Result<AcquireOutcome> keep_if_larger(es::DocumentApi& api, const std::string& index, TokenGuard& guard,
                                      const LockKey& key, Result<AcquireOutcome> outcome,
                                      std::int64_t floor) {
  if (!outcome.ok() || !outcome->grant) return outcome;
  const Grant& grant = *outcome->grant;
  if (guard.accept(grant.state.token, floor)) {
    guard.handed_out(grant.valid_until);
    return outcome;
  }
  // A failed delete leaves a grant nobody was told of: it is never renewed, and expires.
  auto removed = api.remove(index, key.id(), grant.state.version);
  log_undone(key.id(), grant.state.token, floor,
             removed.ok() && removed->status == es::WriteStatus::kApplied);
  return undone_grant(grant.state.token, floor);
}

void keep_larger_grants(es::DocumentApi& api, const std::string& index, TokenGuard& guard,
                        const std::vector<std::pair<LockKey, Grantee>>& grantees, std::size_t begin,
                        std::vector<Result<AcquireOutcome>>& results, std::int64_t floor) {
  std::vector<es::BulkOperation> undo;
  std::vector<std::size_t> undone;
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (!results[k].ok() || !results[k]->grant) continue;
    const Grant& grant = *results[k]->grant;
    if (guard.accept(grant.state.token, floor)) {
      guard.handed_out(grant.valid_until);
      continue;
    }
    undo.push_back(es::BulkOperation{
        es::BulkOperation::Type::kDelete, grantees[begin + k].first.id(), {}, grant.state.version});
    undone.push_back(k);
  }
  if (undo.empty()) return;
  auto removed = api.bulk(index, undo);
  for (std::size_t n = 0; n < undone.size(); ++n) {
    const std::size_t k = undone[n];
    const bool deleted =
        removed.ok() && n < removed->items.size() && removed->items[n].status == es::WriteStatus::kApplied;
    const std::int64_t token = results[k]->grant->state.token;
    log_undone(grantees[begin + k].first.id(), token, floor, deleted);
    results[k] = undone_grant(token, floor);
  }
}

}  // namespace eslease::lock
