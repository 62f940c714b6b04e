// `eslease status` in Kubernetes mode: the claims of each lock grouped as the holder, the
// queue in the order the controller serves it, and the claims that ended (TimedOut, Invalid,
// Released). Pure: built from decoded Leases and the time, printed as a table or JSON.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/lease_view.h"

namespace eslease::cli {

struct LockReport {
  std::string ns;
  std::string lock;
  // As the controller takes it: stated by the oldest claim that has not ended (a claim stating
  // another is Invalid).
  std::int64_t capacity = 1;
  std::vector<LeaseView> holders;  // Held claims: up to the capacity, unless a hand-over is being written
  std::vector<LeaseView> queue;    // Pending (and not yet served) claims, next first
  std::vector<LeaseView> ended;    // TimedOut, Invalid, Released
};

// Locks sorted by namespace and name; a lock set's claim is listed under each of its locks
// (the table's SET column and each claim's "locks" in JSON name the whole set). The queue follows the
// controller's order of service: the claims it gave a queuePosition first, then those without one (no status
// yet, no live pod, or far back), each by the controller's rank (Foreground before Background, then how long
// they have waited, then age and name). A lock set's claim waits by its furthest lock, so its queuePosition
// may be larger than that of a claim it is served before. The table's QUEUE column shows queuePosition
// itself (0 = next), "-" where the Lease has none.
std::vector<LockReport> build_lock_reports(const std::vector<LeaseView>& leases);

void print_lock_reports(std::ostream& out, const std::vector<LockReport>& reports, WallTime now,
                        bool show_namespace);
nlohmann::json lock_reports_json(const std::vector<LockReport>& reports, WallTime now);

// 45s, 3m12s, 2h5m: how long, for people.
std::string format_age(Millis age);
// The LOCK cell of both modes' status: a lock of capacity above 1 shows the slots its holders
// take against its capacity, "jobs (2/3)"; an Exclusive holder takes them all.
std::string lock_cell(const std::string& lock, std::int64_t slots_taken, std::int64_t capacity);

}  // namespace eslease::cli
