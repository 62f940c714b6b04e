// CustomResourceDefinition validation on create/update, after apiextensions-apiserver's
// ValidateCustomResourceDefinition and the structural-schema rules (pkg/apiserver/schema),
// within reason: names, group, scope, versions, storage version, subresources, printer
// columns, and that every version's schema is structural, with defaults that validate.
#include <regex>
#include <set>

#include "emulators/kube/schema/field_error.h"
#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_util.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using namespace detail;

const std::regex kDns1123Subdomain(R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
const std::regex kDns1035Label(R"([a-z]([-a-z0-9]*[a-z0-9])?)");
const std::regex kKindLike(R"([a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?)");

enum class Level { kRoot, kItem, kField };

std::string key_path(const std::string& parent, const std::string& child, const std::string& key) {
  return parent + "." + child + "[" + key + "]";
}

class CrdValidator {
 public:
  std::vector<Cause> causes;

  void validate(const json& crd) {
    if (!crd.is_object()) {
      causes.push_back(invalid("<nil>", "", "must be a JSON object"));
      return;
    }
    const json spec = crd.value("spec", json::object());
    const json names = spec.is_object() ? spec.value("names", json::object()) : json::object();
    const std::string group = spec.is_object() ? string_member(spec, "group") : "";
    const std::string plural = string_member(names, "plural");
    const json metadata = crd.value("metadata", json::object());
    const std::string name = string_member(metadata, "name");
    if (name.empty()) {
      causes.push_back(required("metadata.name", "name or generateName is required"));
    } else if (name != plural + "." + group) {
      causes.push_back(invalid("metadata.name", name, "must be spec.names.plural+\".\"+spec.group"));
    }
    if (!spec.is_object()) {
      causes.push_back(required("spec"));
      return;
    }
    validate_group(group);
    validate_names(names);
    validate_scope(string_member(spec, "scope"));
    validate_versions(spec);
  }

 private:
  void validate_group(const std::string& group) {
    if (group.empty()) {
      causes.push_back(required("spec.group"));
      return;
    }
    if (group.size() > 253 || !std::regex_match(group, kDns1123Subdomain)) {
      causes.push_back(
          invalid("spec.group", group,
                  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                  "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                  "'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
    }
    if (group.find('.') == std::string::npos) {
      causes.push_back(invalid("spec.group", group, "should be a domain with at least one dot"));
    }
  }

  void validate_dns1035(const std::string& field, const std::string& value) {
    if (!std::regex_match(value, kDns1035Label) || value.size() > 63) {
      causes.push_back(
          invalid(field, value,
                  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                  "with an alphabetic character, and end with an alphanumeric character (e.g. "
                  "'my-name',  or 'abc-123', regex used for validation is "
                  "'[a-z]([-a-z0-9]*[a-z0-9])?')"));
    }
  }

  void validate_names(const json& names) {
    const std::string plural = string_member(names, "plural");
    const std::string singular = string_member(names, "singular");
    const std::string kind = string_member(names, "kind");
    const std::string list_kind = string_member(names, "listKind");
    if (plural.empty()) {
      causes.push_back(required("spec.names.plural"));
    } else {
      validate_dns1035("spec.names.plural", plural);
    }
    if (!singular.empty()) validate_dns1035("spec.names.singular", singular);
    const std::string kind_message =
        "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?";
    if (kind.empty()) {
      causes.push_back(required("spec.names.kind"));
    } else if (!std::regex_match(kind, kKindLike)) {
      causes.push_back(invalid("spec.names.kind", kind, kind_message));
    }
    if (list_kind.empty()) {
      causes.push_back(required("spec.names.listKind"));
    } else if (!std::regex_match(list_kind, kKindLike)) {
      causes.push_back(invalid("spec.names.listKind", list_kind, kind_message));
    } else if (list_kind == kind) {
      causes.push_back(invalid("spec.names.listKind", list_kind, "kind and listKind may not be the same"));
    }
    for (const char* list : {"shortNames", "categories"}) {
      const auto* values = member(names, list);
      if (!values) continue;
      if (!values->is_array()) {
        causes.push_back(invalid(std::string("spec.names.") + list, *values, "must be a list of strings"));
        continue;
      }
      for (size_t i = 0; i < values->size(); ++i) {
        const json& value = (*values)[i];
        if (!value.is_string()) continue;
        validate_dns1035(std::string("spec.names.") + list + "[" + std::to_string(i) + "]",
                         value.get<std::string>());
      }
    }
  }

  void validate_scope(const std::string& scope) {
    if (scope.empty()) {
      causes.push_back(required("spec.scope"));
    } else if (scope != "Cluster" && scope != "Namespaced") {
      causes.push_back(not_supported("spec.scope", scope, json::array({"Cluster", "Namespaced"})));
    }
  }

  void validate_versions(const json& spec) {
    const auto* versions = member(spec, "versions");
    if (!versions || !versions->is_array() || versions->empty()) {
      causes.push_back(
          invalid("spec.versions", json::array(), "must have exactly one version marked as storage version"));
      return;
    }
    int storage_versions = 0;
    std::set<std::string> seen;
    for (size_t i = 0; i < versions->size(); ++i) {
      const json& version = (*versions)[i];
      const std::string base = "spec.versions[" + std::to_string(i) + "]";
      const std::string name = string_member(version, "name");
      if (name.empty()) {
        causes.push_back(required(base + ".name"));
      } else {
        validate_dns1035(base + ".name", name);
        if (!seen.insert(name).second) causes.push_back(invalid(base + ".name", name, "must be unique"));
      }
      if (flag(version, "storage")) ++storage_versions;
      validate_printer_columns(version, base);
      const auto* schema_wrapper = member(version, "schema");
      const auto* schema = schema_wrapper ? member(*schema_wrapper, "openAPIV3Schema") : nullptr;
      if (!schema || !schema->is_object()) {
        causes.push_back(required(base + ".schema.openAPIV3Schema", "schemas are required"));
        continue;
      }
      validate_structural(*schema, Level::kRoot, base + ".schema.openAPIV3Schema");
      validate_root(*schema, base + ".schema.openAPIV3Schema");
      validate_defaults(*schema, base + ".schema.openAPIV3Schema");
    }
    if (storage_versions != 1) {
      causes.push_back(
          invalid("spec.versions", *versions, "must have exactly one version marked as storage version"));
    }
  }

  void validate_printer_columns(const json& version, const std::string& base) {
    const auto* columns = member(version, "additionalPrinterColumns");
    if (!columns || !columns->is_array()) return;
    static const json kTypes = json::array({"integer", "number", "string", "boolean", "date"});
    for (size_t i = 0; i < columns->size(); ++i) {
      const json& column = (*columns)[i];
      const std::string path = base + ".additionalPrinterColumns[" + std::to_string(i) + "]";
      if (string_member(column, "name").empty()) causes.push_back(required(path + ".name"));
      const std::string type = string_member(column, "type");
      if (type.empty()) {
        causes.push_back(required(path + ".type"));
      } else if (std::find(kTypes.begin(), kTypes.end(), json(type)) == kTypes.end()) {
        causes.push_back(not_supported(path + ".type", type, kTypes));
      }
      const std::string json_path = string_member(column, "jsonPath");
      if (json_path.empty()) causes.push_back(required(path + ".jsonPath"));
    }
  }

  void validate_root(const json& schema, const std::string& path) {
    if (string_member(schema, "type") != "object") {
      if (member(schema, "type")) {
        causes.push_back(invalid(path + ".type", schema["type"], "must be object at the root"));
      }
    }
    if (const auto* metadata = property_schema(schema, "metadata")) {
      for (const auto& [key, value] : metadata->items()) {
        if (key == "type" || key == "description") continue;
        if (key == "properties" && value.is_object()) {
          bool only_names = true;
          for (const auto& [field, sub] : value.items())
            only_names &= field == "name" || field == "generateName";
          if (only_names) continue;
        }
        causes.push_back(
            forbidden(key_path(path, "properties", "metadata"),
                      "must not specify anything other than name and generateName, but metadata is "
                      "implicitly specified"));
        break;
      }
    }
  }

  // Nodes inside allOf/anyOf/oneOf/not may only carry value validations.
  void validate_value_validation(const json& schema, const std::string& path) {
    if (!schema.is_object()) return;
    static const std::vector<std::pair<const char*, const char*>> kForbidden = {
        {"type", "must be empty to be structural"},
        {"default", "must be undefined to be structural"},
        {"description", "must be empty to be structural"},
        {"nullable", "must be false to be structural"},
        {"x-kubernetes-preserve-unknown-fields", "must be false to be structural"},
        {"x-kubernetes-embedded-resource", "must be false to be structural"},
        {"x-kubernetes-int-or-string", "must be false to be structural"},
        {"additionalProperties", "must not be used inside of value validations to be structural"},
        {"x-kubernetes-list-type", "must be undefined to be structural"},
        {"x-kubernetes-list-map-keys", "must be undefined to be structural"},
        {"x-kubernetes-map-type", "must be undefined to be structural"},
    };
    for (const auto& [key, message] : kForbidden) {
      if (member(schema, key)) causes.push_back(forbidden(path + "." + key, message));
    }
    if (const auto* properties = member(schema, "properties"); properties && properties->is_object()) {
      for (const auto& [name, sub] : properties->items()) {
        validate_value_validation(sub, key_path(path, "properties", name));
      }
    }
    if (const auto* items = items_schema(schema)) validate_value_validation(*items, path + ".items");
    validate_junctors(schema, path);
  }

  void validate_junctors(const json& schema, const std::string& path) {
    for (const char* junctor : {"allOf", "anyOf", "oneOf"}) {
      const auto* branches = member(schema, junctor);
      if (!branches || !branches->is_array()) continue;
      for (size_t i = 0; i < branches->size(); ++i) {
        validate_value_validation((*branches)[i], path + "." + junctor + "[" + std::to_string(i) + "]");
      }
    }
    if (const auto* not_schema = member(schema, "not")) validate_value_validation(*not_schema, path + ".not");
  }

  void validate_structural(const json& schema, Level level, const std::string& path) {
    if (!schema.is_object()) {
      causes.push_back(invalid(path, schema, "must be a schema object"));
      return;
    }
    const std::string type = string_member(schema, "type");
    static const std::set<std::string> kTypes = {"object", "array", "string", "integer", "number", "boolean"};
    if (!type.empty() && !kTypes.count(type)) {
      causes.push_back(not_supported(
          path + ".type", type, json::array({"array", "boolean", "integer", "number", "object", "string"})));
    }
    if (type == "array" && !items_schema(schema))
      causes.push_back(required(path + ".items", "must be specified"));
    validate_structural_children(schema, path);
    validate_forbidden_keywords(schema, path);
    validate_type_rules(schema, type, level, path);
    validate_list_type(schema, type, path);
    validate_junctors(schema, path);
  }

  // items, properties and additionalProperties.
  void validate_structural_children(const json& schema, const std::string& path) {
    if (const auto* items = items_schema(schema)) validate_structural(*items, Level::kItem, path + ".items");
    if (const auto* properties = member(schema, "properties"); properties && properties->is_object()) {
      for (const auto& [name, sub] : properties->items()) {
        validate_structural(sub, Level::kField, key_path(path, "properties", name));
      }
    }
    const auto* additional = member(schema, "additionalProperties");
    if (!additional) return;
    if (member(schema, "properties")) {
      causes.push_back(forbidden(path + ".additionalProperties",
                                 "additionalProperties and properties are mutual exclusive"));
    }
    if (additional->is_boolean() && !additional->get<bool>()) {
      causes.push_back(forbidden(path + ".additionalProperties", "must not be false"));
    }
    if (additional->is_object())
      validate_structural(*additional, Level::kField, path + ".additionalProperties");
  }

  // $ref, uniqueItems and a pattern that is no regular expression.
  void validate_forbidden_keywords(const json& schema, const std::string& path) {
    if (member(schema, "$ref")) causes.push_back(forbidden(path + ".$ref", "$ref is not supported"));
    if (flag(schema, "uniqueItems")) {
      causes.push_back(
          forbidden(path + ".uniqueItems",
                    "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"));
    }
    if (const auto* pattern = member(schema, "pattern"); pattern && pattern->is_string()) {
      if (!compiled_pattern(pattern->get<std::string>())) {
        causes.push_back(invalid(path + ".pattern", *pattern, "must be a valid regular expression"));
      }
    }
  }

  // What the type must be beside x-kubernetes-int-or-string, -preserve-unknown-fields and
  // -embedded-resource, and where it may be left empty.
  void validate_type_rules(const json& schema, const std::string& type, Level level,
                           const std::string& path) {
    const bool int_or_string = flag(schema, "x-kubernetes-int-or-string");
    const bool preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    const bool embedded = flag(schema, "x-kubernetes-embedded-resource");
    if (int_or_string && !type.empty()) {
      causes.push_back(invalid(path + ".type", type, "must be empty if x-kubernetes-int-or-string is true"));
    }
    if (const auto* keep = member(schema, "x-kubernetes-preserve-unknown-fields");
        keep && keep->is_boolean() && !keep->get<bool>()) {
      causes.push_back(
          invalid(path + ".x-kubernetes-preserve-unknown-fields", false, "must be true or undefined"));
    }
    if (embedded && type != "object") {
      if (type.empty()) {
        causes.push_back(
            required(path + ".type", "must be object if x-kubernetes-embedded-resource is true"));
      } else {
        causes.push_back(
            invalid(path + ".type", type, "must be object if x-kubernetes-embedded-resource is true"));
      }
    } else if (type.empty() && !embedded && !int_or_string && !(preserve && level != Level::kRoot)) {
      const char* detail = level == Level::kRoot   ? "must not be empty at the root"
                           : level == Level::kItem ? "must not be empty for specified array items"
                                                   : "must not be empty for specified object fields";
      causes.push_back(required(path + ".type", detail));
    }
    if (embedded && !preserve && !member(schema, "properties")) {
      causes.push_back(required(path + ".properties",
                                "must not be empty if x-kubernetes-embedded-resource is true without "
                                "x-kubernetes-preserve-unknown-fields"));
    }
  }

  // The items of a set must be compared whole: scalars, atomic lists or atomic maps. As
  // upstream, an object item's complaint shows the item's list type (usually null).
  void validate_set_items(const json& schema, const std::string& path) {
    const auto* items = items_schema(schema);
    if (!items) return;
    static const char* kMessage = "must be atomic as item of a list with x-kubernetes-list-type=set";
    const std::string item_type = string_member(*items, "type");
    const auto* list_type = member(*items, "x-kubernetes-list-type");
    const json shown = list_type ? *list_type : json(nullptr);
    if (item_type == "array" && list_type && shown != "atomic") {
      causes.push_back(invalid(path + ".items.x-kubernetes-list-type", shown, kMessage));
    } else if (item_type == "object" && string_member(*items, "x-kubernetes-map-type") != "atomic") {
      causes.push_back(invalid(path + ".items.x-kubernetes-map-type", shown, kMessage));
    }
  }

  void validate_list_type(const json& schema, const std::string& type, const std::string& path) {
    const auto* list_type = member(schema, "x-kubernetes-list-type");
    const auto* map_keys = member(schema, "x-kubernetes-list-map-keys");
    if (list_type) {
      const std::string value = list_type->is_string() ? list_type->get<std::string>() : "";
      if (value != "atomic" && value != "set" && value != "map") {
        causes.push_back(not_supported(path + ".x-kubernetes-list-type", *list_type,
                                       json::array({"atomic", "set", "map"})));
      } else if (type != "array") {
        causes.push_back(
            invalid(path + ".type", type, "must be array if x-kubernetes-list-type is specified"));
      } else if (value == "set") {
        validate_set_items(schema, path);
      } else if (value == "map") {
        if (!map_keys || !map_keys->is_array() || map_keys->empty()) {
          causes.push_back(required(path + ".x-kubernetes-list-map-keys",
                                    "must not be empty if x-kubernetes-list-type is map"));
        }
        const auto* items = items_schema(schema);
        if (items && string_member(*items, "type") != "object") {
          causes.push_back(invalid(path + ".items.type", string_member(*items, "type"),
                                   "must be object for an array of list-type map"));
        }
        if (items && map_keys && map_keys->is_array()) {
          for (const auto& key : *map_keys) {
            if (!key.is_string()) continue;
            const auto* key_schema = property_schema(*items, key.get<std::string>());
            if (!key_schema) {
              causes.push_back(required(path + ".items.properties[" + key.get<std::string>() + "]",
                                        "entries for all x-kubernetes-list-map-keys are required"));
            }
          }
        }
      }
    }
    if (map_keys && (!list_type || !list_type->is_string() || list_type->get<std::string>() != "map")) {
      causes.push_back(forbidden(path + ".x-kubernetes-list-map-keys",
                                 "must not be set if x-kubernetes-list-type is not map"));
    }
  }

  // A default must be pruned-equal and valid against its own schema, as apiextensions checks.
  void validate_defaults(const json& schema, const std::string& path) {
    if (!schema.is_object()) return;
    if (const auto* default_value = member(schema, "default")) {
      json candidate = *default_value;
      if (!prune_unknown(schema, candidate).empty()) {
        causes.push_back(invalid(path + ".default", *default_value, "must not have unknown fields"));
      }
      for (auto cause : schema::validate(schema, *default_value)) {
        cause.field = cause.field == "<nil>" ? path + ".default" : path + ".default." + cause.field;
        causes.push_back(std::move(cause));
      }
    }
    if (const auto* properties = member(schema, "properties"); properties && properties->is_object()) {
      for (const auto& [name, sub] : properties->items())
        validate_defaults(sub, key_path(path, "properties", name));
    }
    if (const auto* items = items_schema(schema)) validate_defaults(*items, path + ".items");
    if (const auto* additional = additional_properties_schema(schema)) {
      validate_defaults(*additional, path + ".additionalProperties");
    }
  }
};

}  // namespace

std::vector<Cause> validate_crd(const nlohmann::json& crd) {
  CrdValidator validator;
  validator.validate(crd);
  return validator.causes;
}

}  // namespace eslease::kubeemu::schema
