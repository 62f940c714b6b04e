#include "cli/status_report.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <tuple>

#include "common/text.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

std::string pod_of(const LeaseView& v) {
  if (!v.holder_pod.empty()) return v.holder_pod;
  return v.spec.holders();
}

std::optional<Millis> age_since(const std::optional<WallTime>& since, WallTime now) {
  if (!since) return std::nullopt;
  return std::max(Millis(0), std::chrono::duration_cast<Millis>(now - *since));
}

// Whether any claim listed is on a lock set: the table then has a SET column.
bool lists_a_set(const std::vector<LockReport>& reports) {
  const auto on_set = [](const LeaseView& v) { return v.spec.is_set(); };
  return std::any_of(reports.begin(), reports.end(), [&](const LockReport& r) {
    return std::any_of(r.holders.begin(), r.holders.end(), on_set) ||
           std::any_of(r.queue.begin(), r.queue.end(), on_set) ||
           std::any_of(r.ended.begin(), r.ended.end(), on_set);
  });
}

// The slots a lock's holders take, as the controller counts them: one for each Shared holder,
// all of them for an Exclusive one, never more than the capacity.
std::int64_t slots_taken(const LockReport& r) {
  std::int64_t taken = 0;
  for (const LeaseView& v : r.holders)
    taken += v.spec.effective_access() == api::Access::kShared ? 1 : r.capacity;
  return std::min(taken, r.capacity);
}

// The slot a Shared holder has on `r`'s lock: status.slot names one of its first lock's slots;
// an Exclusive holder has them all.
std::optional<std::int64_t> slot_on(const LockReport& r, const LeaseView& v) {
  if (!v.slot || v.spec.effective_access() != api::Access::kShared || r.lock != v.locks().front())
    return std::nullopt;
  return v.slot;
}

json optional_time(const std::optional<WallTime>& t) {
  return t ? json(format_rfc3339_millis(*t)) : json(nullptr);
}

json claim_json(const LeaseView& v) {
  json out{{"lease", v.name},
           {"pod", v.spec.pod_name.empty() ? json(nullptr) : json(v.spec.pod_name)},
           {"priority", api::to_string(v.spec.priority)},
           {"phase", v.phase.empty() ? json(nullptr) : json(v.phase)},
           {"locks", v.locks()}};
  if (v.spec.selector) out["podSelector"] = v.spec.selector->describe();
  if (!v.held_reason.empty()) out["reason"] = v.held_reason;
  return out;
}

}  // namespace

std::string lock_cell(const std::string& lock, std::int64_t slots_taken, std::int64_t capacity) {
  if (capacity <= 1) return lock;
  return lock + " (" + std::to_string(slots_taken) + "/" + std::to_string(capacity) + ")";
}

std::string format_age(Millis age) {
  long long s = std::max<long long>(0, age.count() / 1000);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + (s % 60 ? std::to_string(s % 60) + "s" : "");
  return std::to_string(s / 3600) + "h" + ((s % 3600) / 60 ? std::to_string((s % 3600) / 60) + "m" : "");
}

std::vector<LockReport> build_lock_reports(const std::vector<LeaseView>& leases) {
  std::map<std::pair<std::string, std::string>, LockReport> by_lock;
  // Per lock, the oldest claim that states its capacity (created, name).
  std::map<std::pair<std::string, std::string>, std::pair<WallTime, std::string>> stated_by;
  // A lock set's claim is a claim on each of its locks: it counts against each one's capacity
  // and stands in each one's queue, so it is listed under each.
  for (const LeaseView& v : leases) {
    for (const std::string& lock : v.locks()) {
      LockReport& report = by_lock[{v.ns, lock}];
      report.ns = v.ns;
      report.lock = lock;
      const bool ended = v.phase == api::to_string(api::Phase::kTimedOut) ||
                         v.phase == api::to_string(api::Phase::kInvalid) ||
                         v.phase == api::to_string(api::Phase::kReleased);
      // A claim the controller cannot serve (spec.problem) becomes Invalid: it states no capacity.
      if (!ended && !v.being_deleted && v.spec.problem.empty()) {
        const std::pair<WallTime, std::string> age{v.created.value_or(WallTime{}), v.name};
        auto [oldest, first] = stated_by.try_emplace({v.ns, lock}, age);
        if (first || age < oldest->second) {
          oldest->second = age;
          report.capacity = v.spec.capacity;
        }
      }
      if (v.held()) {
        report.holders.push_back(v);
      } else if (ended) {
        report.ended.push_back(v);
      } else {
        report.queue.push_back(v);
      }
    }
  }
  std::vector<LockReport> out;
  for (auto& [key, report] : by_lock) {
    const auto order = [](const LeaseView& a, const LeaseView& b) {
      const auto rank = [](const LeaseView& v) {
        return std::make_tuple(
            v.queue_position ? 0 : 1, v.spec.priority == api::Priority::kBackground ? 1 : 0,
            v.waiting_since().value_or(WallTime::max()), v.created.value_or(WallTime::max()), v.name);
      };
      return rank(a) < rank(b);
    };
    std::stable_sort(report.queue.begin(), report.queue.end(), order);
    std::stable_sort(report.ended.begin(), report.ended.end(),
                     [](const LeaseView& a, const LeaseView& b) { return a.name < b.name; });
    out.push_back(std::move(report));
  }
  return out;
}

