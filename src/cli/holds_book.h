// What `eslease sidecar` knows of its pod's grants: every Lease of the namespace the pod holds
// (claim mode or election mode alike: the Lease's status names the pod as its holder) and the
// namespace's session, judged by the one rule a holder follows (the design's "Sessions"). A
// grant is reported while its Lease shows Held for this pod with its token, the session does
// not list it as revoked, and the validity the session published to it, less the safety
// margin, has not ended on this process's monotonic clock; once that deadline has passed the
// grant is never reported again, exactly as `eslease run` never resumes its command. Pure and
// not thread-safe: the sidecar guards it, and the tests drive it on a fake clock.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/session.h"
#include "cli/lease_view.h"
#include "common/clock.h"

namespace eslease::cli {

// One grant of the pod, as the sidecar reports it.
struct PodGrant {
  std::string lease;
  std::vector<std::string> locks;  // one lock, or the locks of a set (the Lease's order)
  std::string token;
  // When the sidecar stops reporting it unless a renewal is seen: the published validity
  // less the safety margin.
  WallTime valid_until{};
  bool operator==(const PodGrant&) const = default;
};

// The grant as the sidecar shows it: {"lease", "lock" (or "locks" for a set), "token",
// "validUntil"}, the token a decimal string as the Lease shows it.
nlohmann::json grant_json(const PodGrant& grant);
// {"holds": [grant_json...]}: GET /holds and the --file.
nlohmann::json holds_json(const std::vector<PodGrant>& grants);

// A grant that stopped being reported, and why, in words.
struct LostGrant {
  PodGrant grant;
  std::string why;
};

class HoldsBook {
 public:
  // `margin`: the safety margin for every grant; unset, each grant's is
  // api::default_holder_margin of its lease duration.
  HoldsBook(std::string pod_name, std::string pod_uid, std::optional<Millis> margin);

  // A Lease of the namespace as the watch shows it now; `lease_deleted` when it is gone.
  void lease_changed(const LeaseView& lease, WallTime wall_now, MonoTime mono_now);
  void lease_deleted(const std::string& name);
  // A version of the namespace's session.
  void session_changed(const api::Session& session, WallTime wall_now, MonoTime mono_now);

  // The grants reported at `now`, by Lease name.
  std::vector<PodGrant> holds(MonoTime now) const;
  // The grant on `lock` reported at `now`, if any.
  std::optional<PodGrant> hold_on(const std::string& lock, MonoTime now) const;
  // The earliest moment after `now` at which a reported grant's deadline comes.
  std::optional<MonoTime> next_deadline(MonoTime now) const;

  // Compares what is reported at `now` with what `take_changes` reported last time: the grants
  // newly reported (a new grant, or a new token), and those no longer reported with why.
  struct Changes {
    std::vector<PodGrant> granted;
    std::vector<LostGrant> lost;
    bool any_change = false;  // also a validity that moved: the file is written again
  };
  Changes take_changes(MonoTime now);

 private:
  struct Tracked {
    LeaseView lease;
    // The lease duration when the grant was first seen, as `eslease run` keeps it: the
    // controller renews the grant's documents with the duration it was granted with, so a
    // larger one edited in later is not covered by them.
    Millis lease_duration{0};
    // Until when the latest session version lets the pod act on its grant, on this process's
    // clock; unset while no session version publishes validity to it.
    std::optional<MonoTime> deadline;
    WallTime valid_until{};
    // A session version has given it a deadline still ahead: from then on a deadline that
    // passes ends it. (A grant the last renewal does not cover yet waits for the next one.)
    bool confirmed = false;
  };

  bool mine(const LeaseView& lease) const;
  api::GrantRef grant_of(const Tracked& t) const { return {t.lease.name, t.lease.fencing_token}; }
  void judge(Tracked& t, WallTime wall_now, MonoTime mono_now);
  // Why `t` is not reported at `now` ("" when it is).
  std::string why_not(const Tracked& t, MonoTime now) const;
  PodGrant grant(const Tracked& t) const;

  const std::string pod_name_;
  const std::string pod_uid_;
  const std::optional<Millis> margin_;
  std::optional<api::Session> session_;
  std::map<std::string, Tracked> leases_;  // only the Leases that name this pod as their holder
  // Grants that ended for this process (revoked, past their deadline, no longer Held) and why:
  // never reported again.
  std::map<api::GrantRef, std::string> over_;
  std::map<std::string, PodGrant> reported_;  // by Lease name, as take_changes last saw it
};

}  // namespace eslease::cli
