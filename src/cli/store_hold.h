// Direct mode's hold for `eslease run`, on a lock of any shape (one lock, a semaphore slot,
// a writer's every slot, a lock set): the tool renews every document of its grant itself.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/supervisor.h"
#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::cli {

// Renews the grant every ttl/3 (one _bulk of all its documents) on a thread of its own, so a
// renewal that takes its time (Elasticsearch timeouts, retries, the read that settles an
// unknown outcome) never keeps the supervisor from stopping the command at the grant's
// deadline; a renewal that comes back after that deadline revives nothing. The grant is lost
// when any of its documents is; it is released at the end unless lost.
// The locks a grant holds, each once, in the order of its documents: "default/a".
std::vector<std::string> lock_ids_of(const lock::HeldGrant& grant);

std::unique_ptr<Hold> make_store_hold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl,
                                      std::ostream& err);

}  // namespace eslease::cli
