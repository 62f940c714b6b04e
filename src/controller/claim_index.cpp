#include "controller/claim_index.h"

#include <algorithm>

#include "kube/resource.h"

namespace eslease::controller {

namespace {

std::vector<std::string> sorted_unique(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// The namespace of a Lease key (ns/name).
std::string namespace_of(const std::string& lease_key) {
  return lease_key.substr(0, lease_key.find('/'));
}

}  // namespace

std::vector<std::string> ClaimIndex::lease_changed(const LeaseRecord* before, const LeaseRecord* now) {
  std::set<std::string> touched;
  std::lock_guard lock(mutex_);
  if (before && now && before->meta.uid == now->meta.uid) {
    const std::string key = now->meta.key();
    // Most changes are to a status: they move only the counts.
    if (auto it = leases_.find(key); it != leases_.end()) {
      IndexedLease& claim = it->second;
      if (claim.indexed_as(indexed(*now))) {
        forget_arrival_once_served(*now);
        // A status rewritten in the same phase moves nothing: the sets hashed by Lease key
        // are large enough that taking a key out and putting it back costs cache misses.
        if (claim.phase != now->status.phase || claim.being_deleted != now->being_deleted) {
          uncount(key, claim);
          count(key, *now);
          claim.phase = now->status.phase;
          claim.being_deleted = now->being_deleted;
        }
        return sorted_unique(claim.lock_ids);
      }
    }
  }
  if (before) {
    const std::string key = before->meta.key();
    if (auto it = leases_.find(key); it != leases_.end())
      touched.insert(it->second.lock_ids.begin(), it->second.lock_ids.end());
    remove(key);
  }
  if (before && (!now || now->meta.uid != before->meta.uid)) arrivals_.erase(before->meta.uid);
  if (now) {
    forget_arrival_once_served(*now);
    add(now->meta.key(), *now);
    if (!now->spec.lock_name.empty()) {
      const std::vector<std::string> ids = now->lock_ids();
      touched.insert(ids.begin(), ids.end());
    }
  }
  return {touched.begin(), touched.end()};
}

void ClaimIndex::forget_arrival_once_served(const LeaseRecord& lease) {
  if (lease.status.phase != Phase::kNone && lease.status.phase != Phase::kPending)
    arrivals_.erase(lease.meta.uid);
}

void ClaimIndex::uncount(const std::string& lease_key, const IndexedLease& claim) {
  if (auto c = counts_.find({claim.phase, claim.priority}); c != counts_.end() && --c->second <= 0)
    counts_.erase(c);
  // Looked up only where the Lease was counted: each is a tree of up to every Lease.
  if (claim.phase == Phase::kPending || claim.phase == Phase::kNone) unserved_.erase(lease_key);
  if (claim.phase == Phase::kHeld) {
    auto ns = held_.find(namespace_of(lease_key));
    if (ns != held_.end() && ns->second.erase(lease_key) && ns->second.empty()) held_.erase(ns);
  }
}

void ClaimIndex::count(const std::string& lease_key, const LeaseRecord& lease) {
  ++counts_[{lease.status.phase, lease.spec.priority}];
  const bool unserved = lease.status.phase == Phase::kPending || lease.status.phase == Phase::kNone;
  if (unserved && !lease.being_deleted) unserved_.insert(lease_key);
  if (lease.status.phase == Phase::kHeld) held_[namespace_of(lease_key)].insert(lease_key);
}

void ClaimIndex::remove(const std::string& lease_key) {
  auto it = leases_.find(lease_key);
  if (it == leases_.end()) return;
  const IndexedLease& claim = it->second;
  uncount(lease_key, claim);
  for (const std::string& lock_id : claim.lock_ids) {
    if (auto l = by_lock_.find(lock_id); l != by_lock_.end()) {
      l->second.erase(lease_key);
      if (l->second.empty()) by_lock_.erase(l);
    }
    // Several claims of one lock may name the same pod: count them.
    if (auto p = claim.pod_key.empty() ? by_pod_.end() : by_pod_.find(claim.pod_key); p != by_pod_.end()) {
      if (--p->second[lock_id] <= 0) p->second.erase(lock_id);
      if (p->second.empty()) by_pod_.erase(p);
    }
  }
  if (claim.selector) {
    if (auto e = elections_by_ns_.find(namespace_of(lease_key)); e != elections_by_ns_.end()) {
      e->second.erase(lease_key);
      if (e->second.empty()) elections_by_ns_.erase(e);
    }
  }
  leases_.erase(it);
}

ClaimIndex::IndexedLease ClaimIndex::indexed(const LeaseRecord& lease) {
  IndexedLease claim{{}, "", std::nullopt, lease.status.phase, lease.spec.priority, lease.being_deleted};
  if (lease.spec.lock_name.empty()) return claim;  // counted only
  claim.lock_ids = lease.lock_ids();
  claim.selector = lease.spec.selector;
  if (!lease.spec.pod_name.empty()) claim.pod_key = object_key(lease.meta.ns, lease.spec.pod_name);
  return claim;
}

void ClaimIndex::add(const std::string& lease_key, const LeaseRecord& lease) {
  count(lease_key, lease);
  IndexedLease claim = indexed(lease);
  for (const std::string& lock_id : claim.lock_ids) {
    if (!claim.pod_key.empty()) ++by_pod_[claim.pod_key][lock_id];
    by_lock_[lock_id].insert(lease_key);
  }
  if (claim.selector) elections_by_ns_[lease.meta.ns].insert(lease_key);
  leases_[lease_key] = std::move(claim);
}

std::vector<std::string> ClaimIndex::locks() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  out.reserve(by_lock_.size());
  for (const auto& [id, leases] : by_lock_) out.push_back(id);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> ClaimIndex::held_in(const std::string& ns) const {
  std::lock_guard lock(mutex_);
  auto held = held_.find(ns);
  if (held == held_.end()) return {};
  return {held->second.begin(), held->second.end()};
}

std::vector<std::string> ClaimIndex::claims_of(const std::string& lock_id) const {
  std::lock_guard lock(mutex_);
  auto it = by_lock_.find(lock_id);
  if (it == by_lock_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<std::string> ClaimIndex::locks_for_pod(const PodRecord* before, const PodRecord* now) const {
  const PodRecord* any = now ? now : before;
  if (!any) return {};
  const std::string key = any->meta.key();
  std::set<std::string> out;
  std::lock_guard lock(mutex_);
  if (auto it = by_pod_.find(key); it != by_pod_.end())
    for (const auto& [lock_id, count] : it->second) out.insert(lock_id);
  if (auto it = held_by_.find(key); it != held_by_.end()) out.insert(it->second.begin(), it->second.end());
  if (auto it = elections_by_ns_.find(any->meta.ns); it != elections_by_ns_.end()) {
    for (const std::string& lease_key : it->second) {
      const IndexedLease& claim = leases_.at(lease_key);
      if ((before && claim.selector->matches(before->labels)) ||
          (now && claim.selector->matches(now->labels)))
        out.insert(claim.lock_ids.begin(), claim.lock_ids.end());
    }
  }
  return {out.begin(), out.end()};
}

void ClaimIndex::set_holder(const std::string& lock_id, const std::string& pod_key) {
  std::lock_guard lock(mutex_);
  auto it = holder_of_.find(lock_id);
  if (it != holder_of_.end()) {
    if (it->second == pod_key) return;
    if (auto h = held_by_.find(it->second); h != held_by_.end()) {
      h->second.erase(lock_id);
      if (h->second.empty()) held_by_.erase(h);
    }
    holder_of_.erase(it);
  }
  if (pod_key.empty()) return;
  holder_of_[lock_id] = pod_key;
  held_by_[pod_key].insert(lock_id);
}

ClaimCounts ClaimIndex::counts() const {
  ClaimCounts out;
  std::lock_guard lock(mutex_);
  for (const auto& [phase_priority, count] : counts_) {
    const auto [phase, priority] = phase_priority;
    const Phase shown = phase == Phase::kNone ? Phase::kPending : phase;  // no status yet: it waits
    out[{to_string(shown), to_string(priority)}] += count;
  }
  return out;
}

std::vector<ClaimIndex::UnservedClaim> ClaimIndex::unserved_claims() const {
  std::lock_guard lock(mutex_);
  std::vector<UnservedClaim> out;
  out.reserve(unserved_.size());
  for (const std::string& key : unserved_) {
    const auto found = leases_.find(key);
    if (found == leases_.end() || found->second.lock_ids.empty()) continue;
    const IndexedLease& claim = found->second;
    if (claim.selector) {
      out.push_back(UnservedClaim{"", namespace_of(key), claim.selector});
    } else {
      out.push_back(UnservedClaim{claim.pod_key, "", std::nullopt});
    }
  }
  return out;
}

void ClaimIndex::arrived(const std::string& uid, WallTime at) {
  std::lock_guard lock(mutex_);
  at = std::chrono::time_point_cast<std::chrono::microseconds>(at);
  if (at <= last_arrival_) at = last_arrival_ + std::chrono::microseconds(1);
  last_arrival_ = at;
  arrivals_.emplace(uid, at);
}

void ClaimIndex::listed_unqueued(std::vector<Unqueued> claims, bool relisted) {
  const bool ordered = std::all_of(claims.begin(), claims.end(), [](const Unqueued& c) {
    return kube::comparable_resource_version(c.resource_version);
  });
  std::sort(claims.begin(), claims.end(), [ordered](const Unqueued& a, const Unqueued& b) {
    if (a.created != b.created) return a.created < b.created;
    if (ordered) {
      const std::strong_ordering written =
          *kube::compare_resource_versions(a.resource_version, b.resource_version);
      if (std::is_neq(written)) return std::is_lt(written);
    }
    return a.name < b.name;
  });
  std::map<std::pair<std::string, WallTime>, int> made_in_second;  // by lock and second: claims
  for (const Unqueued& claim : claims)
    for (const std::string& id : claim.lock_ids) ++made_in_second[{id, claim.created}];
  constexpr int kLastMicrosecond = 999'999;  // the second's own: never the next one's
  std::lock_guard lock(mutex_);
  std::optional<WallTime> second;
  int offset = 0;
  for (const Unqueued& claim : claims) {
    offset = second == claim.created ? std::min(offset + 1, kLastMicrosecond) : 0;
    second = claim.created;
    const bool shares_its_second =
        std::any_of(claim.lock_ids.begin(), claim.lock_ids.end(), [&](const std::string& id) {
          return made_in_second[{id, claim.created}] > 1;
        });
    // Alone in its second in the start-up list: its creationTimestamp places it. (A re-list's
    // claim without an arrival would get the moment its add is told, after later ones.)
    if (!relisted && !shares_its_second) continue;
    WallTime at = claim.created + std::chrono::microseconds(offset);
    // A re-list's claims were made after every claim the watch brought before it went down.
    if (at <= last_arrival_) at = last_arrival_ + std::chrono::microseconds(1);
    if (arrivals_.emplace(claim.uid, at).second) last_arrival_ = at;
  }
}

std::optional<WallTime> ClaimIndex::arrival_of(const std::string& uid) const {
  std::lock_guard lock(mutex_);
  auto it = arrivals_.find(uid);
  if (it == arrivals_.end()) return std::nullopt;
  return it->second;
}

}  // namespace eslease::controller
