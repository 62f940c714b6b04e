#include "controller/holds_annotation.h"

#include <algorithm>

#include "controller/lease_codec.h"
#include "controller/lease_writer.h"

namespace eslease::controller {

using nlohmann::json;

namespace {

bool carries_label(const PodRecord& pod, const std::string& key) {
  return std::any_of(pod.labels.begin(), pod.labels.end(),
                     [&](const auto& label) { return label.first == key && label.second == "true"; });
}

}  // namespace

void HoldsAnnotation::adopt(const std::string& pod_key, const PodRecord& pod,
                            std::set<std::string>& touched) {
  if (holds_.contains(pod_key)) return;
  const auto written = written_.find(pod.meta.uid);
  const std::string& value = written != written_.end() ? written->second.value : pod.holds_annotation;
  if (value.empty()) return;
  const std::map<std::string, std::string> entries = parse_holds(value);
  if (format_holds(entries) != value) touched.insert(pod_key);  // not all entries: rewritten
  for (const auto& [lease_name, token] : entries) {
    auto lease = cluster_.lease(object_key(pod.meta.ns, lease_name));
    if (!lease) {
      touched.insert(pod_key);  // names a Lease that is gone: rewritten without it
      continue;
    }
    const std::string its_lock = lease->lock_id();
    holds_[pod_key][lease_name] = Hold{its_lock, token, lease->spec.holder_label};
    holders_[its_lock].insert(pod_key);
  }
}

std::map<std::string, HoldsAnnotation::PodPlan> HoldsAnnotation::desired_values(
    const LockWorld& world, const std::string& lock_name,
    const std::map<std::string, LeaseStatus>& statuses) {
  const std::string lock = object_key(world.ns, lock_name);
  std::set<std::string> touched;
  std::map<std::string, std::set<std::string>> released;  // holder labels of entries dropped, by pod
  for (const auto& [name, pod] : world.pods) adopt(object_key(world.ns, name), pod.record, touched);
  if (auto had = holders_.find(lock); had != holders_.end()) {
    for (const std::string& pod_key : had->second) {
      auto pod = holds_.find(pod_key);
      if (pod == holds_.end()) continue;
      // Only entries still for this lock: a Lease that moved on is another lock's now.
      std::erase_if(pod->second, [&](const auto& held) {
        if (held.second.lock != lock) return false;
        if (!held.second.label.empty()) released[pod_key].insert(held.second.label);
        return true;
      });
      if (pod->second.empty()) holds_.erase(pod);
      touched.insert(pod_key);
    }
    holders_.erase(had);
  }
  for (const LeaseRecord& lease : world.claims) {
    if (lease.spec.lock_name != lock_name) continue;
    auto status = statuses.find(lease.meta.name);
    if (status == statuses.end() || status->second.phase != Phase::kHeld || !status->second.holder) continue;
    const std::string pod_key = object_key(world.ns, status->second.holder->pod_name);
    holds_[pod_key][lease.meta.name] = Hold{lock, status->second.fencing_token, lease.spec.holder_label};
    holders_[lock].insert(pod_key);
    touched.insert(pod_key);
  }
  std::map<std::string, PodPlan> plans;
  for (const std::string& pod_key : touched) {
    std::map<std::string, std::string> token_by_lease;
    if (auto it = holds_.find(pod_key); it != holds_.end()) {
      for (const auto& [lease, held] : it->second) token_by_lease[lease] = held.token;
    }
    plans[pod_key].holds = format_holds(token_by_lease);
  }
  plan_labels(world, lock_name, lock, released, plans);
  return plans;
}

void HoldsAnnotation::plan_labels(const LockWorld& world, const std::string& lock_name,
                                  const std::string& lock,
                                  const std::map<std::string, std::set<std::string>>& released,
                                  std::map<std::string, PodPlan>& plans) {
  std::set<std::string> keys;  // the holder labels of this lock's claims
  for (const LeaseRecord& lease : world.claims)
    if (lease.spec.lock_name == lock_name && !lease.spec.holder_label.empty())
      keys.insert(lease.spec.holder_label);
  // Every pod this lock concerns, so a label left on one that no longer holds is taken away.
  if (!keys.empty())
    for (const auto& [name, pod] : world.pods) plans.try_emplace(object_key(world.ns, name));
  for (const auto& [pod_key, gone] : released) plans[pod_key].may_remove.insert(gone.begin(), gone.end());
  if (auto pending = unlabel_pending_.find(lock); pending != unlabel_pending_.end())
    for (const auto& [pod_key, left] : pending->second)
      plans[pod_key].may_remove.insert(left.begin(), left.end());
  for (auto& [pod_key, plan] : plans) {
    plan.may_add = keys;
    plan.may_remove.insert(keys.begin(), keys.end());
    if (auto it = holds_.find(pod_key); it != holds_.end())
      for (const auto& [lease, held] : it->second)
        if (!held.label.empty()) plan.labels.insert(held.label);
  }
}

Result<WriteOutcome> HoldsAnnotation::update(const LockWorld& world, const std::string& lock_name,
                                             const std::map<std::string, LeaseStatus>& statuses) {
  const std::string lock = object_key(world.ns, lock_name);
  std::map<std::string, PodPlan> plans;
  {
    std::lock_guard guard(mutex_);
    plans = desired_values(world, lock_name, statuses);
  }
  Status result;
  bool deferred = false;
  auto keep_first_error = [&](Status s) {
    if (result.ok() && !s.ok()) result = std::move(s);
  };
  // Keeps the first error and notes a deferral; true when the pod needs nothing more.
  auto done = [&](const Result<WriteOutcome>& written) {
    if (!written.ok()) keep_first_error(written.error());
    deferred = deferred || (written.ok() && *written == WriteOutcome::kDeferred);
    return written.ok() && *written != WriteOutcome::kDeferred;
  };
  std::lock_guard serial(write_mutex_);
  std::vector<PodWrite> removing;
  std::vector<PodWrite> others;
  for (const auto& [pod_key, plan] : plans) {
    auto change = work_out(pod_key, plan, world.mono);
    if (change && !change->remove.empty()) {
      removing.push_back(std::move(*change));
      continue;
    }
    if (change) others.push_back(std::move(*change));
    std::lock_guard guard(mutex_);
    note_removal(lock, pod_key, {}, true);  // carries none of the labels it should not
  }
  // Old holders first. A label that may still be on one of them is given to no one now;
  // the error retries this reconcile, which tries the removal again.
  const std::set<std::string> carried_before = pending_labels(lock);
  for (PodWrite& change : removing) {
    keep_first_error(withhold(change, carried_before));
    const bool written = done(write(change, world.mono));
    std::lock_guard guard(mutex_);
    note_removal(lock, change.pod.meta.key(), change.remove, written);
    // Not written (failed, or deferred): the pod stays this lock's to put right, so the
    // lock's retry writes it, even once the pod holds nothing of this lock any more.
    if (!written) holders_[lock].insert(change.pod.meta.key());
  }
  const std::set<std::string> carried = pending_labels(lock);
  for (PodWrite& change : others) {
    keep_first_error(withhold(change, carried));
    if (!change.holds && change.add.empty()) continue;
    if (!done(write(change, world.mono))) {
      std::lock_guard guard(mutex_);
      holders_[lock].insert(change.pod.meta.key());  // as above
    }
  }
  if (!result.ok()) return result.error();
  return deferred ? WriteOutcome::kDeferred : WriteOutcome::kSent;
}

std::set<std::string> HoldsAnnotation::pending_labels(const std::string& lock) {
  std::lock_guard guard(mutex_);
  std::set<std::string> keys;
  if (auto pending = unlabel_pending_.find(lock); pending != unlabel_pending_.end())
    for (const auto& [pod_key, left] : pending->second) keys.insert(left.begin(), left.end());
  return keys;
}

Status HoldsAnnotation::withhold(PodWrite& change, const std::set<std::string>& carried) {
  Status result;
  for (auto it = change.add.begin(); it != change.add.end();) {
    if (!carried.contains(*it)) {
      ++it;
      continue;
    }
    if (result.ok())
      result = make_error(ErrorCode::kUnsettled, "holder label " + *it + " for pod " + change.pod.meta.key() +
                                                     " waits until an old holder is rid of it");
    it = change.add.erase(it);
  }
  return result;
}

void HoldsAnnotation::note_removal(const std::string& lock, const std::string& pod_key,
                                   const std::set<std::string>& keys, bool done) {
  if (!done) {
    unlabel_pending_[lock][pod_key].insert(keys.begin(), keys.end());
    return;
  }
  auto pending = unlabel_pending_.find(lock);
  if (pending == unlabel_pending_.end()) return;
  pending->second.erase(pod_key);
  if (pending->second.empty()) unlabel_pending_.erase(pending);
}

std::optional<HoldsAnnotation::PodWrite> HoldsAnnotation::work_out(const std::string& pod_key,
                                                                   const PodPlan& plan, MonoTime now) {
  auto pod = cluster_.pod(pod_key);
  if (!pod) return std::nullopt;  // gone: nothing to write, and no label left on it
  std::lock_guard lock(mutex_);
  std::string current = pod->holds_annotation;
  const Written* ours = nullptr;
  if (auto w = written_.find(pod->meta.uid); w != written_.end()) {
    const bool caught_up = current == w->second.value &&
                           std::all_of(w->second.labels.begin(), w->second.labels.end(), [&](const auto& l) {
                             return carries_label(*pod, l.first) == l.second;
                           });
    if (caught_up || w->second.mark.expired(pod->meta.resource_version, now)) {
      written_.erase(w);  // the cache has caught up, or is the truth again
    } else {
      current = w->second.value;
      ours = &w->second;
    }
  }
  auto carries = [&](const std::string& key) {
    if (ours)
      if (auto it = ours->labels.find(key); it != ours->labels.end()) return it->second;
    return carries_label(*pod, key);
  };
  PodWrite change{*pod, std::nullopt, {}, {}};
  if (plan.holds && *plan.holds != current) change.holds = plan.holds;
  for (const std::string& key : plan.may_add)
    if (plan.labels.contains(key) && !carries(key)) change.add.insert(key);
  for (const std::string& key : plan.may_remove)
    if (!plan.labels.contains(key) && carries(key)) change.remove.insert(key);
  if (!change.holds && change.add.empty() && change.remove.empty()) return std::nullopt;
  return change;
}

Result<WriteOutcome> HoldsAnnotation::write(const PodWrite& change, MonoTime now) {
  const PodRecord& pod = change.pod;
  json metadata = json::object();
  if (change.holds)
    metadata["annotations"] = {
        {api::kHoldsAnnotation, change.holds->empty() ? json(nullptr) : json(*change.holds)}};
  for (const std::string& key : change.add) metadata["labels"][key] = "true";
  for (const std::string& key : change.remove) metadata["labels"][key] = nullptr;
  // Telling a new holder can wait for the rate limit; taking the annotation or a label from
  // a pod that lost the lock cannot.
  const bool can_wait = change.remove.empty() && !(change.holds && change.holds->empty());
  const json patch{{"metadata", metadata}};
  kube::CallOptions call;
  call.metadata_only = true;  // only the new resourceVersion is read
  auto patched = can_wait ? api_.patch_unless_busy(kube::resources::pods(), pod.meta.ns, pod.meta.name,
                                                   kube::PatchType::kMerge, patch, false, call)
                          : kube::as_sent(api_.patch(kube::resources::pods(), pod.meta.ns, pod.meta.name,
                                                     kube::PatchType::kMerge, patch, false, call));
  if (!patched.ok()) {
    if (patched.error().code == ErrorCode::kNotFound) return WriteOutcome::kSkipped;
    return patched.error();
  }
  if (!*patched) return WriteOutcome::kDeferred;
  std::lock_guard lock(mutex_);
  Written& written = written_[pod.meta.uid];
  if (change.holds) {
    written.value = *change.holds;
  } else if (written.mark.version.empty()) {
    written.value = pod.holds_annotation;
  }
  for (const std::string& key : change.add) written.labels[key] = true;
  for (const std::string& key : change.remove) written.labels[key] = false;
  written.mark = OwnWriteMark{pod.meta.resource_version, resource_version_of(**patched), now};
  return WriteOutcome::kSent;
}

void HoldsAnnotation::seen(const std::string& uid, const std::string& version) {
  std::lock_guard lock(mutex_);
  if (auto it = written_.find(uid); it != written_.end() && it->second.mark.superseded_by(version))
    written_.erase(it);
}

void HoldsAnnotation::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  written_.erase(uid);
}

}  // namespace eslease::controller
