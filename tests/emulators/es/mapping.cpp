#include "emulators/es/mapping.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "common/text.h"
#include "emulators/es/dates.h"
#include "emulators/es/json_positions.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

const std::set<std::string, std::less<>> kSupportedTypes = {
    "keyword",    "text",       "match_only_text", "wildcard",      "constant_keyword",
    "long",       "integer",    "short",           "byte",          "double",
    "float",      "half_float", "scaled_float",    "unsigned_long", "date",
    "date_nanos", "boolean",    "object",          "nested",        "flattened",
    "ip",         "binary"};

const std::set<std::string, std::less<>> kMetadataFields = {
    "_id",      "_index",   "_source",      "_seq_no", "_primary_term", "_version",
    "_routing", "_ignored", "_field_names", "_tier",   "_doc_count"};

EsError invalid_name(const std::string& name, const std::string& why) {
  return make_es_error(400, "invalid_index_name_exception", "Invalid index name [" + name + "], " + why,
                       {{"index_uuid", "_na_"}, {"index", name}});
}

std::string dynamic_string(const json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) return value.get<std::string>();
  return "";
}

std::optional<EsError> normalize_properties(const json& in, json& out, const std::string& prefix);

std::optional<EsError> normalize_field(const std::string& name, const json& in, json& out) {
  if (!in.is_object()) {
    return make_es_error(
        400, "mapper_parsing_exception",
        "Expected map for property [fields] on field [" + name + "] but got a class java.lang.String");
  }
  out = json::object();
  std::string type = "object";
  if (in.contains("type")) {
    if (!in["type"].is_string()) {
      return make_es_error(400, "mapper_parsing_exception", "No type specified for field [" + name + "]");
    }
    type = in["type"].get<std::string>();
    if (!kSupportedTypes.contains(type)) {
      return make_es_error(400, "mapper_parsing_exception",
                           "No handler for type [" + type + "] declared on field [" + name + "]");
    }
  }
  for (const auto& [key, value] : in.items()) {
    if (key == "properties") {
      json props;
      if (auto err = normalize_properties(value, props, name + ".")) return err;
      out["properties"] = props;
    } else if (key == "dynamic") {
      auto d = dynamic_string(value);
      if (d != "true" && d != "false" && d != "strict" && d != "runtime") {
        return make_es_error(400, "mapper_parsing_exception", "Could not convert [dynamic] to boolean");
      }
      out["dynamic"] = d;
    } else if (key == "type" && type == "object") {
      continue;  // Elasticsearch shows object fields without "type"
    } else {
      out[key] = value;
    }
  }
  if (type == "object" && !out.contains("properties") && !in.contains("type")) {
    // {"properties"} missing and no type: an empty object mapping, as Elasticsearch accepts.
    out["properties"] = json::object();
  }
  return std::nullopt;
}

std::optional<EsError> normalize_properties(const json& in, json& out, const std::string& prefix) {
  if (!in.is_object()) {
    return make_es_error(400, "mapper_parsing_exception", "Expected map for property [properties]");
  }
  out = json::object();
  for (const auto& [name, field] : in.items()) {
    // ObjectMapper's name checks throw IllegalArgumentException, which MapperService wraps.
    if (name.empty()) return illegal_argument("field name cannot be an empty string");
    if (name.find_first_not_of(" \t\n\r\f\v") == std::string::npos) {
      return illegal_argument("field name cannot contain only whitespaces");
    }
    json normalized;
    if (auto err = normalize_field(prefix + name, field, normalized)) return err;
    out[name] = normalized;
  }
  return std::nullopt;
}

const json* child_mapping(const json& object_mapping, const std::string& key) {
  auto props = object_mapping.find("properties");
  if (props == object_mapping.end() || !props->is_object()) return nullptr;
  auto it = props->find(key);
  return it == props->end() ? nullptr : &*it;
}

std::string mapped_type(const json& field) {
  auto it = field.find("type");
  if (it != field.end() && it->is_string()) return it->get<std::string>();
  return "object";
}

bool looks_like_date(const std::string& s) {
  // Elasticsearch's default dynamic_date_formats: strict_date_optional_time and yyyy/MM/dd.
  return parse_date_millis(json(s)).has_value() && s.size() >= 10 &&
         std::isdigit(static_cast<unsigned char>(s[0]));
}

json infer_mapping(const json& value) {
  if (value.is_boolean()) return {{"type", "boolean"}};
  if (value.is_number_integer() || value.is_number_unsigned()) return {{"type", "long"}};
  if (value.is_number_float()) return {{"type", "float"}};
  if (value.is_string()) {
    if (looks_like_date(value.get<std::string>())) return {{"type", "date"}};
    return {{"type", "text"}, {"fields", {{"keyword", {{"type", "keyword"}, {"ignore_above", 256}}}}}};
  }
  if (value.is_object()) return {{"properties", json::object()}};
  return json();
}

