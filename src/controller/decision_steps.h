// The steps decide() is made of, shared by the decision for one holder (decision.cpp) and the
// one for a lock of capacity above 1 (shaped_decision.cpp). Part of the pure decision.
#pragma once

#include <optional>

#include "controller/claim_queue.h"
#include "controller/decision.h"
#include "controller/grant_rules.h"

namespace eslease::controller {

// Looks again at `at` at the latest.
void requeue(Decision& d, std::optional<MonoTime> at);
// The grant rules' plan as the decision's action.
void carry_plan(const ActionPlan& plan, Decision& d);
// Who a grant goes to, and on what terms: `lease`'s claim, for `pod`.
void grant_to(const LeaseRecord& lease, const PodRecord& pod, WallTime waiting_since, GrantPlan& g);
// Finalizers on with a grant, off once a deleted claim holds nothing.
void plan_finalizers(const LockWorld& world, const ClaimQueue& queue, Decision& d);

// A lock of capacity above 1 (the design's "Lock shapes"): each grant's own rules, then who
// gets the free slots (slot_allocation.h), one action per step.
Decision decide_shaped(const LockWorld& world);

}  // namespace eslease::controller
