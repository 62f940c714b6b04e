// Direct mode's commands for the lock shapes of the design's "Lock shapes": lock sets (several
// LOCK arguments), semaphores (--capacity N) and shared claims (--shared). They write the same
// slot documents the controller will read; a claim of one exclusive lock of capacity 1 keeps
// to cli.cpp's commands.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace eslease::cli {

// A lock still held when --wait runs out exits 3, as in Kubernetes mode; a backend that
// cannot be reached stays a failure (1).
int acquire_exit_code(const Error& error);
// What `status -o json` says of one holder's document, whatever the lock's shape.
nlohmann::json holder_fields_json(const lock::LockState& state);

int shaped_acquire(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                   Environment& env, const std::string& holder);
int shaped_run(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
               Environment& env, const std::string& holder);
// renew and release act on every grant --holder has on the locks (and the rest of its sets).
int shaped_renew(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                 Environment& env);
int shaped_release(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                   Environment& env);
// renew and release of one lock without --capacity: true when its slot 0 shows a shape (a
// capacity above 1, Shared access, a grant of several documents), so that the whole grant is
// acted on.
bool holds_shaped_grant(const Options& options, const std::vector<lock::LockKey>& keys,
                        lock::LockStore& store);
// status LOCK for a lock with a shape: every holder with its slot and access, against the
// capacity. nullopt when the lock shows none (slot 0 alone, capacity 1, Exclusive, or free
// without --capacity): cli.cpp's status then says what it always said.
std::optional<int> shaped_status(const Options& options, const lock::LockKey& key, lock::LockStore& store,
                                 Environment& env);

}  // namespace eslease::cli
