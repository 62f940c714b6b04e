// What to do with the lock document, as an ordered list of small named rules (the design's
// "Claims and phases" and "Liveness"). Each rule looks at the situation and either passes
// or returns the plan; the first rule that returns one decides, so a rule only has to say
// when it applies, and its place in the list says what it overrides. Part of the pure
// decision (decision.h).
//
// In order:
//   grant_a_free_lock                     no document: the next live claim gets the lock
//   respect_a_foreign_lock                a document no Lease ever owned (the tool's direct
//                                         mode, another process) is handed over only when it
//                                         expires on our clock
//   release_what_its_holder_let_go        the holder marked its token released and deleted its
//                                         Lease (the eslease tool): the lock moves at once
//   hand_over_from_a_confirmed_death      the holder's containers have stopped: the next claim
//                                         gets the lock in the same write (or the lock is
//                                         released), or, with liveness takeover off, the
//                                         grant is only no longer renewed
//   revoke_when_its_claim_is_gone         the owning Lease was deleted by someone else, or
//                                         vanished: no proof the holder stopped, so the grant
//                                         is revoked, to be handed over after its validity
//   revoke_when_its_claim_moved_on        the owning claim no longer names the holder
//   revoke_a_presumed_death               the holder stayed unready past its grace
//   keep_a_live_holder                    our grant, alive: renew it; look again when its
//                                         grace would run out
//   adopt_a_recorded_grant                a grant its Lease status records (a restart, a new
//                                         leader) is renewed on its behalf, not re-granted
//   hand_over_when_it_expires             a grant we no longer renew is handed over once it
//                                         expires on our clock, and not before
#pragma once

#include <optional>
#include <string>

#include "controller/claim_queue.h"
#include "controller/decision.h"

namespace eslease::controller {

struct ActionPlan {
  const char* rule = "";  // the rule that decided, for logs and tests
  Action action = Action::kNone;
  std::optional<NextGrant> grant;  // kAcquire, kTakeOver
  // kTakeOver: why the previous grant ended; kRelease and kRevoke: why.
  std::optional<api::Reason> reason;
  std::string message;  // for logs
  std::string from_pod;
  std::optional<MonoTime> dead_seen_at;
  std::optional<MonoTime> wake_at;  // kNone: when to look again
  // The grant may be handed over now (ClaimQueue::successors_by_allocation): its slots go to
  // whoever the allocation serves, or the grant is released (kRelease) or left (kNone).
  bool ends_now = false;
};

// Runs the rules in order. Only called when the document is known and readable and the
// reconcile may still act.
ActionPlan decide_action(const LockWorld& world, const ClaimQueue& queue);

// Why a holder lost its lock, in words, for conditions, events and logs.
std::string describe_loss(api::Reason why, const std::string& pod);

}  // namespace eslease::controller
