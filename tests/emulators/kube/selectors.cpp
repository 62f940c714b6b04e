#include "emulators/kube/selectors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

namespace eslease::kubeemu {
namespace {

using nlohmann::json;

bool valid_label_value(const std::string& v) {
  if (v.size() > 63) return false;
  if (v.empty()) return true;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(v.front()) || !alnum(v.back())) return false;
  return std::all_of(v.begin(), v.end(),
                     [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool valid_label_key(const std::string& key) {
  if (key.empty()) return false;
  std::string name = key;
  auto slash = key.find('/');
  if (slash != std::string::npos) {
    const std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return false;
    for (char c : prefix) {
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
            c == '-' || c == '.'))
        return false;
    }
  }
  return !name.empty() && valid_label_value(name);
}

// Splits on commas that are not inside parentheses.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

std::string strip(const std::string& s) {
  auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  auto end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

const json* labels_of(const json& object) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  auto labels = meta->find("labels");
  return labels != meta->end() && labels->is_object() ? &*labels : nullptr;
}

// The value of a dotted field path as the apiserver's field sets render it.
std::string field_value(const json& object, const std::string& path) {
  const json* node = &object;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object()) return "";
    auto it = node->find(part);
    if (it == node->end()) return "";
    node = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (node->is_string()) return node->get<std::string>();
  if (node->is_boolean()) return node->get<bool>() ? "true" : "false";
  if (node->is_null()) return "";
  return node->dump();
}

// strconv.ParseInt's acceptance, for the values of Gt and Lt.
bool is_integer(const std::string& v) {
  char* end = nullptr;
  std::strtoll(v.c_str(), &end, 10);
  return !v.empty() && *end == '\0';
}

// The "(a,b)" of in and notin into `values`.
std::optional<ApiError> set_values(const std::string& list, std::vector<std::string>& values) {
  const std::string inner = strip(list);
  if (inner.size() < 2 || inner.front() != '(' || inner.back() != ')') {
    return bad_request("unable to parse requirement: found '" + inner + "', expected: '('");
  }
  std::string body = inner.substr(1, inner.size() - 2);
  std::size_t start = 0;
  while (true) {
    auto comma = body.find(',', start);
    std::string value =
        strip(body.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!valid_label_value(value)) return bad_request("invalid label value: \"" + value + "\"");
    values.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::nullopt;
}

}  // namespace

std::variant<LabelSelector, ApiError> LabelSelector::parse(const std::string& text) {
  LabelSelector selector;
  if (strip(text).empty()) return selector;
  for (const std::string& raw : split_top_level(text)) {
    auto req = parse_requirement(strip(raw));
    if (auto* error = std::get_if<ApiError>(&req)) return *error;
    selector.requirements_.push_back(std::move(std::get<Requirement>(req)));
  }
  return selector;
}

std::variant<LabelSelector::Requirement, ApiError> LabelSelector::parse_requirement(const std::string& part) {
  if (part.empty()) return bad_request("unable to parse requirement: found '', expected: identifier");
  Requirement req;
  std::size_t pos = 0;
  auto set = [&](Op op, std::size_t value_at) {
    req.key = strip(part.substr(0, pos));
    req.op = op;
    return set_values(part.substr(pos + value_at), req.values);
  };
  auto single = [&](Op op, std::size_t value_at) {
    req.key = strip(part.substr(0, pos));
    req.op = op;
    req.values.push_back(strip(part.substr(pos + value_at)));
  };
  if (part.front() == '!') {
    req.key = strip(part.substr(1));
    req.op = Op::kDoesNotExist;
  } else if ((pos = part.find(" notin ")) != std::string::npos ||
             (pos = part.find(" notin(")) != std::string::npos) {
    if (auto error = set(Op::kNotIn, 6)) return *error;
  } else if ((pos = part.find(" in ")) != std::string::npos ||
             (pos = part.find(" in(")) != std::string::npos) {
    if (auto error = set(Op::kIn, 3)) return *error;
  } else if ((pos = part.find("!=")) != std::string::npos) {
    single(Op::kNotEquals, 2);
  } else if ((pos = part.find("==")) != std::string::npos) {
    single(Op::kEquals, 2);
  } else if ((pos = part.find('=')) != std::string::npos) {
    single(Op::kEquals, 1);
  } else if ((pos = part.find('>')) != std::string::npos || (pos = part.find('<')) != std::string::npos) {
    single(part[pos] == '>' ? Op::kGreaterThan : Op::kLessThan, 1);
    if (!is_integer(req.values.back()))
      return bad_request("for 'Gt', 'Lt' operators, the value must be an integer");
  } else {
    req.key = part;
    req.op = Op::kExists;
  }
  if (!valid_label_key(req.key))
    return bad_request("unable to parse requirement: invalid label key \"" + req.key + "\"");
  for (const auto& value : req.values) {
    if (!valid_label_value(value)) {
      return bad_request("unable to parse requirement: invalid label value: \"" + value + "\"");
    }
  }
  return req;
}

bool LabelSelector::matches(const json& object) const {
  const json* labels = labels_of(object);
  for (const auto& req : requirements_) {
    const json* value = nullptr;
    if (labels != nullptr) {
      auto it = labels->find(req.key);
      if (it != labels->end() && it->is_string()) value = &*it;
    }
    const std::string v = value ? value->get<std::string>() : "";
    auto in_values = [&] { return std::find(req.values.begin(), req.values.end(), v) != req.values.end(); };
    switch (req.op) {
      case Op::kEquals:
      case Op::kIn:
        if (!value || !in_values()) return false;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        if (value && in_values()) return false;
        break;
      case Op::kExists:
        if (!value) return false;
        break;
      case Op::kDoesNotExist:
        if (value) return false;
        break;
      case Op::kGreaterThan:
      case Op::kLessThan: {
        if (!value) return false;
        char* end = nullptr;
        const long long have = std::strtoll(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0') return false;
        const long long want = std::strtoll(req.values[0].c_str(), nullptr, 10);
        if (req.op == Op::kGreaterThan ? !(have > want) : !(have < want)) return false;
        break;
      }
    }
  }
  return true;
}

std::variant<FieldSelector, ApiError> FieldSelector::parse(const std::string& text,
                                                           const std::vector<std::string>& supported) {
  FieldSelector selector;
  if (strip(text).empty()) return selector;
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    const std::string part =
        strip(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    Term term;
    std::size_t pos;
    if ((pos = part.find("!=")) != std::string::npos) {
      term = {strip(part.substr(0, pos)), false, strip(part.substr(pos + 2))};
    } else if ((pos = part.find("==")) != std::string::npos) {
      term = {strip(part.substr(0, pos)), true, strip(part.substr(pos + 2))};
    } else if ((pos = part.find('=')) != std::string::npos) {
      term = {strip(part.substr(0, pos)), true, strip(part.substr(pos + 1))};
    } else {
      return bad_request("invalid selector: '" + text + "'; can't understand '" + part + "'");
    }
    const bool known = term.field == "metadata.name" || term.field == "metadata.namespace" ||
                       std::find(supported.begin(), supported.end(), term.field) != supported.end();
    if (!known) return bad_request("field label not supported: " + term.field);
    selector.terms_.push_back(std::move(term));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return selector;
}

bool FieldSelector::matches(const json& object) const {
  for (const auto& term : terms_) {
    const bool equal = field_value(object, term.field) == term.value;
    if (equal != term.equals) return false;
  }
  return true;
}

std::variant<Selectors, ApiError> Selectors::parse(const std::string& label_text,
                                                   const std::string& field_text,
                                                   const std::vector<std::string>& supported) {
  auto labels = LabelSelector::parse(label_text);
  if (auto* error = std::get_if<ApiError>(&labels)) return *error;
  auto fields = FieldSelector::parse(field_text, supported);
  if (auto* error = std::get_if<ApiError>(&fields)) return *error;
  return Selectors{std::move(std::get<LabelSelector>(labels)), std::move(std::get<FieldSelector>(fields))};
}

}  // namespace eslease::kubeemu
