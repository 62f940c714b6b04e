// `eslease run`: holds a lock for the life of a child process.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::cli {

struct SuperviseOptions {
  std::vector<std::string> command;  // CMD ARGS...
  Millis ttl{30000};
  Millis grace{10000};  // SIGTERM -> SIGKILL; also how early before expiry CMD is stopped
};

// Starts the command with ESLEASE_FENCING_TOKEN (and ESLEASE_LOCK) in its environment,
// renews every ttl/3, stops it when the lock is lost or cannot be confirmed `grace`
// before it expires (SIGTERM, then SIGKILL at the latest when it expires), forwards
// SIGINT/SIGTERM (the command runs in its own process group, and every signal goes to the
// whole group), and releases the lock once the command has exited. Returns the
// command's exit code (128 + signal when killed; 127 when it cannot be started).
int supervise(lock::LockStore& store, Clock& clock, const lock::LockKey& key, lock::Grant grant,
              const SuperviseOptions& options, std::ostream& err);

}  // namespace eslease::cli
