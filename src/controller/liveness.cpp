#include "controller/liveness.h"

namespace eslease::controller {

HolderHealth judge_holder(const PodState* pod, const std::string& holder_uid, bool seen_gone,
                          int grace_seconds, MonoTime now) {
  // Missing from the cache, or another pod under its name: dead only if we saw it go.
  const Health missing = seen_gone ? Health::kConfirmedDead : Health::kPresumedDead;
  if (!pod) return {missing, api::Reason::kPodDeleted, std::nullopt};
  const PodRecord& record = pod->record;
  if (!holder_uid.empty() && record.meta.uid != holder_uid)
    return {missing, api::Reason::kPodReplaced, std::nullopt};
  if (record.phase == "Failed") return {Health::kConfirmedDead, api::Reason::kPodFailed, std::nullopt};
  if (record.phase == "Succeeded") return {Health::kConfirmedDead, api::Reason::kPodSucceeded, std::nullopt};
  // A silent node may still run the pod (a partition): presumed dead, never confirmed, and
  // judged at once: the heartbeat grace has already passed.
  if (grace_seconds > 0 && pod->node_silent_since)
    return {Health::kPresumedDead, api::Reason::kNodeLost, std::nullopt};
  if (grace_seconds > 0 && pod->unready_since) {
    const MonoTime dead_at = *pod->unready_since + std::chrono::seconds(grace_seconds);
    if (now >= dead_at) return {Health::kPresumedDead, api::Reason::kPodNotReady, std::nullopt};
    return {Health::kAlive, std::nullopt, dead_at};
  }
  return {Health::kAlive, std::nullopt, std::nullopt};
}

HolderHealth judge_never_ready(const PodState& pod, int grace_seconds, MonoTime now) {
  if (grace_seconds <= 0 || pod.was_ready || !pod.never_ready_since) return {};
  const MonoTime dead_at = *pod.never_ready_since + std::chrono::seconds(grace_seconds);
  if (now >= dead_at) return {Health::kPresumedDead, api::Reason::kPodNotReady, std::nullopt};
  return {Health::kAlive, std::nullopt, dead_at};
}

bool grantable(const PodRecord& record, const PodState& state) {
  if (record.being_deleted) return false;
  if (record.phase == "Failed" || record.phase == "Succeeded") return false;
  if (!state.node_ready || state.node_silent_since) return false;
  if (state.was_ready && record.ready != ReadyState::kTrue) return false;
  return true;
}

}  // namespace eslease::controller
