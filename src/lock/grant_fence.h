// The last step of every grant (token_guard.h): a grant is kept only when its fencing token
// is larger than every token known before it was written (`floor`). Otherwise the lock index
// went back (re-created, restored): the grant, which nobody has been told of yet, is deleted
// again at exactly the version written, and the caller gets kGrantsPaused saying so
// (undone_grant), while the guard pauses grants and has the index's token epoch raised before
// the next one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "es/document_api.h"
#include "lock/lock_store.h"
#include "lock/token_guard.h"

namespace eslease::lock {

// The error of a grant undone because its fencing token `token` was not larger than `floor`,
// a token issued before. Grant sets (grant_set.h) undo theirs the same way.
Error undone_grant(std::int64_t token, std::int64_t floor);

// One grant: `outcome` as the granting write settled. One delete when refused.
Result<AcquireOutcome> keep_if_larger(es::DocumentApi& api, const std::string& index, TokenGuard& guard,
                                      const LockKey& key, Result<AcquireOutcome> outcome, std::int64_t floor);

// The grants of grantees [begin, begin + results.size()): those refused are deleted in one _bulk.
void keep_larger_grants(es::DocumentApi& api, const std::string& index, TokenGuard& guard,
                        const std::vector<std::pair<LockKey, Grantee>>& grantees, std::size_t begin,
                        std::vector<Result<AcquireOutcome>>& results, std::int64_t floor);

}  // namespace eslease::lock
