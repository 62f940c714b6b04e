// Direct mode's hold for `eslease run`: the tool itself renews the lock document.
#pragma once

#include <iosfwd>
#include <memory>

#include "cli/supervisor.h"
#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::cli {

// Renews the lock document every ttl/3 on a thread of its own, so a renewal that takes its
// time (Elasticsearch timeouts, retries, the read that settles an unknown outcome) never
// keeps the supervisor from stopping the command at the grant's deadline; a renewal that
// comes back after that deadline revives nothing. Releases the lock at the end unless lost.
std::unique_ptr<Hold> make_store_hold(lock::LockStore& store, Clock& clock, lock::LockKey key,
                                      lock::Grant grant, Millis ttl, std::ostream& err);

}  // namespace eslease::cli
