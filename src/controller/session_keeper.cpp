#include "controller/session_keeper.h"

#include <algorithm>

#include "common/log.h"
#include "controller/claim_queue.h"
#include "controller/lease_writer.h"
#include "controller/session_coverage.h"

namespace eslease::controller {
namespace {

// A lease duration nobody can exceed (the CRD's maximum), for listings of Leases we cannot see.
constexpr Millis kLongestLease{std::chrono::hours(1)};

}  // namespace

struct SessionKeeper::Namespace {
  std::mutex mutex;      // one session write (or read) at a time
  bool dropped = false;  // no longer in namespaces_: whoever waited for it looks again
  bool loaded = false;
  api::Session object;  // as last read or written; resource_version empty: absent
  // When the latest renewTime the object shows was read (ours) or first seen (another
  // writer's), on our clock: published validity of an unlisted grant ends at most its lease
  // duration later.
  std::optional<MonoTime> renewal_at;
  // A grant the session lists: when the validity its holder was shown ends, decided once, as
  // the listing is written (none: no renewal was published before it), and when the listing
  // may go.
  struct Listing {
    std::optional<MonoTime> hand_over;
    MonoTime droppable_at;
  };
  std::map<api::GrantRef, Listing> listings;
};

SessionKeeper::SessionKeeper(LockTable& table, lock::LockStore& store, kube::Api& api,
                             const ClusterView& cluster, Observer& observer, Clock& clock,
                             SessionOptions options)
    : table_(table),
      store_(store),
      api_(api),
      cluster_(cluster),
      observer_(observer),
      clock_(clock),
      options_(std::move(options)) {}

SessionKeeper::~SessionKeeper() = default;

std::pair<std::shared_ptr<SessionKeeper::Namespace>, std::unique_lock<std::mutex>> SessionKeeper::lock_state(
    const std::string& ns) {
  for (;;) {
    std::shared_ptr<Namespace> n;
    {
      std::lock_guard lock(mutex_);
      auto& slot = namespaces_[ns];
      if (!slot) slot = std::make_shared<Namespace>();
      n = slot;
    }
    std::unique_lock held(n->mutex);
    if (n->dropped) continue;
    n->object.ns = ns;
    return {std::move(n), std::move(held)};
  }
}

void SessionKeeper::forget_if_idle(const std::string& ns) {
  std::lock_guard lock(mutex_);
  if (due_.contains(ns)) return;
  auto it = namespaces_.find(ns);
  if (it == namespaces_.end()) return;
  // Outlives `held` below: erasing the map's reference must not free the mutex still locked.
  const std::shared_ptr<Namespace> keep = it->second;
  Namespace& n = *keep;
  std::unique_lock held(n.mutex, std::try_to_lock);  // a session write under way: kept
  if (!held.owns_lock()) return;
  // A renewal whose outcome is unknown, or a listing, is remembered while it matters.
  if (!n.object.resource_version.empty() || !n.object.revoked.empty() || !n.listings.empty() || n.renewal_at)
    return;
  n.dropped = true;
  namespaces_.erase(it);
}

std::size_t SessionKeeper::namespaces() const {
  std::lock_guard lock(mutex_);
  return namespaces_.size();
}

void SessionKeeper::schedule(const std::string& ns, MonoTime at) {
  // Under mutex_.
  if (auto due = due_.find(ns); due != due_.end() && due->second <= at) return;  // an earlier one is planned
  due_[ns] = at;
  woken_ = true;  // run() waits for the earliest tick it knew of
  cv_.notify_all();
}

void SessionKeeper::wake(const std::string& ns, Millis lease_duration) {
  std::lock_guard lock(mutex_);
  // The grant's validity counts from the renewal being published now, or else from the last
  // one: ticking at a quarter of its duration from there leaves it three quarters at least.
  std::optional<MonoTime> picked;
  if (auto ticking = ticking_since_.find(ns); ticking != ticking_since_.end()) {
    picked = ticking->second;
  } else if (auto renewed = renewal_picked_.find(ns); renewed != renewal_picked_.end()) {
    picked = renewed->second;
  }
  schedule(ns, picked ? *picked + api::renewal_interval(lease_duration) : clock_.monotonic());
}

void SessionKeeper::run(std::stop_token stop) {
  // Every namespace whose Leases show a grant gets a tick at once: a new leader covers (or
  // lists) what the previous one published.
  std::set<std::string> shown;
  cluster_.for_each_lease([&](const LeaseRecord& lease) {
    if (lease.status.phase == Phase::kHeld) shown.insert(lease.meta.ns);
  });
  for (const std::string& ns : shown) wake(ns, Millis(0));
  while (!stop.stop_requested()) {
    tick_due();
    std::unique_lock lock(mutex_);
    MonoTime next = MonoTime::max();
    for (const auto& [ns, at] : due_) next = std::min(next, at);
    clock_.wait_until(lock, cv_, next, stop, [this] { return woken_; });
    woken_ = false;
  }
}

int SessionKeeper::tick_due() {
  std::vector<std::string> due;
  {
    std::lock_guard lock(mutex_);
    const MonoTime now = clock_.monotonic();
    for (const auto& [ns, at] : due_)
      if (at <= now) due.push_back(ns);
  }
  for (const std::string& ns : due) tick(ns);
  return static_cast<int>(due.size());
}

Status SessionKeeper::load(Namespace& n) {
  if (n.loaded) return {};
  const std::string ns = n.object.ns;
  auto got = api_.get(kube::resources::coordination_leases(), ns, api::kSessionName);
  const MonoTime now = clock_.monotonic();
  if (!got.ok() && got.error().code != ErrorCode::kNotFound) return got.error();
  n.object = got.ok() ? api::decode_session(*got) : api::Session{};
  n.object.ns = ns;
  // Another writer's renewal (a previous leader's): counted from now, when we first see it.
  n.renewal_at = n.object.renew_time ? std::optional<MonoTime>(now) : std::nullopt;
  for (const api::GrantRef& g : n.object.revoked) {
    Millis duration = kLongestLease;
    if (auto lease = cluster_.lease(object_key(ns, g.lease)))
      duration = api::lease_duration(lease->spec.lease_duration_seconds);
    // Listed by another writer, after a renewal it may have shown: counted from now too.
    const std::optional<MonoTime> hand_over =
        n.renewal_at ? std::optional<MonoTime>(now + duration) : std::nullopt;
    n.listings.emplace(g, Namespace::Listing{hand_over, now + duration + options_.keep_listed});
  }
  n.loaded = true;
  return {};
}

Status SessionKeeper::write(Namespace& n, std::optional<Renewal> renewal,
                            const std::map<api::GrantRef, Millis>& add) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (Status loaded = load(n); !loaded.ok()) return loaded;
    const std::optional<MonoTime> published_since = n.renewal_at;
    api::Session next = n.object;
    next.holder_identity = options_.identity;
    if (renewal) next.renew_time = renewal->wall;
    const MonoTime now = clock_.monotonic();
    std::erase_if(next.revoked, [&](const api::GrantRef& g) {
      auto it = n.listings.find(g);
      return it != n.listings.end() && now >= it->second.droppable_at && !add.contains(g);
    });
    for (const auto& [grant, duration] : add) next.revoked.insert(grant);
    // Without a session nothing was published, so nothing needs listing.
    if (!renewal && (next.resource_version.empty() || next.revoked == n.object.revoked)) return {};
    const MonoTime sent = clock_.monotonic();
    const kube::Resource resource = kube::resources::coordination_leases();
    auto written = next.resource_version.empty()
                       ? api_.create(resource, n.object.ns, api::session_object(next))
                       : api_.update(resource, api::session_object(next));
    if (written.ok()) {
      n.object = api::decode_session(*written);
      n.object.ns = next.ns;
      // The validity published is counted from renewTime, read when the tick began (before
      // the documents' renewal): so is its hand-over, no later than the holders were shown.
      if (renewal) n.renewal_at = renewal->mono;
      for (auto it = n.listings.begin(); it != n.listings.end();)
        it = n.object.revoked.contains(it->first) ? std::next(it) : n.listings.erase(it);
      for (const auto& [grant, duration] : add) {
        // Hand-over: the latest renewal published before this listing, plus the grant's
        // lease duration; a minute more before the listing may go. A grant listed before
        // keeps the hand-over of its first listing: no version since has shown it a renewal.
        std::optional<MonoTime> hand_over;
        if (published_since) hand_over = *published_since + duration;
        n.listings.emplace(grant, Namespace::Listing{hand_over, published_since.value_or(sent) + duration +
                                                                    options_.keep_listed});
      }
      return {};
    }
    if (written.error().unavailable()) {
      // The outcome is unknown: holders may see this renewal, so validities published
      // before a listing are counted from it, and the object is read again before the next
      // write.
      if (renewal) n.renewal_at = renewal->mono;
      n.loaded = false;
    }
    const ErrorCode code = written.error().code;
    if (code != ErrorCode::kConflict && code != ErrorCode::kAlreadyExists && code != ErrorCode::kNotFound) {
      log::warn("cannot write the session",
                {{"namespace", n.object.ns}, {"error", written.error().describe()}});
      return written.error();
    }
    n.loaded = false;  // another writer moved it: read it and merge
  }
  return make_error(ErrorCode::kConflict, "the session of " + n.object.ns + " keeps changing");
}

