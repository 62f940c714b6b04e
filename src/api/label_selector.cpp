#include "api/label_selector.h"

#include <algorithm>
#include <regex>

#include "common/text.h"

namespace eslease::api {
namespace {

using Operator = LabelRequirement::Operator;

const std::string* find_label(const Labels& labels, const std::string& key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& label, const std::string& k) { return label.first < k; });
  if (it == labels.end() || it->first != key) return nullptr;
  return &it->second;
}

Error invalid(const std::string& message) {
  return make_error(ErrorCode::kInvalidArgument, "podSelector: " + message);
}

bool valid_label_value(const std::string& value) {
  static const std::regex pattern("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$");
  return value.size() <= 63 && std::regex_match(value, pattern);
}

}  // namespace

// A DNS-1123 subdomain prefix (at most 253) plus '/' and a name of at most 63 characters.
bool valid_label_key(const std::string& key) {
  static const std::regex name("^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$");
  static const std::regex prefix("^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$");
  const auto slash = key.find('/');
  std::string local = slash == std::string::npos ? key : key.substr(slash + 1);
  if (slash != std::string::npos) {
    std::string pre = key.substr(0, slash);
    if (pre.empty() || pre.size() > 253 || !std::regex_match(pre, prefix)) return false;
  }
  return !local.empty() && local.size() <= 63 && std::regex_match(local, name);
}

bool LabelSelector::matches(const Labels& labels) const {
  for (const LabelRequirement& r : requirements) {
    const std::string* value = find_label(labels, r.key);
    switch (r.op) {
      case Operator::kIn:
        if (!value || std::find(r.values.begin(), r.values.end(), *value) == r.values.end()) return false;
        break;
      case Operator::kNotIn:
        if (value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end()) return false;
        break;
      case Operator::kExists:
        if (!value) return false;
        break;
      case Operator::kDoesNotExist:
        if (value) return false;
        break;
    }
  }
  return true;
}

std::string LabelSelector::describe() const {
  std::string out;
  for (const LabelRequirement& r : requirements) {
    if (!out.empty()) out += ",";
    switch (r.op) {
      case Operator::kIn:
        out += r.values.size() == 1 ? r.key + "=" + r.values.front()
                                    : r.key + " in (" + join(r.values, ",") + ")";
        break;
      case Operator::kNotIn:
        out += r.key + " notin (" + join(r.values, ",") + ")";
        break;
      case Operator::kExists:
        out += r.key;
        break;
      case Operator::kDoesNotExist:
        out += "!" + r.key;
        break;
    }
  }
  return out.empty() ? "(all pods)" : out;
}

Result<LabelSelector> parse_label_selector(const nlohmann::json& selector) {
  if (!selector.is_object()) return invalid("must be an object");
  LabelSelector out;
  if (auto labels = selector.find("matchLabels"); labels != selector.end() && !labels->is_null()) {
    if (!labels->is_object()) return invalid("matchLabels must be an object");
    for (const auto& [key, value] : labels->items()) {
      if (!valid_label_key(key)) return invalid("invalid label key \"" + key.substr(0, 320) + "\"");
      if (!value.is_string() || !valid_label_value(value.get<std::string>()))
        return invalid("invalid value for label \"" + key + "\"");
      out.requirements.push_back({key, Operator::kIn, {value.get<std::string>()}});
    }
  }
  if (auto expressions = selector.find("matchExpressions");
      expressions != selector.end() && !expressions->is_null()) {
    if (!expressions->is_array()) return invalid("matchExpressions must be a list");
    for (const auto& e : *expressions) {
      if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("operator") ||
          !e["operator"].is_string())
        return invalid("each matchExpression needs a key and an operator");
      LabelRequirement r;
      r.key = e["key"].get<std::string>();
      if (!valid_label_key(r.key)) return invalid("invalid label key \"" + r.key.substr(0, 320) + "\"");
      const std::string op = e["operator"].get<std::string>();
      if (op == "In") {
        r.op = Operator::kIn;
      } else if (op == "NotIn") {
        r.op = Operator::kNotIn;
      } else if (op == "Exists") {
        r.op = Operator::kExists;
      } else if (op == "DoesNotExist") {
        r.op = Operator::kDoesNotExist;
      } else {
        return invalid("unknown operator \"" + op.substr(0, 64) + "\"");
      }
      if (auto values = e.find("values"); values != e.end() && !values->is_null()) {
        if (!values->is_array()) return invalid("values of \"" + r.key + "\" must be a list");
        for (const auto& v : *values) {
          if (!v.is_string() || !valid_label_value(v.get<std::string>()))
            return invalid("invalid value in \"" + r.key + "\"");
          r.values.push_back(v.get<std::string>());
        }
      }
      const bool needs_values = r.op == Operator::kIn || r.op == Operator::kNotIn;
      if (needs_values && r.values.empty())
        return invalid("operator " + op + " on \"" + r.key + "\" needs at least one value");
      if (!needs_values && !r.values.empty())
        return invalid("operator " + op + " on \"" + r.key + "\" takes no values");
      out.requirements.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace eslease::api