// How much of a holder's published validity is left, as the session shows it now.
std::string validity_left(const LeaseView& v, WallTime now) {
  if (!v.held()) return "";
  if (!v.valid_until) return "-";
  const auto left = std::chrono::duration_cast<Millis>(*v.valid_until - now);
  return left > Millis(0) ? format_age(left) : "ended";
}

void print_lock_reports(std::ostream& out, const std::vector<LockReport>& reports, WallTime now,
                        bool show_namespace) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"LOCK",  "QUEUE", "LEASE", "POD",  "PRIORITY",
                                  "PHASE", "TOKEN", "FOR",   "VALID"};
  // A claim on a lock set is listed under each of its locks; SET names the whole set.
  const bool show_set = lists_a_set(reports);
  if (show_set) header.insert(header.begin() + 1, "SET");
  if (show_namespace) header.insert(header.begin(), "NAMESPACE");
  rows.push_back(header);
  const auto row = [&](const LockReport& r, const std::string& lock, const LeaseView& v, std::string queue,
                       std::optional<Millis> age) {
    std::vector<std::string> cells{lock,
                                   std::move(queue),
                                   v.name,
                                   pod_of(v),
                                   api::to_string(v.spec.priority),
                                   v.phase.empty() ? "-" : v.phase,
                                   v.fencing_token.empty() ? "-" : v.fencing_token,
                                   age ? format_age(*age) : "-",
                                   validity_left(v, now)};
    if (show_set) cells.insert(cells.begin() + 1, v.spec.is_set() ? join(v.spec.lock_names, "+") : "-");
    if (show_namespace) cells.insert(cells.begin(), r.ns);
    rows.push_back(std::move(cells));
  };
  for (const LockReport& r : reports) {
    const std::string lock = lock_cell(r.lock, slots_taken(r), r.capacity);
    for (const LeaseView& v : r.holders) {
      const bool shared = v.spec.effective_access() == api::Access::kShared;
      const std::optional<std::int64_t> slot = slot_on(r, v);
      row(r, lock, v,
          slot     ? "slot " + std::to_string(*slot) + " shared"
          : shared ? "held shared"
                   : "held",
          age_since(v.acquire_time, now));
    }
    // The claim's queuePosition as the controller published it (0 = next); none while its
    // pod is not live or more than 10 claims are ahead. The rows keep the order of service.
    for (const LeaseView& v : r.queue) {
      row(r, lock, v, v.queue_position ? std::to_string(*v.queue_position) : "-",
          age_since(v.waiting_since(), now));
    }
    for (const LeaseView& v : r.ended) row(r, lock, v, "-", std::nullopt);
  }
  out << format_columns(rows);
}

json lock_reports_json(const std::vector<LockReport>& reports, WallTime now) {
  json locks = json::array();
  for (const LockReport& r : reports) {
    json holders = json::array();
    for (const LeaseView& v : r.holders) {
      json h = claim_json(v);
      h["pod"] = v.holder_pod.empty() ? h["pod"] : json(v.holder_pod);
      h["podUID"] = v.holder_uid;
      h["fencingToken"] = v.fencing_token;
      h["acquireTime"] = optional_time(v.acquire_time);
      h["validUntil"] = optional_time(v.valid_until);
      h["access"] = api::to_string(v.spec.effective_access());
      const std::optional<std::int64_t> slot = slot_on(r, v);
      h["slot"] = slot ? json(*slot) : json(nullptr);
      const auto held_for = age_since(v.acquire_time, now);
      h["heldSeconds"] = held_for ? json(held_for->count() / 1000) : json(nullptr);
      holders.push_back(std::move(h));
    }
    json queue = json::array();
    for (std::size_t i = 0; i < r.queue.size(); ++i) {
      const LeaseView& v = r.queue[i];
      json q = claim_json(v);
      q["access"] = api::to_string(v.spec.effective_access());
      q["order"] = i;  // claims listed ahead of it: 0 first, as queuePosition counts
      q["queuePosition"] = v.queue_position ? json(*v.queue_position) : json(nullptr);
      q["waitingSince"] = optional_time(v.waiting_since());
      const auto waited = age_since(v.waiting_since(), now);
      q["waitingSeconds"] = waited ? json(waited->count() / 1000) : json(nullptr);
      queue.push_back(std::move(q));
    }
    json ended = json::array();
    for (const LeaseView& v : r.ended) {
      json e = claim_json(v);
      if (!v.held_message.empty()) e["message"] = v.held_message;
      ended.push_back(std::move(e));
    }
    locks.push_back(json{{"namespace", r.ns},
                         {"lock", r.lock},
                         {"capacity", r.capacity},
                         {"holders", holders},
                         {"queue", queue},
                         {"ended", ended}});
  }
  return json{{"locks", locks}};
}

}  // namespace eslease::cli
