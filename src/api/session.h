// The namespace's session, as the controller writes it and holders read it (the design's
// "Sessions"): a coordination.k8s.io/v1 Lease named eslease-session whose spec.renewTime is
// the last heartbeat, and whose eslease.io/revoked annotation lists the grants of the
// namespace that were revoked. One heartbeat renews every grant of the namespace; the
// validity published to a holder follows from it by one rule, written here once for the
// controller and the tool.
#pragma once

#include <compare>
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace eslease::api {

inline constexpr const char* kSessionName = "eslease-session";
inline constexpr const char* kRevokedAnnotation = "eslease.io/revoked";
// Set on a Lease by its holder (the eslease tool) just before it deletes the Lease: the
// fencing token it lets go of. A Lease deleted without it (an operator's kubectl delete)
// is a revocation, handed over only once the holder's published validity has ended.
inline constexpr const char* kReleasedAnnotation = "eslease.io/released";

// One grant as the session names it: "<Lease name>=<fencing token>".
struct GrantRef {
  std::string lease;
  std::string token;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads a defaulted <=>.
  auto operator<=>(const GrantRef&) const = default;
};

// For the tables a renewal tick keeps of every grant of a namespace.
struct GrantRefHash {
  std::size_t operator()(const GrantRef& grant) const noexcept {
    const std::size_t lease = std::hash<std::string_view>{}(grant.lease);
    return lease ^
           (std::hash<std::string_view>{}(grant.token) + 0x9e3779b97f4a7c15ULL + (lease << 6) + (lease >> 2));
  }
};

struct Session {
  std::string ns;
  std::string resource_version;  // empty: the object does not exist
  std::string holder_identity;   // the controller that wrote it
  std::optional<WallTime> renew_time;
  std::set<GrantRef> revoked;

  bool lists(const GrantRef& grant) const { return revoked.contains(grant); }
};

// Decodes a coordination Lease; never fails (what is missing reads as absent, entries of the
// annotation that are not "<lease>=<token>" are skipped).
Session decode_session(const nlohmann::json& object);
// The object to create or update, conditional on `session.resource_version` when set.
nlohmann::json session_object(const Session& session);

std::set<GrantRef> parse_revoked(std::string_view value);
std::string format_revoked(const std::set<GrantRef>& grants);

// The validity this session version publishes to the holder of `grant`: renewTime plus the
// grant's lease duration, or nullopt when it lists the grant (its validity then ended with
// the last version that did not) or has never been renewed. A holder takes the latest
// version it has seen; the grant is valid only while its Lease shows Held with that token.
std::optional<WallTime> published_validity(const Session& session, const GrantRef& grant,
                                           Millis lease_duration);

// A namespace's session is renewed this many times per lease duration (every quarter of the
// shortest one held there), so the validity a holder sees never falls below 3/4 of it while
// renewals come on time.
inline constexpr int kRenewalsPerLease = 4;
inline constexpr Millis renewal_interval(Millis lease_duration) {
  return lease_duration / kRenewalsPerLease;
}

// Until when a holder may act on `grant` by this session version: the published validity less
// `margin`, as a wall-clock time and as the moment that comes on the holder's own monotonic
// clock (converted at `wall_now` / `mono_now`, read together). nullopt when this version
// publishes no validity to the grant.
struct HolderDeadline {
  WallTime wall;
  MonoTime mono;
};
std::optional<HolderDeadline> holder_deadline(const Session& session, const GrantRef& grant,
                                              Millis lease_duration, Millis margin, WallTime wall_now,
                                              MonoTime mono_now);

// How much interruption a holder rides out (docs/protocol.md). The validity a holder sees
// runs from 3/4 of the lease duration (just before a tick) down, and `eslease run` asks its
// command to stop `margin + grace` before it ends: the difference is how long renewals may
// pause before a healthy holder is stopped for nothing.
Millis holder_slack(Millis lease_duration, Millis grace, Millis margin);
// `eslease run`'s defaults: --grace the smaller of 10 s and a fifth of the lease duration,
// --safety-margin the smaller of 2 s and a fifth of it.
Millis default_holder_grace(Millis lease_duration);
Millis default_holder_margin(Millis lease_duration);
// holder_slack at those defaults.
Millis default_holder_slack(Millis lease_duration);
// The longest pause in renewals a healthy cluster shows: a leader that dies without handing
// over is replaced after the leader-election lease duration and one retry period, and the
// new leader renews after adopting the grants (about 2 s); one Elasticsearch request may
// take up to its timeout. With the defaults (3 s, 500 ms, 5 s) that is 5.5 s, within the 6.8 s
// a holder rides out at the default lease duration (16 s).
Millis longest_renewal_pause(Millis leader_lease_duration, Millis leader_retry_period, Millis es_timeout);
inline constexpr Millis kAdoptionTime{2000};
inline constexpr Millis kDefaultRenewalPause{5500};  // longest_renewal_pause at the defaults

}  // namespace eslease::api
