#include "cli/lease_view.h"

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>

#include "api/lease_api.h"
#include "common/json_fields.h"
#include "common/text.h"
#include "kube/resource.h"
#include "lock/names.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

using json_fields::find;
using json_fields::integer_at;
using json_fields::string_at;
using json_fields::time_at;

// Dot-separated DNS-1123 labels: each the rule a namespace follows (at most 63 lower-case
// alphanumerics and '-', starting and ending alphanumeric).
bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (std::size_t start = 0;;) {
    const std::size_t dot = s.find('.', start);
    if (!lock::validate_namespace(s.substr(start, dot - start)).ok()) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::string hex_digits(std::uint64_t value, int digits) {
  std::ostringstream out;
  out << std::hex << std::setw(digits) << std::setfill('0') << value;
  return out.str();
}

}  // namespace

std::string LeaseView::describe_locks() const {
  return cli::describe_locks(locks());
}

std::string describe_locks(const std::vector<std::string>& locks) {
  return (locks.size() > 1 ? "lock set " : "lock ") + join(locks, "+");
}

bool same_locks(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

std::optional<WallTime> LeaseView::waiting_since() const {
  return api::waiting_since(held_status, held_reason, held_since, queued_at ? queued_at : created);
}

LeaseView decode_lease_view(const json& object) {
  LeaseView v;
  static const json kEmpty = json::object();
  const json* meta = find(object, "metadata");
  const json& m = meta != nullptr ? *meta : kEmpty;
  v.ns = string_at(m, "namespace");
  v.name = string_at(m, "name");
  v.uid = string_at(m, "uid");
  v.resource_version = string_at(m, "resourceVersion");
  v.created = time_at(m, "creationTimestamp");
  v.being_deleted = !string_at(m, "deletionTimestamp").empty();

  v.spec = api::decode_lease_spec(object);
  if (const json* status = find(object, "status"); status != nullptr && status->is_object()) {
    v.phase = string_at(*status, "phase");
    if (const json* holder = find(*status, "holder"); holder != nullptr) {
      v.holder_pod = string_at(*holder, "podName");
      v.holder_uid = string_at(*holder, "podUID");
    }
    v.fencing_token = string_at(*status, "fencingToken");
    v.acquire_time = time_at(*status, "acquireTime");
    if (auto k = integer_at(*status, "slot"); k && *k >= 0) v.slot = *k;
    v.queued_at = time_at(*status, "queuedAt");
    if (auto q = integer_at(*status, "queuePosition"); q && *q >= 0 && *q < (1LL << 31)) {
      v.queue_position = static_cast<int>(*q);
    }
    if (const json* conditions = find(*status, "conditions");
        conditions != nullptr && conditions->is_array()) {
      for (const json& c : *conditions) {
        if (string_at(c, "type") == api::kConditionBackendAvailable) {
          v.backend_status = string_at(c, "status");
          v.backend_message = string_at(c, "message");
        }
        if (string_at(c, "type") != api::kConditionHeld) continue;
        v.held_status = string_at(c, "status");
        v.held_reason = string_at(c, "reason");
        v.held_message = string_at(c, "message");
        v.held_since = time_at(c, "lastTransitionTime");
      }
    }
  }
  return v;
}

std::string lock_ids(const std::string& ns, const std::vector<std::string>& locks, const char* separator) {
  std::vector<std::string> ids;
  ids.reserve(locks.size());
  for (const std::string& lock : locks) ids.push_back(object_key(ns, lock));
  return join(ids, separator);
}

int acquire_timeout_for_wait(Millis wait) {
  constexpr long long kMaxSeconds = std::numeric_limits<int>::max() - 1;
  // Whole seconds, rounded up, without the overflow `count + 999` meets at Millis::max().
  const long long millis = std::max<long long>(wait.count(), 0);
  const long long seconds = std::min(kMaxSeconds, millis / 1000 + (millis % 1000 != 0 ? 1 : 0));
  return static_cast<int>(seconds) + 1;
}

json make_claim(const ClaimRequest& request) {
  json spec{{"holder", {{"podName", request.pod}}}};
  // Exactly one of lockName and lockNames; capacity and access apply to each lock of a set.
  if (request.locks.size() == 1)
    spec["lockName"] = request.locks.front();
  else
    spec["lockNames"] = request.locks;
  if (request.priority) spec["priority"] = *request.priority;
  if (request.lease_duration_seconds) spec["leaseDurationSeconds"] = *request.lease_duration_seconds;
  if (request.acquire_timeout_seconds) spec["acquireTimeoutSeconds"] = *request.acquire_timeout_seconds;
  if (request.liveness_grace_seconds) spec["livenessGraceSeconds"] = *request.liveness_grace_seconds;
  if (request.capacity != 1) spec["capacity"] = request.capacity;
  if (request.capacity != 1 || request.access == api::Access::kExclusive)
    spec["access"] = api::to_string(request.access);
  return json{{"apiVersion", kube::resources::eslease_leases().api_version()},
              {"kind", "Lease"},
              {"metadata",
               {{"name", request.name},
                {"namespace", request.ns},
                {"labels", {{"app.kubernetes.io/managed-by", "eslease"}}},
                // Not a controller reference and no blockOwnerDeletion: both would need permissions
                // on the pod that a workload's service account should not have.
                {"ownerReferences", json::array({json{{"apiVersion", kube::resources::pods().api_version()},
                                                      {"kind", "Pod"},
                                                      {"name", request.pod},
                                                      {"uid", request.pod_uid}}})}}},
              {"spec", spec}};
}

std::string default_lease_name(const std::vector<std::string>& locks, const std::string& pod) {
  std::vector<std::string> sorted = locks;
  std::sort(sorted.begin(), sorted.end());
  std::string set;  // one lock: "lock\n", the text hashed for it before there were sets
  for (const std::string& lock : sorted) set += lock + "\n";
  std::string name;
  if (sorted.size() == 1) name = sorted.front() + "-" + pod;
  if (sorted.size() > 1)
    name = sorted.front() + "-set-" + hex_digits(fnv1a(set) & 0xffffffffULL, 8) + "-" + pod;
  if (is_dns_subdomain(name)) return name;
  return "eslease-" + hex_digits(fnv1a(set + pod), 16);
}

Status validate_object_name(const std::string& what, const std::string& name) {
  if (is_dns_subdomain(name)) return {};
  return make_error(ErrorCode::kInvalidArgument,
                    "invalid " + what + " '" + printable(name) +
                        "': use at most 253 lower-case letters, digits, '-' and '.', each dot-separated "
                        "part starting and ending with a letter or digit");
}

}  // namespace eslease::cli
