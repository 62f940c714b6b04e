#include "controller/holds_annotation.h"

#include "controller/lease_codec.h"
#include "controller/lease_writer.h"

namespace eslease::controller {

using nlohmann::json;

void HoldsAnnotation::adopt(const std::string& pod_key, const PodRecord& pod,
                            std::set<std::string>& touched) {
  if (holds_.contains(pod_key)) return;
  const auto written = written_.find(pod.meta.uid);
  const std::string& value = written != written_.end() ? written->second.value : pod.holds_annotation;
  if (value.empty()) return;
  const std::map<std::string, std::string> entries = parse_holds(value);
  if (format_holds(entries) != value) touched.insert(pod_key);  // not all entries: rewritten
  for (const auto& [lease_name, token] : entries) {
    auto lease = cluster_.lease(pod.meta.ns + "/" + lease_name);
    if (!lease) {
      touched.insert(pod_key);  // names a Lease that is gone: rewritten without it
      continue;
    }
    const std::string its_lock = lease->lock_id();
    holds_[pod_key][lease_name] = Hold{its_lock, token};
    holders_[its_lock].insert(pod_key);
  }
}

std::map<std::string, std::string> HoldsAnnotation::desired_values(
    const LockWorld& world, const std::map<std::string, LeaseStatus>& statuses) {
  const std::string lock = world.ns + "/" + world.lock_name;
  std::set<std::string> touched;
  for (const auto& [name, pod] : world.pods) adopt(world.ns + "/" + name, pod.record, touched);
  if (auto had = holders_.find(lock); had != holders_.end()) {
    for (const std::string& pod_key : had->second) {
      auto pod = holds_.find(pod_key);
      if (pod == holds_.end()) continue;
      // Only entries still for this lock: a Lease that moved on is another lock's now.
      std::erase_if(pod->second, [&](const auto& held) { return held.second.lock == lock; });
      if (pod->second.empty()) holds_.erase(pod);
      touched.insert(pod_key);
    }
    holders_.erase(had);
  }
  for (const LeaseRecord& lease : world.claims) {
    auto status = statuses.find(lease.meta.name);
    if (status == statuses.end() || status->second.phase != Phase::kHeld || !status->second.holder) continue;
    const std::string pod_key = world.ns + "/" + status->second.holder->pod_name;
    holds_[pod_key][lease.meta.name] = Hold{lock, status->second.fencing_token};
    holders_[lock].insert(pod_key);
    touched.insert(pod_key);
  }
  std::map<std::string, std::string> desired;
  for (const std::string& pod_key : touched) {
    std::map<std::string, std::string> token_by_lease;
    if (auto it = holds_.find(pod_key); it != holds_.end()) {
      for (const auto& [lease, held] : it->second) token_by_lease[lease] = held.token;
    }
    desired[pod_key] = format_holds(token_by_lease);
  }
  return desired;
}

Status HoldsAnnotation::update(const LockWorld& world, const std::map<std::string, LeaseStatus>& statuses) {
  std::map<std::string, std::string> desired;
  {
    std::lock_guard guard(mutex_);
    desired = desired_values(world, statuses);
  }
  Status result;
  std::lock_guard serial(write_mutex_);
  for (const auto& [pod_key, value] : desired) {
    Status written = write(pod_key, value);
    if (written.ok()) continue;
    if (result.ok()) result = written;
    // Not written yet (failed, or deferred): the pod stays this lock's to put right, so the
    // lock's retry writes it, even once the pod holds nothing of this lock any more.
    std::lock_guard lock(mutex_);
    holders_[world.ns + "/" + world.lock_name].insert(pod_key);
  }
  return result;
}

Status HoldsAnnotation::write(const std::string& pod_key, const std::string& value) {
  auto pod = cluster_.pod(pod_key);
  if (!pod) return {};
  std::string current = pod->holds_annotation;
  {
    std::lock_guard lock(mutex_);
    if (auto w = written_.find(pod->meta.uid); w != written_.end()) {
      if (current == w->second.value) {
        written_.erase(w);
      } else {
        current = w->second.value;
      }
    }
  }
  if (current == value) return {};
  json patch = {{"metadata",
                 {{"annotations", {{api::kHoldsAnnotation, value.empty() ? json(nullptr) : json(value)}}}}}};
  // Telling a new holder can wait for the rate limit; taking the annotation from a pod that
  // lost the lock cannot.
  kube::CallOptions call;
  call.defer_when_busy = !value.empty();
  auto patched =
      api_.patch(kube::resources::pods(), pod->meta.ns, pod->meta.name, kube::PatchType::kMerge, patch,
                 /*status_subresource=*/false, call);
  if (!patched.ok()) return patched.error().code == ErrorCode::kNotFound ? Status() : Status(patched.error());
  std::lock_guard lock(mutex_);
  written_[pod->meta.uid] = Written{value, resource_version_of(*patched)};
  return {};
}

void HoldsAnnotation::seen(const std::string& uid, const std::string& version) {
  std::lock_guard lock(mutex_);
  if (auto it = written_.find(uid); it != written_.end() && it->second.version == version) written_.erase(it);
}

void HoldsAnnotation::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  written_.erase(uid);
}

}  // namespace eslease::controller
