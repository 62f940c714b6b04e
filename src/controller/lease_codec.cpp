#include "controller/lease_codec.h"

#include <algorithm>

#include "api/session.h"
#include "common/json_fields.h"
#include "common/text.h"

namespace eslease::controller {
namespace {

using nlohmann::json;

using json_fields::find;
using json_fields::integer_at;
using json_fields::string_at;
using json_fields::time_at;

ObjectMeta decode_meta(const json& object) {
  ObjectMeta meta;
  if (const json* m = find(object, "metadata")) {
    meta.ns = string_at(*m, "namespace");
    meta.name = string_at(*m, "name");
    meta.uid = string_at(*m, "uid");
    meta.resource_version = string_at(*m, "resourceVersion");
  }
  return meta;
}

// The Ready condition of a pod or node; Unknown counts as not Ready.
ReadyState ready_state(const json& object, std::optional<WallTime>* transition = nullptr) {
  const json* status = find(object, "status");
  const json* conditions = status ? find(*status, "conditions") : nullptr;
  if (!conditions || !conditions->is_array()) return ReadyState::kAbsent;
  for (const json& c : *conditions) {
    if (string_at(c, "type") != "Ready") continue;
    if (transition) *transition = time_at(c, "lastTransitionTime");
    return string_at(c, "status") == "True" ? ReadyState::kTrue : ReadyState::kFalse;
  }
  return ReadyState::kAbsent;
}

LeaseStatus decode_status(const json& object) {
  LeaseStatus status;
  const json* s = find(object, "status");
  if (!s || !s->is_object()) return status;
  status.phase = api::parse_phase(string_at(*s, "phase"));
  status.queued_at = time_at(*s, "queuedAt");
  status.lock = string_at(*s, "lock");
  if (const json* h = find(*s, "holder"); h && h->is_object()) {
    status.holder = HolderRef{string_at(*h, "podName"), string_at(*h, "podUID"), string_at(*h, "nodeName")};
  }
  status.fencing_token = string_at(*s, "fencingToken");
  status.acquire_time = time_at(*s, "acquireTime");
  if (auto q = integer_at(*s, "queuePosition")) status.queue_position = static_cast<int>(*q);
  status.slot = integer_at(*s, "slot");
  status.transitions = integer_at(*s, "transitions").value_or(0);
  if (const json* t = find(*s, "lastTakeover"); t && t->is_object()) {
    status.last_takeover =
        Takeover{string_at(*t, "fromPod"), string_at(*t, "reason"), time_at(*t, "time").value_or(WallTime{})};
  }
  status.observed_generation = integer_at(*s, "observedGeneration").value_or(0);
  if (const json* conditions = find(*s, "conditions"); conditions && conditions->is_array()) {
    for (const json& c : *conditions) {
      status.conditions.push_back(Condition{
          string_at(c, "type"), string_at(c, "status"), string_at(c, "reason"), string_at(c, "message"),
          time_at(c, "lastTransitionTime"), integer_at(c, "observedGeneration").value_or(0)});
    }
  }
  return status;
}

json optional_time(const std::optional<WallTime>& t) {
  return t ? json(format_rfc3339_millis(*t)) : json(nullptr);
}

}  // namespace

LeaseRecord decode_lease(const json& object) {
  LeaseRecord lease;
  lease.meta = decode_meta(object);
  if (const json* m = find(object, "metadata")) {
    lease.generation = integer_at(*m, "generation").value_or(0);
    lease.creation_time = time_at(*m, "creationTimestamp").value_or(WallTime{});
    lease.being_deleted = find(*m, "deletionTimestamp") != nullptr;
    if (const json* f = find(*m, "finalizers"); f && f->is_array()) {
      for (const json& name : *f)
        if (name.is_string()) lease.finalizers.push_back(name.get<std::string>());
    }
    if (const json* annotations = find(*m, "annotations"))
      lease.released_token = string_at(*annotations, api::kReleasedAnnotation);
  }
  lease.spec = api::decode_lease_spec(object);
  lease.status = decode_status(object);
  return lease;
}

PodRecord decode_pod(const json& object) {
  PodRecord pod;
  pod.meta = decode_meta(object);
  if (const json* m = find(object, "metadata")) {
    pod.creation_time = time_at(*m, "creationTimestamp").value_or(WallTime{});
    pod.being_deleted = find(*m, "deletionTimestamp") != nullptr;
    if (const json* labels = find(*m, "labels"); labels && labels->is_object()) {
      for (const auto& [key, value] : labels->items())
        if (value.is_string()) pod.labels.emplace_back(key, value.get<std::string>());
      std::sort(pod.labels.begin(), pod.labels.end());
    }
    if (const json* annotations = find(*m, "annotations"))
      pod.holds_annotation = string_at(*annotations, api::kHoldsAnnotation);
  }
  if (const json* spec = find(object, "spec")) pod.node_name = string_at(*spec, "nodeName");
  std::optional<WallTime> ready_since;
  pod.ready = ready_state(object, &ready_since);
  if (const json* status = find(object, "status")) {
    pod.phase = string_at(*status, "phase");
    // A Ready=False condition that changed well after the pod started went False from
    // True: the pod was Ready once. (At start kubelet writes Ready=False with the start time.)
    const auto started = time_at(*status, "startTime");
    pod.shows_was_ready =
        pod.ready == ReadyState::kTrue || (pod.ready == ReadyState::kFalse && ready_since && started &&
                                           *ready_since > *started + std::chrono::seconds(2));
  }
  return pod;
}

NodeRecord decode_node(const json& object) {
  NodeRecord node;
  node.meta = decode_meta(object);
  node.ready = ready_state(object);
  return node;
}

NodeLeaseRecord decode_node_lease(const json& object) {
  NodeLeaseRecord lease;
  lease.meta = decode_meta(object);
  if (const json* spec = find(object, "spec"); spec && spec->is_object())
    lease.renew_time = time_at(*spec, "renewTime");
  return lease;
}

json status_patch(const LeaseStatus& status) {
  json s = json::object();
  const char* phase = to_string(status.phase);
  s["phase"] = *phase ? json(phase) : json(nullptr);
  if (status.holder) {
    s["holder"] = {{"podName", status.holder->pod_name},
                   {"podUID", status.holder->pod_uid},
                   {"nodeName", status.holder->node_name}};
  } else {
    s["holder"] = nullptr;
  }
  s["fencingToken"] = status.fencing_token.empty() ? json(nullptr) : json(status.fencing_token);
  s["acquireTime"] = optional_time(status.acquire_time);
  // Written by versions before sessions; a status that is not rewritten on renewal must not
  // show a stale expiry, so a merge patch removes them.
  s["renewTime"] = nullptr;
  s["expireTime"] = nullptr;
  s["queuePosition"] = status.queue_position ? json(*status.queue_position) : json(nullptr);
  s["queuedAt"] = status.queued_at ? json(format_rfc3339_micros(*status.queued_at)) : json(nullptr);
  s["lock"] = status.lock.empty() ? json(nullptr) : json(status.lock);
  s["slot"] = status.slot ? json(*status.slot) : json(nullptr);
  s["transitions"] = status.transitions;
  if (status.last_takeover) {
    s["lastTakeover"] = {{"fromPod", status.last_takeover->from_pod},
                         {"reason", status.last_takeover->reason},
                         {"time", format_rfc3339_millis(status.last_takeover->time)}};
  } else {
    s["lastTakeover"] = nullptr;
  }
  s["observedGeneration"] = status.observed_generation;
  json conditions = json::array();
  for (const Condition& c : status.conditions) {
    conditions.push_back(
        {{"type", c.type},
         {"status", c.status},
         {"reason", c.reason},
         {"message", c.message},
         {"lastTransitionTime", format_rfc3339_millis(c.last_transition_time.value_or(WallTime{}))},
         {"observedGeneration", c.observed_generation}});
  }
  s["conditions"] = std::move(conditions);
  return json{{"status", std::move(s)}};
}

std::map<std::string, std::string> parse_holds(std::string_view value) {
  std::map<std::string, std::string> out;
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view item = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    const std::size_t equals = item.find('=');
    if (equals == 0 || equals == std::string_view::npos) continue;
    out.emplace(std::string(item.substr(0, equals)), std::string(item.substr(equals + 1)));
  }
  return out;
}

std::string format_holds(const std::map<std::string, std::string>& token_by_lease) {
  std::string out;
  for (const auto& [lease, token] : token_by_lease) {
    if (!out.empty()) out += ',';
    out += lease + "=" + token;
  }
  return out;
}

}  // namespace eslease::controller
