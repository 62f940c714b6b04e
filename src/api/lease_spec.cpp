#include "api/lease_spec.h"

#include <limits>

#include "common/json_fields.h"
#include "common/text.h"

namespace eslease::api {
namespace {

using nlohmann::json;

using json_fields::find;
using json_fields::integer_at;
using json_fields::string_at;

bool is_alnum_lower(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// spec.holderLabel: the schema checks its characters; the lengths of its parts, and a key
// the claim's own selector reads (the label would decide who may hold the lock), are
// reported here.
void decode_holder_label(const json& spec_json, LeaseSpec& spec) {
  const json* label = find(spec_json, "holderLabel");
  if (!label || label->is_null()) return;
  std::string key = label->is_string() ? label->get<std::string>() : "";
  std::string problem;
  if (!valid_label_key(key)) {
    problem =
        "spec.holderLabel must be a label key: an optional DNS subdomain prefix of at most 253 "
        "characters and '/', then a name of at most 63 letters, digits, '-', '_' or '.'";
  } else if (spec.selector &&
             std::any_of(spec.selector->requirements.begin(), spec.selector->requirements.end(),
                         [&](const LabelRequirement& r) { return r.key == key; })) {
    problem = "spec.holderLabel \"" + key +
              "\" is a key of spec.holder.podSelector: the label the holder gets would decide who may hold";
  } else {
    spec.holder_label = std::move(key);
  }
  if (!problem.empty() && spec.problem.empty()) spec.problem = std::move(problem);
}

// spec.lockNames as read into `names`, up to the first name that breaks the rule; what is
// wrong with it, or "".
std::string decode_lock_set(const json& set, std::vector<std::string>& names) {
  std::string rule = "spec.lockNames must be " + std::to_string(kMinLockSet) + " to " +
                     std::to_string(kMaxLockSet) + " distinct lock names";
  if (!set.is_array()) return rule;
  for (const json& name : set) {
    if (!name.is_string()) return rule;
    std::string text = name.get<std::string>();
    if (Status valid = validate_lock_name(text); !valid.ok())
      return "spec.lockNames: " + valid.error().message;
    if (std::find(names.begin(), names.end(), text) != names.end())
      return rule + "; \"" + text + "\" repeats";
    names.push_back(std::move(text));
  }
  if (names.size() < kMinLockSet || names.size() > kMaxLockSet)
    return rule + "; it names " + std::to_string(names.size());
  return "";
}

// Exactly one of spec.lockName and spec.lockNames; LeaseSpec::lock_name says where the claim
// is filed.
void decode_locks(const json& spec_json, LeaseSpec& spec) {
  spec.lock_name = string_at(spec_json, "lockName");
  const json* set = find(spec_json, "lockNames");
  if (!set) {
    if (spec.lock_name.empty()) spec.problem = "spec needs lockName or lockNames";
    return;
  }
  spec.problem = decode_lock_set(*set, spec.lock_names);
  if (!spec.lock_name.empty()) {
    spec.problem = "spec sets both lockName and lockNames; set exactly one";
  } else if (!spec.lock_names.empty()) {
    spec.lock_name = spec.lock_names.front();
  }
}

// A string enum field: `target` when `key` names one of its values, a problem when it is
// something else, unchanged when absent.
template <typename Enum>
void decode_enum(const json& spec_json, const char* key, std::optional<Enum> (*parse)(std::string_view),
                 const char* values, Enum& target, std::string& problem) {
  const std::string text = string_at(spec_json, key);
  if (const std::optional<Enum> parsed = parse(text)) {
    target = *parsed;
  } else if (!text.empty() && problem.empty()) {
    problem = std::string("spec.") + key + " must be " + values;
  }
}

}  // namespace

LeaseSpec decode_lease_spec(const json& object) {
  LeaseSpec spec;
  const json* s = find(object, "spec");
  if (!s || !s->is_object()) {
    spec.problem = "spec is missing";
    return spec;
  }
  decode_locks(*s, spec);

  const json* holder = find(*s, "holder");
  const json* pod_name = holder ? find(*holder, "podName") : nullptr;
  const json* selector = holder ? find(*holder, "podSelector") : nullptr;
  if (pod_name && selector) {
    spec.problem = "spec.holder sets both podName and podSelector; set exactly one";
  } else if (pod_name) {
    spec.pod_name = pod_name->is_string() ? pod_name->get<std::string>() : "";
    if (spec.pod_name.empty()) spec.problem = "spec.holder.podName is empty";
  } else if (selector) {
    auto parsed = parse_label_selector(*selector);
    if (parsed.ok()) {
      spec.selector = std::move(*parsed);
    } else if (spec.problem.empty()) {
      spec.problem = "spec.holder." + parsed.error().message;
    }
  } else if (spec.problem.empty()) {
    spec.problem = "spec.holder needs podName or podSelector";
  }

  decode_enum(*s, "priority", &parse_priority, "Foreground or Background", spec.priority, spec.problem);
  decode_enum(*s, "access", &parse_access, "Exclusive or Shared", spec.access, spec.problem);
  auto bounded = [&](const char* key, std::int64_t lo, std::int64_t hi) -> std::optional<int> {
    auto v = integer_at(*s, key);
    if (!v) return std::nullopt;
    if (*v < lo || *v > hi) {
      if (spec.problem.empty())
        spec.problem = std::string("spec.") + key + " must be between " + std::to_string(lo) + " and " +
                       std::to_string(hi);
      return std::nullopt;
    }
    return static_cast<int>(*v);
  };
  if (auto v = bounded("leaseDurationSeconds", 1, 3600)) spec.lease_duration_seconds = *v;
  spec.acquire_timeout_seconds = bounded("acquireTimeoutSeconds", 0, std::numeric_limits<int>::max());
  if (auto v = bounded("livenessGraceSeconds", 0, 3600)) spec.liveness_grace_seconds = *v;
  if (auto v = bounded("capacity", 1, kMaxCapacity)) spec.capacity = *v;
  decode_holder_label(*s, spec);
  return spec;
}

Status validate_lock_name(std::string_view name) {
  if (name.empty()) return make_error(ErrorCode::kInvalidArgument, "lock name must not be empty");
  if (name.size() > kMaxLockNameBytes) {
    return make_error(ErrorCode::kInvalidArgument, "lock name is " + std::to_string(name.size()) +
                                                       " bytes long; at most " +
                                                       std::to_string(kMaxLockNameBytes) + " are allowed");
  }
  bool ok = is_alnum_lower(name.front()) && is_alnum_lower(name.back());
  for (char c : name) ok = ok && (is_alnum_lower(c) || c == '-' || c == '_' || c == '.');
  if (ok) return {};
  return make_error(ErrorCode::kInvalidArgument,
                    "invalid lock name '" + printable(name) +
                        "': use 1-253 lower-case letters, digits, '-', '_' and '.', starting and ending "
                        "with a letter or digit (the Lease's rule for spec.lockName, in both modes)");
}

Status validate_namespace(std::string_view ns) {
  if (ns.empty()) return make_error(ErrorCode::kInvalidArgument, "namespace must not be empty");
  bool ok = ns.size() <= kMaxNamespaceBytes && is_alnum_lower(ns.front()) && is_alnum_lower(ns.back());
  for (char c : ns) ok = ok && (is_alnum_lower(c) || c == '-');
  if (ok) return {};
  return make_error(ErrorCode::kInvalidArgument,
                    "invalid namespace '" + printable(ns) +
                        "': use at most 63 lower-case letters, digits and '-', starting and ending with "
                        "a letter or digit");
}

std::string LeaseSpec::holders() const {
  if (!pod_name.empty()) return pod_name;
  return selector ? selector->describe() : "(no valid selector)";
}

std::string LeaseSpec::describe_holder() const {
  return (pod_name.empty() ? "pods " : "pod ") + holders();
}

}  // namespace eslease::api
