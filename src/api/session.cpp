#include "api/session.h"

#include <algorithm>

#include "common/json_fields.h"
#include "common/text.h"

namespace eslease::api {

using nlohmann::json;

std::set<GrantRef> parse_revoked(std::string_view value) {
  std::set<GrantRef> out;
  while (!value.empty()) {
    const auto comma = value.find(',');
    const std::string entry = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    const auto equals = entry.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == entry.size()) continue;
    out.insert(GrantRef{entry.substr(0, equals), entry.substr(equals + 1)});
  }
  return out;
}

std::string format_revoked(const std::set<GrantRef>& grants) {
  std::string out;
  for (const GrantRef& g : grants) {
    if (!out.empty()) out += ",";
    out += g.lease + "=" + g.token;
  }
  return out;
}

Session decode_session(const json& object) {
  Session session;
  if (const json* meta = json_fields::find(object, "metadata")) {
    session.ns = json_fields::string_at(*meta, "namespace");
    session.resource_version = json_fields::string_at(*meta, "resourceVersion");
    if (const json* annotations = json_fields::find(*meta, "annotations"))
      session.revoked = parse_revoked(json_fields::string_at(*annotations, kRevokedAnnotation));
  }
  if (const json* spec = json_fields::find(object, "spec")) {
    session.holder_identity = json_fields::string_at(*spec, "holderIdentity");
    session.renew_time = json_fields::time_at(*spec, "renewTime");
  }
  return session;
}

json session_object(const Session& session) {
  json meta = {{"name", kSessionName}, {"namespace", session.ns}};
  if (!session.resource_version.empty()) meta["resourceVersion"] = session.resource_version;
  meta["labels"] = {{"app.kubernetes.io/managed-by", "eslease"}};
  if (!session.revoked.empty()) meta["annotations"] = {{kRevokedAnnotation, format_revoked(session.revoked)}};
  json spec = {{"holderIdentity", session.holder_identity}};
  if (session.renew_time) spec["renewTime"] = format_rfc3339_micros(*session.renew_time);
  // The session is a coordination.k8s.io/v1 Lease: part of the contract, spelt out here so
  // the API needs nothing of the Kubernetes client.
  return {{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}, {"metadata", meta}, {"spec", spec}};
}

std::optional<WallTime> published_validity(const Session& session, const GrantRef& grant,
                                           Millis lease_duration) {
  if (!session.renew_time || session.lists(grant)) return std::nullopt;
  return *session.renew_time + lease_duration;
}

std::optional<HolderDeadline> holder_deadline(const Session& session, const GrantRef& grant,
                                              Millis lease_duration, Millis margin, WallTime wall_now,
                                              MonoTime mono_now) {
  const std::optional<WallTime> validity = published_validity(session, grant, lease_duration);
  if (!validity) return std::nullopt;
  const WallTime until = *validity - margin;
  return HolderDeadline{until, mono_now + std::chrono::duration_cast<Millis>(until - wall_now)};
}

Millis holder_slack(Millis lease_duration, Millis grace, Millis margin) {
  return lease_duration - renewal_interval(lease_duration) - margin - grace;
}

Millis default_holder_grace(Millis lease_duration) {
  return std::min(Millis(10000), lease_duration / 5);
}

Millis default_holder_margin(Millis lease_duration) {
  return std::min(Millis(2000), lease_duration / 5);
}

Millis default_holder_slack(Millis lease_duration) {
  return holder_slack(lease_duration, default_holder_grace(lease_duration),
                      default_holder_margin(lease_duration));
}

Millis longest_renewal_pause(Millis leader_lease_duration, Millis leader_retry_period, Millis es_timeout) {
  return std::max(leader_lease_duration + leader_retry_period + kAdoptionTime, es_timeout);
}

}  // namespace eslease::api
