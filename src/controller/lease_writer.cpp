#include "controller/lease_writer.h"

#include <algorithm>

#include "common/json_fields.h"
#include "common/log.h"
#include "controller/lease_codec.h"

namespace eslease::controller {

using nlohmann::json;

std::string resource_version_of(const json& object) {
  const json* meta = json_fields::find(object, "metadata");
  return meta ? json_fields::string_at(*meta, "resourceVersion") : std::string();
}

void LeaseWriter::overlay(LeaseRecord& lease, MonoTime now) const {
  std::lock_guard lock(mutex_);
  auto written = pending_.find(lease.meta.uid);
  if (written == pending_.end()) return;
  // Compared as written: the API keeps times to the millisecond or second.
  if (status_patch(lease.status) == status_patch(written->second.status) ||
      written->second.mark.expired(lease.meta.resource_version, now)) {
    pending_.erase(written);  // the cache has caught up, or is the truth again
  } else {
    lease.status = written->second.status;
  }
}

bool LeaseWriter::written_by_another_locked(const LeaseRecord& lease) const {
  const std::string& uid = lease.meta.uid;
  if (lease.status.phase == Phase::kNone || pending_.contains(uid)) return false;
  const auto ours = last_write_.find(uid);
  return ours == last_write_.end() || ours->second.version != lease.meta.resource_version ||
         !ours->second.status_ours;
}

bool LeaseWriter::written_by_another(const LeaseRecord& lease) const {
  std::lock_guard lock(mutex_);
  return written_by_another_locked(lease);
}

std::string LeaseWriter::precondition(const LeaseRecord& lease) const {
  const auto ours = last_write_.find(lease.meta.uid);
  // The cache still shows the version our last write was decided on: that write came after it.
  if (ours != last_write_.end() && ours->second.base == lease.meta.resource_version &&
      !ours->second.version.empty())
    return ours->second.version;
  return lease.meta.resource_version;
}

void LeaseWriter::wrote(const LeaseRecord& lease, const std::string& version, bool status_ours) {
  last_write_[lease.meta.uid] = LastWrite{lease.meta.resource_version, version, status_ours};
}

bool LeaseWriter::may_write(const LeaseRecord& lease, MonoTime now, std::optional<MonoTime>& retry_at,
                            bool& correcting) {
  std::lock_guard lock(mutex_);
  const std::string& uid = lease.meta.uid;
  correcting = written_by_another_locked(lease);
  if (!correcting) return true;
  if (auto last = corrected_at_.find(uid);
      last != corrected_at_.end() && now < last->second + kCorrectionPace) {
    const MonoTime next = last->second + kCorrectionPace;
    if (!retry_at || next < *retry_at) retry_at = next;
    return false;
  }
  return true;
}

bool grants_the_lock(const LeaseStatus& now, const LeaseStatus& desired) {
  return desired.phase == Phase::kHeld && desired.fencing_token != now.fencing_token;
}

Urgency status_write_urgency(const LeaseStatus& now, const LeaseStatus& desired, bool holder_confirmed_dead) {
  const bool taken_away = now.phase == Phase::kHeld && desired.phase != Phase::kHeld;
  if (taken_away && !holder_confirmed_dead) return Urgency::kHandOver;
  if (!grants_the_lock(now, desired)) return Urgency::kCanWait;
  const bool takeover = desired.last_takeover && desired.last_takeover != now.last_takeover;
  return takeover ? Urgency::kHandOver : Urgency::kUrgent;
}

Result<WriteOutcome> LeaseWriter::write_status(const LeaseRecord& lease, const LeaseStatus& desired,
                                               Urgency urgency, MonoTime now,
                                               std::optional<MonoTime>& retry_at) {
  bool correcting = false;
  // What only people read (the Lock column) goes with a write made for another reason: an
  // upgrade does not rewrite every Lease to show it.
  LeaseStatus compared = desired;
  compared.lock = lease.status.lock;
  if (compared == lease.status) return WriteOutcome::kSkipped;
  if (!may_write(lease, now, retry_at, correcting)) return WriteOutcome::kPaced;
  const auto& leases = kube::resources::eslease_leases();
  json patch = status_patch(desired);
  {
    std::lock_guard lock(mutex_);
    patch["metadata"] = {{"resourceVersion", precondition(lease)}};
  }
  kube::CallOptions call;
  call.hands_over = urgency == Urgency::kHandOver;
  call.metadata_only = true;  // only the new resourceVersion is read
  auto patched =
      urgency == Urgency::kCanWait
          ? api_.patch_unless_busy(leases, lease.meta.ns, lease.meta.name, kube::PatchType::kMerge, patch,
                                   /*status_subresource=*/true, call)
          : kube::as_sent(api_.patch(leases, lease.meta.ns, lease.meta.name, kube::PatchType::kMerge, patch,
                                     /*status_subresource=*/true, call));
  if (!patched.ok()) {
    if (patched.error().code == ErrorCode::kNotFound) return WriteOutcome::kSkipped;
    if (patched.error().code == ErrorCode::kConflict) {
      // Written since the version decided on (another replica, the holder's release, a spec
      // change): the watch brings it, and the claim is decided again on it.
      log::debug("Lease changed since it was read; deciding again", {{"lease", lease.meta.key()}});
      return WriteOutcome::kConflict;
    }
    log::warn("cannot write Lease status",
              {{"lease", lease.meta.key()}, {"error", patched.error().describe()}});
    return patched.error();
  }
  if (!*patched) return WriteOutcome::kDeferred;  // not sent: the pace is not used up
  std::lock_guard lock(mutex_);
  if (correcting) corrected_at_[lease.meta.uid] = now;
  const std::string version = resource_version_of(**patched);
  pending_[lease.meta.uid] = Written{desired, OwnWriteMark{lease.meta.resource_version, version, now}};
  wrote(lease, version, /*status_ours=*/true);
  return WriteOutcome::kSent;
}

Result<WriteOutcome> LeaseWriter::write_finalizer(const LeaseRecord& lease, bool present) {
  std::vector<std::string> finalizers = lease.finalizers;
  std::erase(finalizers, std::string(api::kFinalizer));
  if (present) finalizers.push_back(api::kFinalizer);
  std::string version;
  {
    std::lock_guard lock(mutex_);
    version = precondition(lease);
  }
  json patch = {{"metadata", {{"finalizers", finalizers}, {"resourceVersion", version}}}};
  // A finalizer never moves a lock: it can wait. Its answer is not read.
  kube::CallOptions call;
  call.metadata_only = true;
  auto patched = api_.patch_unless_busy(kube::resources::eslease_leases(), lease.meta.ns, lease.meta.name,
                                        kube::PatchType::kMerge, patch, /*status_subresource=*/false, call);
  if (patched.ok() && !*patched) return WriteOutcome::kDeferred;
  if (patched.ok() && present) {
    std::lock_guard lock(mutex_);
    wrote(lease, resource_version_of(**patched), !written_by_another_locked(lease));
  }
  if (patched.ok() || patched.error().code == ErrorCode::kNotFound) {
    if (!present) forget(lease.meta.uid);
    return patched.ok() ? WriteOutcome::kSent : WriteOutcome::kSkipped;
  }
  // A conflict only means our cache was behind: decided again on the newer version.
  if (patched.error().code == ErrorCode::kConflict) return WriteOutcome::kConflict;
  log::warn(present ? "cannot add the Lease finalizer" : "cannot remove the Lease finalizer",
            {{"lease", lease.meta.key()}, {"error", patched.error().describe()}});
  return patched.error();
}

void LeaseWriter::seen(const std::string& uid, const std::string& version) {
  std::lock_guard lock(mutex_);
  // Our version ends the memory at once: a reconcile overlays each claim as it copies it from
  // the cache, under the cache's lock (Reconciler::claims_of), so no copy older than this
  // delivery is still to be overlaid. Kept longer, the memories of a cold start's statuses
  // all lived until their locks were reconciled again: a tenth more peak memory.
  if (auto it = pending_.find(uid); it != pending_.end() && it->second.mark.version == version)
    pending_.erase(it);
}

void LeaseWriter::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  pending_.erase(uid);
  last_write_.erase(uid);
  corrected_at_.erase(uid);
}

}  // namespace eslease::controller
