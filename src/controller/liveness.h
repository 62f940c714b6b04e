// Is a holder alive? The design's "Liveness" rules as pure functions of what the caches
// show and the controller's own monotonic clock.
//
//   confirmed dead  this controller saw the pod go (PodDeleted) or replaced by another pod of
//                   that name (PodReplaced), or its phase is Failed/Succeeded
//                   (PodFailed/PodSucceeded): its containers have stopped, so the lock may
//                   move at once.
//   presumed dead   its node stopped heartbeating (NodeLost: the kubelet's node Lease was not
//                   seen renewed for the heartbeat grace), its Ready condition, or its node's,
//                   has been False/Unknown for livenessGraceSeconds on our clock
//                   (PodNotReady), or the cache lacks the
//                   pod (or shows another of its name) though we never saw it go: a cache can
//                   lag behind a grant another replica made (a paused process, a slow watch),
//                   so it may still run; its grant is revoked and handed over only after it
//                   expires.
//   alive           anything else, including a pod being deleted (its containers may run
//                   through their grace period) and a pod that has never been Ready yet,
//                   except that an election holder never Ready for livenessGraceSeconds
//                   while another of its claim's pods is Ready is presumed dead (PodNotReady).
#pragma once

#include <optional>
#include <string>

#include "api/lease_api.h"
#include "common/clock.h"
#include "controller/model.h"

namespace eslease::controller {

// A pod as liveness sees it: the cached record joined with what this controller observed.
struct PodState {
  PodRecord record;
  bool was_ready = false;  // Ready now or at some point (status shows it, or we saw it)
  bool node_ready = true;  // the node's Ready condition is not False/Unknown (unknown node: true)
  // When this controller first saw the pod not Ready after having been Ready, or its node not
  // Ready, in the current stretch of unreadiness; unset while Ready.
  std::optional<MonoTime> unready_since;
  // When this controller saw the pod finish (phase Failed/Succeeded), for takeover latency.
  std::optional<MonoTime> finished_seen_at;
  // Never Ready yet: since when, on our clock (first seen, or seen bound to its node if that
  // came later), so a pod that has only just started is not judged on its age.
  std::optional<MonoTime> never_ready_since;
  // Its node's heartbeat (the kubelet's node Lease) has not been seen renewed for the
  // heartbeat grace: since when it counts as silent, on our clock. Unset while it beats, and
  // for a node whose heartbeat was never seen (readiness alone then decides).
  std::optional<MonoTime> node_silent_since;
};

enum class Health { kAlive, kConfirmedDead, kPresumedDead };

struct HolderHealth {
  Health health = Health::kAlive;
  std::optional<api::Reason> reason;  // PodDeleted, PodReplaced, PodFailed, PodSucceeded, PodNotReady
  // Alive but unready: when it will count as presumed dead (for the requeue).
  std::optional<MonoTime> presumed_dead_at;
};

// `pod` is the pod now named like the holder (nullptr: none); `holder_uid` the UID the grant
// was made to (empty: unknown, so a replacement cannot be told); `seen_gone` whether this
// controller saw that pod go (PodTracker::saw_gone). A grace of 0 turns the readiness check
// off.
HolderHealth judge_holder(const PodState* pod, const std::string& holder_uid, bool seen_gone,
                          int grace_seconds, MonoTime now);

// An election holder `pod` while another pod of its claim is Ready: presumed dead once it has
// been there `grace_seconds` without ever being Ready (0 turns this off).
HolderHealth judge_never_ready(const PodState& pod, int grace_seconds, MonoTime now);

// A waiting claim is granted only to a pod that is alive, not being deleted, not finished,
// and not unready after having been Ready (nor on an unready node). `state` is what is known
// beside the pod's record (its `record` member is not read), so a caller that holds the record
// need not copy it.
bool grantable(const PodRecord& record, const PodState& state);
inline bool grantable(const PodState& pod) {
  return grantable(pod.record, pod);
}

}  // namespace eslease::controller