Result<std::optional<MonoTime>> SessionKeeper::revoke(const std::string& ns, const api::GrantRef& grant,
                                                      Millis lease_duration) {
  auto [state, held] = lock_state(ns);
  Namespace& n = *state;
  if (Status loaded = load(n); !loaded.ok()) return loaded.error();
  if (n.object.resource_version.empty()) return std::optional<MonoTime>();  // nothing was ever published
  if (!n.object.lists(grant)) {
    if (Status written = write(n, std::nullopt, {{grant, lease_duration}}); !written.ok())
      return written.error();
  }
  return hand_over_of(n, grant, lease_duration);
}

std::optional<MonoTime> SessionKeeper::hand_over_of(const Namespace& n, const api::GrantRef& grant,
                                                    Millis lease_duration) {
  if (auto it = n.listings.find(grant); it != n.listings.end()) return it->second.hand_over;
  // Not listed as far as we know (cannot happen after a listing was written): the latest
  // renewal we know of counts as published before it.
  if (!n.renewal_at) return std::nullopt;
  return *n.renewal_at + lease_duration;
}

void SessionKeeper::tick(const std::string& ns) {
  const WallTime renewal = lock::to_millis(clock_.now());
  const MonoTime started = clock_.monotonic();
  {
    // Until it ends, this tick's wake-ups are ours to plan: a grant made meanwhile asks for
    // the next one through wake(), counted from this tick's renewal.
    std::lock_guard guard(mutex_);
    ticking_since_[ns] = started;
    due_.erase(ns);
  }
  Coverage coverage;
  renew_held(ns, renewal, coverage);
  if (options_.backend_answered) {
    if (coverage.any_answer) options_.backend_answered(true);
    if (coverage.any_unavailable && !coverage.any_answer) options_.backend_answered(false);
  }
  check_published(ns, renewal, coverage);
  std::map<std::string, std::pair<api::GrantRef, std::optional<MonoTime>>>
      revoked;  // lock id -> grant, hand-over
  const MonoTime next = write_session(ns, renewal, started, coverage, revoked);
  // The grants listed are revoked in the lock table too (outside the session's mutex: a
  // reconcile may hold an entry while it waits to list): their reconcile then writes their
  // Lease status, and hands them over no earlier than the validity they were shown.
  for (const auto& [document_id, listed] : revoked) {
    if (std::optional<LockTable::Handle> entry = table_.lock_existing(document_id)) {
      if ((*entry)->document() && names_fencing_token(listed.first.token, (*entry)->document()->token))
        (*entry)->revoke((*entry)->revoked().value_or(api::Reason::kRenewalFailed), listed.second);
    }
    // The lock's reconcile revokes the grant's other documents, if it has any.
    if (options_.enqueue) options_.enqueue(document_id.substr(0, document_id.find('#')));
  }
  bool idle = false;
  {
    std::lock_guard guard(mutex_);
    ticking_since_.erase(ns);
    if (coverage.renewed) renewal_picked_[ns] = started;
    if (next != MonoTime::max()) {
      // A tick that did not renew comes again soon: a grant made meanwhile waits no longer.
      schedule(ns, next);
      return;
    }
    renewal_picked_.erase(ns);
    // Nothing was held: a grant made meanwhile is not covered by this tick and needs its own.
    if (auto due = due_.find(ns); due != due_.end())
      due->second = clock_.monotonic();
    else
      idle = true;
  }
  if (idle) forget_if_idle(ns);
}

