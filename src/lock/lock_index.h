// The lock index itself: created with eslease's strict mapping when missing, its mapping kept
// eslease's, and its fencing-token epoch (token_guard.h) kept in the mapping's _meta, so the
// epoch travels with the index (a snapshot brings it back; a re-created index has none):
//
//   "_meta": {"eslease": {"tokenEpoch": 3, "indexUUID": "<the UUID it was recorded for>"}}
//
// Other keys of _meta are kept. Elasticsearch has no conditional mapping update, so each
// recording is read back, and a lower epoch written meanwhile by another process is written
// over; the per-grant check of token_guard.h catches whatever that window lets through.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"
#include "es/document_api.h"
#include "lock/token_guard.h"

namespace eslease::lock {

class LockIndex {
 public:
  // `api` and `guard` must outlive the index.
  LockIndex(es::DocumentApi& api, std::string name, TokenGuard& guard);

  // Creates the index when missing; gives an existing index eslease's fields when it lacks
  // them (one a write auto-created); refuses one that maps them otherwise. With
  // `check_tokens`, also checks its fencing tokens against what is known now; without, the
  // check waits for check_now() or the first grant.
  Status prepare(bool check_tokens);
  // Before a grant: checks the index's tokens when due (one read; writes only to record or
  // raise the epoch), then whether grants may go ahead. An error refuses the grant.
  Status ready_to_grant();
  // Reads the index and checks its tokens now (a new term of leadership), whether due or not.
  Status check_now();

 private:
  Status check();
  // Adds eslease's fields to a mapping that lacks them; kInvalid when one is mapped otherwise.
  // Sets `foreign` when the mapping was not eslease's.
  Status fit_mapping(const es::IndexDescription& described, bool& foreign);
  // Writes `epoch` with the index's UUID and reads it back; returns the epoch recorded then
  // (higher when another process raised it meanwhile).
  Result<std::int64_t> record(const es::IndexDescription& described, std::int64_t epoch);

  es::DocumentApi& api_;
  std::string name_;
  TokenGuard& guard_;
  std::mutex check_mutex_;                         // one check at a time; grants wait for it
  std::optional<es::IndexDescription> described_;  // read by prepare(), for the first check
};

}  // namespace eslease::lock
