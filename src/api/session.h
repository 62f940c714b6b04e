// The namespace's session, as the controller writes it and holders read it (the design's
// "Sessions"): a coordination.k8s.io/v1 Lease named eslease-session whose spec.renewTime is
// the last heartbeat, and whose eslease.io/revoked annotation lists the grants of the
// namespace that were revoked. One heartbeat renews every grant of the namespace; the
// validity published to a holder follows from it by one rule, written here once for the
// controller and the tool.
#pragma once

#include <compare>
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
  auto operator<=>(const GrantRef&) const = default;
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
std::optional<WallTime> published_validity(const Session& session, const GrantRef& grant, Millis lease_duration);

}  // namespace eslease::api