std::string java_preview(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, v] : value.items()) {
      if (!first) out += ", ";
      first = false;
      out += k + "=" + java_preview(v);
    }
    return out + "}";
  }
  if (value.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + java_preview(value[i]);
    return out + "]";
  }
  return value.dump();
}

bool parses_as_number(const json& v) {
  if (v.is_number()) return true;
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  if (s.empty()) return false;
  double d = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  return ec == std::errc() && ptr == s.data() + s.size();
}

class DocumentChecker {
 public:
  DocumentChecker(const DocumentContext& context) : context_(context) {}

  std::optional<EsError> check_object(json& object_mapping, const json& object, const std::string& path,
                                      const std::string& inherited_dynamic, bool root) {
    std::string dynamic =
        object_mapping.contains("dynamic") ? dynamic_string(object_mapping["dynamic"]) : inherited_dynamic;
    for (const auto& [key, value] : object.items()) {
      const std::string full = path.empty() ? key : path + "." + key;
      if (root && kMetadataFields.contains(key)) {
        return parsing_error(key, "Field [" + key +
                                      "] is a metadata field and cannot be added inside a document. "
                                      "Use the index API request parameters.");
      }
      if (key.empty()) {
        return parsing_error(key, "field name cannot be an empty string");
      }
      const json* existing = child_mapping(object_mapping, key);
      if (existing == nullptr) {
        if (value.is_null()) continue;  // null introduces no mapping
        if (dynamic == "strict") {
          return make_es_error(400, "strict_dynamic_mapping_exception",
                               locate_value(context_.raw_source, key) +
                                   "mapping set to strict, dynamic introduction of [" + key + "] within [" +
                                   (path.empty() ? "_doc" : path) + "] is not allowed");
        }
        if (dynamic == "false") continue;  // kept in _source, not indexed
        const json* sample = &value;
        if (value.is_array()) {
          sample = nullptr;
          for (const auto& element : value) {
            if (!element.is_null()) {
              sample = &element;
              break;
            }
          }
          if (sample == nullptr) continue;
        }
        json inferred = infer_mapping(*sample);
        if (inferred.is_null()) continue;
        if (!object_mapping.contains("properties")) object_mapping["properties"] = json::object();
        object_mapping["properties"][key] = inferred;
      }
      json& field = object_mapping["properties"][key];
      if (auto err = check_value(field, value, full, key, dynamic)) return err;
    }
    return std::nullopt;
  }

 private:
  std::optional<EsError> check_value(json& field, const json& value, const std::string& full,
                                     const std::string& key, const std::string& dynamic) {
    if (value.is_null()) return std::nullopt;
    if (value.is_array()) {
      for (const auto& element : value) {
        if (auto err = check_value(field, element, full, key, dynamic)) return err;
      }
      return std::nullopt;
    }
    const std::string type = mapped_type(field);
    if (type == "object" || type == "nested") {
      if (!value.is_object()) {
        return parsing_error(key, "object mapping for [" + full + "] tried to parse field [" + key +
                                      "] as object, but found a concrete value");
      }
      return check_object(field, value, full, dynamic, false);
    }
    if (type == "flattened") return std::nullopt;
    bool ok = true;
    if (value.is_object()) {
      ok = false;
    } else if (is_numeric_type(type)) {
      ok = parses_as_number(value);
    } else if (type == "boolean") {
      ok = value.is_boolean() ||
           (value.is_string() && (value == "true" || value == "false" || value.get<std::string>().empty()));
    } else if (type == "date" || type == "date_nanos") {
      ok = parse_date_millis(value).has_value();
    }
    if (ok) return std::nullopt;
    EsError e = parsing_error(key, "failed to parse field [" + full + "] of type [" + type +
                                       "] in document with id '" + context_.id +
                                       "'. Preview of field's value: '" + java_preview(value) + "'");
    return e;
  }

  EsError parsing_error(const std::string& key, const std::string& reason) {
    return make_es_error(400, "document_parsing_exception", locate_value(context_.raw_source, key) + reason);
  }

  const DocumentContext& context_;
};

}  // namespace

