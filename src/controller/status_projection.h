// The status every claim of a lock shows, projected from the lock document and the claims'
// previous statuses, one function per phase, with the events a change deserves. Part of the
// pure decision (decision.h). Conditions keep their lastTransitionTime while their status
// stays, so projecting a world twice gives the same statuses and writes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "controller/claim_queue.h"
#include "controller/decision.h"

namespace eslease::controller {

// Every claim not being deleted gets its status in `decision.statuses`, and the events of
// what changed in `decision.events`. `positions` gives each waiting claim its place in the
// queue from the slot allocation (by Lease name: the claims with a live pod waiting ahead of it
// where it stands furthest back); a waiting claim without one has no live pod, or waits for
// an earlier grant of its own to end.
void project_statuses(const LockWorld& world, const ClaimQueue& queue,
                      const std::map<std::string, std::int64_t>& positions, Decision& decision);

// Elasticsearch could not be read: statuses keep what they said, apart from the
// BackendAvailable condition.
void keep_statuses(const LockWorld& world, const ClaimQueue& queue, Decision& decision);

}  // namespace eslease::controller
