// What happens to one grant on the locks, as an ordered list of small named rules (the
// design's "Claims and phases" and "Liveness"). Each rule looks at the situation and either
// passes or returns the verdict; the first rule that returns one decides, so a rule only has
// to say when it applies, and its place in the list says what it overrides. Who gets the
// slots of a grant that ends is not decided here but by the one queueing rule
// (slot_allocation.h). Part of the pure decision (decision.h).
//
// In order:
//   respect_a_foreign_lock                a grant no Lease ever owned (the tool's direct
//                                         mode, another process) ends only when it expires on
//                                         our clock
//   release_what_its_holder_let_go        the holder marked its token released and deleted its
//                                         Lease (the eslease tool): it ends at once
//   end_a_confirmed_death                 the holder's containers have stopped: it ends at once,
//                                         or, with liveness takeover off, it is only no longer
//                                         renewed
//   revoke_a_broken_grant                 part of it is no longer ours to renew: it is over
//   give_way_to_the_recorded_grant        its claim's Lease shows another grant of the claim,
//                                         which is on the locks too (two replicas that both
//                                         believed they led each granted it): the Lease's
//                                         stands, ours is revoked
//   revoke_when_its_claim_is_gone         the owning Lease was deleted by someone else, or
//                                         vanished: no proof the holder stopped, so it is
//                                         revoked, to end after its validity
//   revoke_when_its_claim_moved_on        the owning claim no longer names the holder, or asks
//                                         for another shape than the grant has (a new leader
//                                         revokes such a grant its Lease records too)
//   revoke_a_presumed_death               the holder stayed unready past its grace, or is
//                                         missing: revoked when we renew it, and when its
//                                         Lease records it (a new leader lists it at once)
//   keep_a_live_holder                    ours, alive: renew it; look again when its grace
//                                         would run out
//   adopt_a_recorded_grant                a grant its Lease status records (a restart, a new
//                                         leader) is renewed on its behalf, not re-granted
//   end_when_it_expires                   a grant we no longer renew ends once it expires on
//                                         our clock, and not before
#pragma once

#include <optional>
#include <string>

#include "controller/claim_queue.h"
#include "controller/decision.h"

namespace eslease::controller {

struct GrantVerdict {
  const char* rule = "";          // the rule that decided, for logs and tests
  Action action = Action::kNone;  // kNone, kRelease, kRevoke or kAdopt
  // The grant ends now: its slots go to whoever the allocation serves, or, with nobody to
  // serve, it is released (action kRelease) or left to expire (kNone: not ours to delete).
  bool ends_now = false;
  // Why it ends (a hand-over's lastTakeover reason), or why it is released or revoked.
  std::optional<api::Reason> reason;
  // It ends because its holder is gone or it expired, not because its holder let it go: the
  // next grant on its slots is a takeover.
  bool handed_over = false;
  std::string message;  // for logs
  std::string from_pod;
  std::optional<MonoTime> dead_seen_at;
  std::optional<MonoTime> wake_at;  // when to look again
};

// Runs the rules on `grant`, whose claim is `owner` (nullptr: no claim of the world names
// it). Only called when the documents are known and readable and the reconcile may still act.
GrantVerdict judge_grant(const LockWorld& world, const GrantView& grant, const ClaimView* owner);

// Whether `lease` claims exactly the locks `grant` is on, as the grant's documents name them.
bool claims_the_locks_of(const LeaseRecord& lease, const GrantView& grant);

// Why a holder lost its lock, in words, for conditions, events and logs.
std::string describe_loss(api::Reason why, const std::string& pod);

}  // namespace eslease::controller
