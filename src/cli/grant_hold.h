// Direct mode's hold for `eslease run` on a lock of any shape (a semaphore slot, a shared or
// exclusive hold, a lock set): the tool renews every document of its grant together.
#pragma once

#include <iosfwd>
#include <memory>

#include "cli/supervisor.h"
#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::cli {

// As make_store_hold (store_hold.h), for a grant of several documents: every ttl/3 one _bulk
// renews all of them; the grant is lost, and the command stopped, when any one is lost or
// none can be confirmed before the earliest deadline. Releases the grant at the end unless lost.
std::unique_ptr<Hold> make_grant_hold(lock::LockStore& store, Clock& clock, lock::HeldGrant grant, Millis ttl,
                                      std::ostream& err);

}  // namespace eslease::cli
