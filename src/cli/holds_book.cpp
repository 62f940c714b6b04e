#include "cli/holds_book.h"

#include <algorithm>

#include "common/text.h"

namespace eslease::cli {

nlohmann::json grant_json(const PodGrant& grant) {
  nlohmann::json out{{"lease", grant.lease}};
  if (grant.locks.size() == 1)
    out["lock"] = grant.locks.front();
  else
    out["locks"] = grant.locks;
  out["token"] = grant.token;
  out["validUntil"] = format_rfc3339_millis(grant.valid_until);
  return out;
}

nlohmann::json holds_json(const std::vector<PodGrant>& grants) {
  nlohmann::json list = nlohmann::json::array();
  for (const PodGrant& grant : grants) list.push_back(grant_json(grant));
  return nlohmann::json{{"holds", list}};
}

HoldsBook::HoldsBook(std::string pod_name, std::string pod_uid, std::optional<Millis> margin)
    : pod_name_(std::move(pod_name)), pod_uid_(std::move(pod_uid)), margin_(margin) {}

bool HoldsBook::mine(const LeaseView& lease) const {
  return lease.held() && !lease.fencing_token.empty() && lease.holder_pod == pod_name_ &&
         (lease.holder_uid.empty() || lease.holder_uid == pod_uid_);
}

void HoldsBook::lease_changed(const LeaseView& lease, WallTime wall_now, MonoTime mono_now) {
  auto it = leases_.find(lease.name);
  if (it != leases_.end() && (!mine(lease) || lease.fencing_token != it->second.lease.fencing_token)) {
    std::string why;
    if (lease.uid != it->second.lease.uid) {
      why = "Lease " + lease.name + " was replaced by another object";
    } else if (mine(lease)) {
      why = "Lease " + lease.name + " was granted again, with fencing token " + lease.fencing_token;
    } else if (lease.held()) {
      why = "Lease " + lease.name + " is now held by pod " + lease.holder_pod;
    } else {
      why =
          "Lease " + lease.name + " is no longer Held (phase " + (lease.phase.empty() ? "none" : lease.phase);
      if (!lease.held_reason.empty()) why += ", " + lease.held_reason;
      if (!lease.held_message.empty()) why += ": " + lease.held_message;
      why += ")";
    }
    over_.try_emplace(grant_of(it->second), why);
    leases_.erase(it);
  }
  if (!mine(lease)) return;
  auto [tracked, first] = leases_.try_emplace(lease.name);
  Tracked& t = tracked->second;
  if (first) t.lease_duration = api::lease_duration(lease.spec.lease_duration_seconds);
  t.lease = lease;
  if (lease.being_deleted) over_.try_emplace(grant_of(t), "Lease " + lease.name + " is being deleted");
  judge(t, wall_now, mono_now);
}

void HoldsBook::lease_deleted(const std::string& name) {
  auto it = leases_.find(name);
  if (it == leases_.end()) return;
  over_.try_emplace(grant_of(it->second), "Lease " + name + " was deleted");
  leases_.erase(it);
}

void HoldsBook::session_changed(const api::Session& session, WallTime wall_now, MonoTime mono_now) {
  session_ = session;
  for (auto& [name, t] : leases_) judge(t, wall_now, mono_now);
}

void HoldsBook::judge(Tracked& t, WallTime wall_now, MonoTime mono_now) {
  // A grant whose deadline passed while it was reported is over for good: what relied on it
  // was told to stop, and a process that could not watch must not believe in it again.
  if (t.confirmed && t.deadline && mono_now >= *t.deadline)
    over_.try_emplace(grant_of(t), why_not(t, mono_now));
  if (!session_) return;
  const api::GrantRef grant = grant_of(t);
  if (session_->lists(grant)) {
    over_.try_emplace(grant, "Lease " + t.lease.name + " with fencing token " + grant.token +
                                 " was revoked (session " + api::kSessionName + " lists it)");
    return;
  }
  const Millis margin = margin_.value_or(api::default_holder_margin(t.lease_duration));
  const auto deadline = api::holder_deadline(*session_, grant, t.lease_duration, margin, wall_now, mono_now);
  if (!deadline) return;
  t.deadline = deadline->mono;
  t.valid_until = deadline->wall;
  t.confirmed = t.confirmed || deadline->mono > mono_now;
}

std::string HoldsBook::why_not(const Tracked& t, MonoTime now) const {
  if (auto over = over_.find(grant_of(t)); over != over_.end()) return over->second;
  if (!t.deadline || !t.confirmed)
    return "session " + std::string(api::kSessionName) + " has published no validity for Lease " +
           t.lease.name + " yet";
  if (now >= *t.deadline)
    return "the validity published for Lease " + t.lease.name + " ended before a renewal was seen";
  return "";
}

PodGrant HoldsBook::grant(const Tracked& t) const {
  return PodGrant{t.lease.name, t.lease.locks(), t.lease.fencing_token, t.valid_until};
}

std::vector<PodGrant> HoldsBook::holds(MonoTime now) const {
  std::vector<PodGrant> out;
  for (const auto& [name, t] : leases_)
    if (why_not(t, now).empty()) out.push_back(grant(t));
  return out;
}

std::optional<PodGrant> HoldsBook::hold_on(const std::string& lock, MonoTime now) const {
  for (const auto& [name, t] : leases_)
    if (t.lease.claims(lock) && why_not(t, now).empty()) return grant(t);
  return std::nullopt;
}

std::optional<MonoTime> HoldsBook::next_deadline(MonoTime now) const {
  std::optional<MonoTime> next;
  for (const auto& [name, t] : leases_)
    if (why_not(t, now).empty() && (!next || *t.deadline < *next)) next = t.deadline;
  return next;
}

HoldsBook::Changes HoldsBook::take_changes(MonoTime now) {
  for (auto& [name, t] : leases_)
    if (t.confirmed && t.deadline && now >= *t.deadline) over_.try_emplace(grant_of(t), why_not(t, now));
  std::map<std::string, PodGrant> current;
  for (PodGrant& g : holds(now)) current.emplace(g.lease, std::move(g));
  Changes changes;
  changes.any_change = current != reported_;
  for (const auto& [name, before] : reported_) {
    auto now_reported = current.find(name);
    if (now_reported != current.end() && now_reported->second.token == before.token) continue;
    auto over = over_.find(api::GrantRef{name, before.token});
    changes.lost.push_back(LostGrant{before, over != over_.end() ? over->second : "no longer reported"});
  }
  for (const auto& [name, g] : current) {
    auto before = reported_.find(name);
    if (before == reported_.end() || before->second.token != g.token) changes.granted.push_back(g);
  }
  reported_ = std::move(current);
  // What ended is remembered while its Lease still names this pod; a Lease that moved on has
  // nothing left to hide.
  std::erase_if(over_, [&](const auto& entry) { return !leases_.contains(entry.first.lease); });
  return changes;
}

}  // namespace eslease::cli
