// Kubernetes label selectors (metav1.LabelSelector): matchLabels and matchExpressions with
// In, NotIn, Exists and DoesNotExist, with apimachinery's validation rules for what the
// CRD schema cannot check (label key and value syntax, values required or forbidden by
// the operator).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace eslease::api {

using Labels = std::vector<std::pair<std::string, std::string>>;  // sorted by key

struct LabelRequirement {
  enum class Operator { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Operator op = Operator::kExists;
  std::vector<std::string> values;
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

struct LabelSelector {
  std::vector<LabelRequirement> requirements;  // matchLabels become In with one value
  // An empty selector matches every pod, as in Kubernetes; the controller treats it as a
  // claim any pod of the namespace can hold.
  bool matches(const Labels& labels) const;
  // For people, as kubectl writes a selector: "app=web,tier in (a,b),!canary", or "(all pods)".
  std::string describe() const;
  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// A Kubernetes label key: an optional DNS-1123 subdomain prefix (at most 253 characters)
// and '/', then a name of at most 63 characters.
bool valid_label_key(const std::string& key);

// kInvalidArgument with a message naming the offending key or value.
Result<LabelSelector> parse_label_selector(const nlohmann::json& selector);

}  // namespace eslease::api