MonoTime SessionKeeper::write_session(
    const std::string& ns, WallTime renewal, MonoTime started, Coverage& coverage,
    std::map<std::string, std::pair<api::GrantRef, std::optional<MonoTime>>>& revoked) {
  auto [state, held_mutex] = lock_state(ns);
  Namespace& n = *state;
  const Millis shortest = coverage.shortest.value_or(kLongestLease);
  // Only a third of the published validity left: stop waiting for what cannot be covered.
  const bool forced = n.renewal_at && started >= *n.renewal_at + shortest * 2 / 3;
  // Grants to list, or to keep listed while a Lease still shows them Held: a listing dropped
  // then would publish their holders validity again.
  std::map<api::GrantRef, Millis> to_list;
  std::map<api::GrantRef, std::string> listed_locks;  // listed by this write
  auto list_all = [&](const auto& grants) {
    for (const auto& [grant, lock_id] : grants) {
      to_list[grant] = coverage.durations[grant];
      if (!n.object.lists(grant)) listed_locks[grant] = lock_id;
    }
  };
  list_all(coverage.stale);
  list_all(listed_ours(n, coverage));
  const bool waiting = !coverage.failed.empty() || !coverage.pending.empty();
  if (forced) {
    list_all(coverage.failed);
    list_all(coverage.pending);
  }
  const bool held = coverage.shortest.has_value();
  if (!held && n.object.resource_version.empty() && to_list.empty()) return MonoTime::max();
  const bool renew = held && (!waiting || forced);
  if (Status written =
          write(n, renew ? std::optional<Renewal>(Renewal{renewal, started}) : std::nullopt, to_list);
      !written.ok())
    return clock_.monotonic() + options_.retry_after;
  coverage.renewed = renew;
  for (const auto& [grant, lock_id] : listed_locks)
    revoked[lock_id] = {grant, hand_over_of(n, grant, to_list[grant])};
  // Grants of ours listed before this write (by a revocation since the documents' renewal,
  // or by another writer, seen while merging with its version): revocation is final, so they
  // are revoked here too, handed over as their first listing said, not after this renewal,
  // which their holders were never shown.
  for (const auto& [grant, lock_id] : listed_ours(n, coverage)) {
    if (!revoked.contains(lock_id))
      revoked[lock_id] = {grant, hand_over_of(n, grant, coverage.durations[grant])};
  }
  if (!held) return retire(n) ? MonoTime::max() : clock_.monotonic() + options_.keep_listed;
  return clock_.monotonic() + (renew ? api::renewal_interval(shortest) : options_.retry_after);
}

std::map<api::GrantRef, std::string> SessionKeeper::listed_ours(const Namespace& n,
                                                                const Coverage& coverage) {
  // The listed grants are few; the grants a tick saw may be every grant of the namespace.
  std::map<api::GrantRef, std::string> listed;
  for (const api::GrantRef& grant : n.object.revoked) {
    for (const auto* grants : {&coverage.covered, &coverage.failed, &coverage.pending}) {
      if (auto found = grants->find(grant); found != grants->end()) {
        listed.emplace(grant, found->second);
        break;
      }
    }
  }
  return listed;
}

bool SessionKeeper::retire(Namespace& n) {
  // Nothing held: once nothing is listed either, the session goes.
  if (!n.object.revoked.empty() || n.object.resource_version.empty())
    return n.object.resource_version.empty();
  kube::DeleteOptions options;
  options.precondition_resource_version = n.object.resource_version;
  if (!api_.remove(kube::resources::coordination_leases(), n.object.ns, api::kSessionName, options).ok())
    return false;
  const std::string ns = n.object.ns;
  n.object = api::Session{};
  n.object.ns = ns;
  n.renewal_at.reset();
  return true;
}

}  // namespace eslease::controller
