// YAML -> JSON with plain-scalar resolution close to sigs.k8s.io/yaml (YAML 1.1 booleans,
// integers in base 10/16/8, floats, null), so manifests mean here what they mean to kubectl.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <regex>

#include "emulators/kube/schema/schema.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;

json resolve_plain_scalar(const std::string& text) {
  static const std::regex true_words("y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON");
  static const std::regex false_words("n|N|no|No|NO|false|False|FALSE|off|Off|OFF");
  static const std::regex null_words("~|null|Null|NULL|");
  static const std::regex decimal("[-+]?(0|[1-9][0-9_]*)");
  static const std::regex hexadecimal("[-+]?0x[0-9a-fA-F_]+");
  static const std::regex octal("[-+]?0[0-7_]+");
  static const std::regex floating(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(text, null_words)) return nullptr;
  if (std::regex_match(text, true_words)) return true;
  if (std::regex_match(text, false_words)) return false;
  std::string digits;
  for (char c : text)
    if (c != '_') digits += c;
  try {
    if (std::regex_match(text, decimal)) return std::stoll(digits, nullptr, 10);
    if (std::regex_match(text, hexadecimal)) {
      const bool negative = digits[0] == '-';
      const size_t start = (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
      const long long magnitude = std::stoll(digits.substr(start + 2), nullptr, 16);
      return negative ? -magnitude : magnitude;
    }
    if (std::regex_match(text, octal)) return std::stoll(digits, nullptr, 8);
    if (std::regex_match(text, floating)) return std::stod(digits);
  } catch (const std::exception&) {
    // Out of range integers are kept as floats, as Go's YAML decoder does.
    try {
      return std::stod(digits);
    } catch (const std::exception&) {
      return text;
    }
  }
  if (text == ".inf" || text == ".Inf" || text == ".INF" || text == "+.inf")
    return std::numeric_limits<double>::max();
  return text;
}

// nullopt for a document nested deeper than 200 levels.
std::optional<json> to_json(const YAML::Node& node, int depth) {
  if (depth > 200) return std::nullopt;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar:
      // Quoted or explicitly tagged scalars are strings; only plain scalars are resolved.
      if (node.Tag() == "?") return resolve_plain_scalar(node.Scalar());
      if (node.Tag() == "tag:yaml.org,2002:int" || node.Tag() == "!!int")
        return resolve_plain_scalar(node.Scalar());
      return node.Scalar();
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) {
        auto value = to_json(item, depth + 1);
        if (!value) return std::nullopt;
        out.push_back(std::move(*value));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) {
        const auto key = to_json(entry.first, depth + 1);
        auto value = to_json(entry.second, depth + 1);
        if (!key || !value) return std::nullopt;
        const std::string key_text = key->is_string() ? key->get<std::string>() : key->dump();
        out[key_text] = std::move(*value);
      }
      return out;
    }
  }
  return json(nullptr);
}

}  // namespace

std::optional<nlohmann::json> yaml_to_json(const std::string& yaml_text) {
  try {
    return to_json(YAML::Load(yaml_text), 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::vector<nlohmann::json>> yaml_documents_to_json(const std::string& yaml_text) {
  try {
    std::vector<nlohmann::json> documents;
    for (const auto& node : YAML::LoadAll(yaml_text)) {
      if (node.IsNull()) continue;
      auto document = to_json(node, 0);
      if (!document) return std::nullopt;
      documents.push_back(std::move(*document));
    }
    return documents;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace eslease::kubeemu::schema