std::optional<EsError> validate_index_name(const std::string& name) {
  static const std::string kInvalid = "\\/*?\"<>| ,";
  if (name.find_first_of(kInvalid) != std::string::npos) {
    return invalid_name(name, "must not contain the following characters [\\, /, *, ?, \", <, >, |,  , ,]");
  }
  if (name.empty()) return invalid_name(name, "must not be empty");
  if (name.find('#') != std::string::npos) return invalid_name(name, "must not contain '#'");
  if (name.find(':') != std::string::npos) return invalid_name(name, "must not contain ':'");
  if (name[0] == '_' || name[0] == '-' || name[0] == '+') {
    return invalid_name(name, "must not start with '_', '-', or '+'");
  }
  if (name.size() > 255) {
    return invalid_name(name, "index name is too long, (" + std::to_string(name.size()) + " > 255)");
  }
  if (name == "." || name == "..") return invalid_name(name, "must not be '.' or '..'");
  if (to_lower(name) != name) return invalid_name(name, "must be lowercase");
  return std::nullopt;
}

std::optional<EsError> normalize_mappings(const json& in, json& out) {
  out = json::object();
  if (in.is_null()) return std::nullopt;
  if (!in.is_object()) {
    return make_es_error(400, "mapper_parsing_exception",
                         "Failed to parse mapping: Expected map for [mappings]");
  }
  std::vector<std::string> unsupported;
  for (const auto& [key, value] : in.items()) {
    if (key == "properties") {
      json props;
      if (auto err = normalize_properties(value, props, "")) {
        EsError wrapped =
            make_es_error(400, "mapper_parsing_exception", "Failed to parse mapping: " + err->reason);
        wrapped.caused_by = std::make_shared<EsError>(*err);
        return wrapped;
      }
      out["properties"] = props;
    } else if (key == "dynamic") {
      auto d = dynamic_string(value);
      if (d != "true" && d != "false" && d != "strict" && d != "runtime") {
        return make_es_error(400, "mapper_parsing_exception",
                             "Failed to parse mapping: Could not convert [dynamic]");
      }
      out["dynamic"] = d;
    } else if (key == "_source" || key == "_meta" || key == "_routing" || key == "dynamic_templates" ||
               key == "date_detection" || key == "numeric_detection" || key == "dynamic_date_formats" ||
               key == "runtime" || key == "enabled") {
      out[key] = value;
    } else {
      unsupported.push_back("[" + key + " : " +
                            (value.is_string() ? value.get<std::string>() : value.dump()) + "]");
    }
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& u : unsupported) list += " " + u;
    EsError inner = make_es_error(400, "mapper_parsing_exception",
                                  "Root mapping definition has unsupported parameters: " + list);
    EsError e = make_es_error(400, "mapper_parsing_exception", "Failed to parse mapping: " + inner.reason);
    e.caused_by = std::make_shared<EsError>(inner);
    return e;
  }
  return std::nullopt;
}

std::optional<EsError> apply_document(json& mapping, const json& source, const DocumentContext& context) {
  if (!source.is_object()) {
    return make_es_error(400, "document_parsing_exception",
                         "[1:1] failed to parse: Malformed content, must start with an object");
  }
  DocumentChecker checker(context);
  return checker.check_object(mapping, source, "", "true", true);
}

std::optional<std::string> field_type(const json& mapping, std::string_view path) {
  const json* current = &mapping;
  std::string remaining(path);
  while (true) {
    auto dot = remaining.find('.');
    std::string head = remaining.substr(0, dot);
    const json* child = child_mapping(*current, head);
    if (child == nullptr) return std::nullopt;
    if (dot == std::string::npos) return mapped_type(*child);
    std::string rest = remaining.substr(dot + 1);
    auto fields = child->find("fields");
    if (fields != child->end() && fields->is_object() && fields->contains(rest)) {
      return mapped_type((*fields)[rest]);
    }
    current = child;
    remaining = rest;
  }
}

void collect_values(const json& node, std::string_view path, std::vector<const json*>& out) {
  if (node.is_array()) {
    for (const auto& element : node) collect_values(element, path, out);
    return;
  }
  if (path.empty()) {
    if (!node.is_null()) out.push_back(&node);
    return;
  }
  if (!node.is_object()) return;
  // A source may hold "a.b" as one key or as nested objects; try every split.
  std::size_t pos = 0;
  while (true) {
    auto dot = path.find('.', pos);
    std::string key(path.substr(0, dot));
    auto it = node.find(key);
    if (it != node.end()) {
      collect_values(*it, dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1), out);
    }
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
}

bool is_numeric_type(std::string_view type) {
  return type == "long" || type == "integer" || type == "short" || type == "byte" || type == "double" ||
         type == "float" || type == "half_float" || type == "scaled_float" || type == "unsigned_long";
}

}  // namespace eslease::esemu
