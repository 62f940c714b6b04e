// Schema validation with the semantics and messages of kube-openapi's SchemaValidator as
// apiextensions-apiserver runs it on custom resources, followed by the list-type (set/map)
// uniqueness checks of apiextensions' listtype package.
#include <cmath>
#include <set>

#include "emulators/kube/schema/field_error.h"
#include "emulators/kube/schema/formats.h"
#include "emulators/kube/schema/schema.h"
#include "emulators/kube/schema/schema_util.h"

namespace eslease::kubeemu::schema {
namespace {

using nlohmann::json;
using namespace detail;

// kube-openapi's Result: errors plus a match count used to choose which failing oneOf/anyOf
// branch to report.
struct Result {
  std::vector<Cause> causes;
  int match_count = 0;

  bool valid() const { return causes.empty(); }
  void merge(Result other) {
    causes.insert(causes.end(), std::make_move_iterator(other.causes.begin()),
                  std::make_move_iterator(other.causes.end()));
    match_count += other.match_count;
  }
  void add(Cause cause) { causes.push_back(std::move(cause)); }
};

std::vector<std::string> schema_types(const json& schema) {
  if (flag(schema, "x-kubernetes-int-or-string")) return {"integer", "string"};
  const auto* type = member(schema, "type");
  if (type && type->is_string() && !type->get<std::string>().empty()) return {type->get<std::string>()};
  return {};
}

bool contains(const std::vector<std::string>& types, std::string_view type) {
  for (const auto& t : types)
    if (t == type) return true;
  return false;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

bool is_whole_float(const json& data) {
  if (!data.is_number_float()) return false;
  const double value = data.get<double>();
  return std::isfinite(value) && std::trunc(value) == value && std::fabs(value) < 9.007199254740992e15;
}

// "<path> in body must be of type <type>: \"<actual>\"" as FieldValueTypeInvalid.
Cause type_failure(const std::string& path, const std::string& expected, const std::string& actual) {
  return type_invalid(field_from_openapi_path(path), actual,
                      path + " in body must be of type " + expected + ": " + go_quote(actual));
}

// A composite (oneOf/anyOf/allOf/not) failure: not a *Validation error, so apiextensions
// reports it on the nil root path with an empty value.
Cause composite_failure(const std::string& message) {
  return invalid("<nil>", "", message);
}

class Validator {
 public:
  Result validate(const json& schema, const json& data, const std::string& path) const {
    Result result;
    if (!schema.is_object()) return result;
    if (data.is_null()) {
      result.merge(validate_type(schema, data, path));
      result.merge(validate_enum(schema, data, path));
      return result;
    }
    const auto types = schema_types(schema);
    const std::string format = string_member(schema, "format");
    auto run = [&](bool applies, Result step) {
      if (!applies) return;
      result.merge(std::move(step));
      ++result.match_count;
    };
    run(!types.empty() || !format.empty(), validate_type(schema, data, path));
    run(true, validate_composition(schema, data, path));
    if (data.is_string()) {
      run(member(schema, "maxLength") || member(schema, "minLength") || member(schema, "pattern"),
          validate_string(schema, data, path));
      run(!format.empty() && contains(types, "string"), validate_format(format, data, path));
    }
    if (data.is_number()) run(true, validate_number(schema, data, path));
    if (data.is_array()) run(true, validate_array(schema, data, path));
    run(true, validate_enum(schema, data, path));
    if (data.is_object()) run(true, validate_object(schema, data, path));
    ++result.match_count;
    return result;
  }

 private:
  Result validate_type(const json& schema, const json& data, const std::string& path) const {
    Result result;
    const auto types = schema_types(schema);
    if (data.is_null()) {
      if (!types.empty() && !flag(schema, "nullable")) {
        result.add(type_failure(path, join(types, ","), "null"));
      }
      return result;
    }
    ++result.match_count;
    if (types.empty()) return result;
    const std::string actual = json_type_name(data);
    // kube-openapi accepts a float64 holding a whole number where an integer is expected.
    const bool float_int = actual == "number" && contains(types, "integer") && is_whole_float(data);
    const bool int_float = actual == "integer" && contains(types, "number");
    const std::string format = string_member(schema, "format");
    if (!contains(types, "number") && !contains(types, "integer") && !format.empty() &&
        (data.is_string() || data.is_array())) {
      return result;
    }
    if (!(contains(types, actual) || float_int || int_float)) {
      result.causes.push_back(type_failure(path, join(types, ","), actual));
      result.match_count = 0;
    }
    return result;
  }

  Result validate_composition(const json& schema, const json& data, const std::string& path) const {
    Result main;
    if (const auto* any_of = member(schema, "anyOf"); any_of && any_of->is_array() && !any_of->empty()) {
      validate_any_of(*any_of, data, path, main);
    }
    if (const auto* one_of = member(schema, "oneOf"); one_of && one_of->is_array() && !one_of->empty()) {
      validate_one_of(*one_of, data, path, main);
    }
    if (const auto* all_of = member(schema, "allOf"); all_of && all_of->is_array() && !all_of->empty()) {
      size_t validated = 0;
      for (const auto& branch : *all_of) {
        Result result = validate(branch, data, path);
        if (result.valid()) ++validated;
        main.merge(std::move(result));
      }
      if (validated != all_of->size()) {
        main.add(composite_failure(go_quote(path) + " must validate all the schemas (allOf)" +
                                   (validated == 0 ? ". None validated" : "")));
      }
    }
    if (const auto* not_schema = member(schema, "not"); not_schema && not_schema->is_object()) {
      if (validate(*not_schema, data, path).valid()) {
        main.add(composite_failure(go_quote(path) + " must not validate the schema (not)"));
      }
    }
    ++main.match_count;
    return main;
  }

  // The first branch that validates, else the failure of the branch that matched most.
  void validate_any_of(const json& branches, const json& data, const std::string& path, Result& main) const {
    std::optional<Result> best_failure;
    bool succeeded = false;
    for (const auto& branch : branches) {
      Result result = validate(branch, data, path);
      if (result.valid()) {
        succeeded = true;
        best_failure.reset();
        main.merge(std::move(result));
        break;
      }
      if (!best_failure || result.match_count > best_failure->match_count) best_failure = std::move(result);
    }
    if (!succeeded)
      main.add(composite_failure(go_quote(path) + " must validate at least one schema (anyOf)"));
    if (best_failure) main.merge(std::move(*best_failure));
  }

  // Exactly one branch must validate.
  void validate_one_of(const json& branches, const json& data, const std::string& path, Result& main) const {
    std::optional<Result> best_failure;
    std::optional<Result> first_success;
    int validated = 0;
    for (const auto& branch : branches) {
      Result result = validate(branch, data, path);
      if (result.valid()) {
        ++validated;
        best_failure.reset();
        if (!first_success) first_success = std::move(result);
        continue;
      }
      if (validated == 0 && (!best_failure || result.match_count > best_failure->match_count)) {
        best_failure = std::move(result);
      }
    }
    if (validated != 1) {
      const std::string found =
          validated == 0 ? "Found none valid" : "Found " + std::to_string(validated) + " valid alternatives";
      main.add(
          composite_failure(go_quote(path) + " must validate one and only one schema (oneOf). " + found));
      if (best_failure) main.merge(std::move(*best_failure));
    } else if (first_success) {
      main.merge(std::move(*first_success));
    }
  }

  // Stops at the first failing check, as kube-openapi's stringValidator does.
  Result validate_string(const json& schema, const json& data, const std::string& path) const {
    Result result;
    const auto& text = data.get_ref<const std::string&>();
    const auto length = static_cast<long long>(code_point_count(text));
    const std::string field = field_from_openapi_path(path);
    if (auto max = integer_member(schema, "maxLength"); max && length > *max) {
      result.add(too_long(field, *max));
      return result;
    }
    if (auto min = integer_member(schema, "minLength"); min && length < *min) {
      result.add(
          invalid(field, data, path + " in body should be at least " + std::to_string(*min) + " chars long"));
      return result;
    }
    const std::string pattern = string_member(schema, "pattern");
    if (!pattern.empty()) {
      const std::regex* regex = compiled_pattern(pattern);
      bool matches = false;
      try {
        matches = regex && std::regex_search(text, *regex);
      } catch (const std::regex_error&) {
        matches = false;
      }
      if (!matches) result.add(invalid(field, data, path + " in body should match '" + pattern + "'"));
    }
    return result;
  }

  Result validate_format(const std::string& format, const json& data, const std::string& path) const {
    Result result;
    if (!format_is_checked(format)) return result;
    const auto& text = data.get_ref<const std::string&>();
    if (!matches_format(format, text)) {
      result.add(type_invalid(field_from_openapi_path(path), data,
                              path + " in body must be of type " + format + ": " + go_quote(text)));
    }
    return result;
  }

  Result validate_number(const json& schema, const json& data, const std::string& path) const {
    Result result;
    const std::string field = field_from_openapi_path(path);
    const double value = data.get<double>();
    auto bound_text = [&](const json& bound) {
      return bound.is_number_integer() ? bound.dump() : go_float(bound.get<double>());
    };
    if (const auto* factor = member(schema, "multipleOf"); factor && factor->is_number()) {
      const double divisor = factor->get<double>();
      if (divisor <= 0) {
        result.add(
            invalid(field, *factor,
                    "factor MultipleOf declared for " + path + " must be positive: " + bound_text(*factor)));
      } else {
        const double quotient = value / divisor;
        if (std::fabs(quotient - std::round(quotient)) > 1e-9 * std::max(1.0, std::fabs(quotient))) {
          result.add(invalid(field, data, path + " in body should be a multiple of " + bound_text(*factor)));
        }
      }
    }
    if (const auto* maximum = member(schema, "maximum"); maximum && maximum->is_number()) {
      const bool exclusive = flag(schema, "exclusiveMaximum");
      const double max = maximum->get<double>();
      if (exclusive ? value >= max : value > max) {
        result.add(invalid(field, data,
                           path + " in body should be less than " + (exclusive ? "" : "or equal to ") +
                               bound_text(*maximum)));
      }
    }
    if (const auto* minimum = member(schema, "minimum"); minimum && minimum->is_number()) {
      const bool exclusive = flag(schema, "exclusiveMinimum");
      const double min = minimum->get<double>();
      if (exclusive ? value <= min : value < min) {
        result.add(invalid(field, data,
                           path + " in body should be greater than " + (exclusive ? "" : "or equal to ") +
                               bound_text(*minimum)));
      }
    }
    return result;
  }

  Result validate_array(const json& schema, const json& data, const std::string& path) const {
    Result result;
    if (const auto* items = items_schema(schema)) {
      for (size_t i = 0; i < data.size(); ++i) {
        result.merge(validate(*items, data[i], path + "[" + std::to_string(i) + "]"));
      }
    }
    const std::string field = field_from_openapi_path(path);
    const auto size = static_cast<long long>(data.size());
    if (auto min = integer_member(schema, "minItems"); min && size < *min) {
      result.add(
          invalid(field, size, path + " in body should have at least " + std::to_string(*min) + " items"));
    }
    if (auto max = integer_member(schema, "maxItems"); max && size > *max) {
      result.add(too_many(field, size, *max));
    }
    if (flag(schema, "uniqueItems")) {
      bool duplicate_found = false;
      for (size_t i = 0; i < data.size() && !duplicate_found; ++i) {
        for (size_t j = i + 1; j < data.size() && !duplicate_found; ++j) {
          duplicate_found = json_values_equal(data[i], data[j]);
        }
      }
      if (duplicate_found) result.add(invalid(field, "", path + " in body shouldn't contain duplicates"));
    }
    ++result.match_count;
    return result;
  }

  Result validate_enum(const json& schema, const json& data, const std::string& path) const {
    Result result;
    const auto* values = member(schema, "enum");
    if (!values || !values->is_array() || values->empty()) return result;
    if (!data.is_null()) {
      for (const auto& allowed : *values) {
        if (json_values_equal(allowed, data)) return result;
      }
    }
    result.add(not_supported(field_from_openapi_path(path), data, *values));
    return result;
  }

  Result validate_object(const json& schema, const json& data, const std::string& path) const {
    Result result;
    const auto keys = static_cast<long long>(data.size());
    const std::string field = field_from_openapi_path(path);
    if (auto min = integer_member(schema, "minProperties"); min && keys < *min) {
      result.add(invalid(field, keys,
                         path + " in body should have at least " + std::to_string(*min) + " properties"));
      return result;
    }
    if (auto max = integer_member(schema, "maxProperties"); max && keys > *max) {
      result.add(too_many(field, keys, *max));
      return result;
    }
    const auto* properties = member(schema, "properties");
    const auto* additional = member(schema, "additionalProperties");
    if (additional && additional->is_boolean() && !additional->get<bool>()) {
      for (const auto& [key, value] : data.items()) {
        if (!properties || !member(*properties, key)) {
          result.add(invalid(field, key, path + "." + key + " in body is a forbidden property"));
        }
      }
    } else if (additional && additional->is_object()) {
      for (const auto& [key, value] : data.items()) {
        if (!properties || !member(*properties, key))
          result.merge(validate(*additional, value, path + "." + key));
      }
    }
    if (properties && properties->is_object()) {
      for (const auto& [name, property] : properties->items()) {
        auto it = data.find(name);
        if (it == data.end()) continue;
        if (path.empty() && name == "metadata") continue;  // ObjectMeta is validated by the API server
        result.merge(validate(property, *it, path.empty() ? name : path + "." + name));
      }
    }
    if (const auto* required_names = member(schema, "required");
        required_names && required_names->is_array()) {
      for (const auto& name : *required_names) {
        if (name.is_string() && !data.contains(name.get<std::string>())) {
          result.add(required(field_from_openapi_path(path + "." + name.get<std::string>())));
        }
      }
    }
    if (flag(schema, "x-kubernetes-embedded-resource")) {
      for (const char* key : {"apiVersion", "kind"}) {
        auto it = data.find(key);
        if (it == data.end() || (it->is_string() && it->get<std::string>().empty())) {
          result.add(required(field_from_openapi_path(path + "." + key), "must not be empty"));
        }
      }
    }
    return result;
  }
};

// field.Path rendering for the list-type pass, which walks with Child/Index/Key.
std::string child_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

void validate_list_types(const json& schema, const json& data, const std::string& path,
                         std::vector<Cause>& out);

void validate_list_array(const json& schema, const json& data, const std::string& path,
                         std::vector<Cause>& out) {
  const std::string list_type = string_member(schema, "x-kubernetes-list-type");
  auto index_path = [&](size_t i) { return path + "[" + std::to_string(i) + "]"; };
  // Reports the second appearance of each repeated value, once, as listtype does.
  auto report_duplicates = [&](const std::vector<json>& keys, const std::vector<json>& shown) {
    std::vector<std::pair<std::string, int>> seen;
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string canonical = keys[i].dump();
      auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == canonical; });
      if (it == seen.end()) {
        seen.emplace_back(canonical, 1);
      } else if (++it->second == 2) {
        out.push_back(duplicate(index_path(i), shown[i]));
      }
    }
  };
  if (list_type == "set") {
    std::vector<json> values(data.begin(), data.end());
    report_duplicates(values, values);
  } else if (list_type == "map") {
    bool all_objects = true;
    for (size_t i = 0; i < data.size(); ++i) {
      if (!data[i].is_null() && !data[i].is_object()) {
        out.push_back(invalid(index_path(i), data[i], "must be an object for an array of list-type map"));
        all_objects = false;
        break;
      }
    }
    const auto* key_names = member(schema, "x-kubernetes-list-map-keys");
    if (all_objects && data.size() > 1 && key_names && key_names->is_array()) {
      std::vector<json> keys;
      for (const auto& item : data) {
        json key = json::object();
        for (const auto& key_name : *key_names) {
          if (!key_name.is_string() || !item.is_object()) continue;
          auto it = item.find(key_name.get<std::string>());
          if (it != item.end()) key[key_name.get<std::string>()] = *it;
        }
        keys.push_back(std::move(key));
      }
      report_duplicates(keys, keys);
    }
  }
  if (const auto* items = items_schema(schema)) {
    for (size_t i = 0; i < data.size(); ++i) validate_list_types(*items, data[i], index_path(i), out);
  }
}

void validate_list_types(const json& schema, const json& data, const std::string& path,
                         std::vector<Cause>& out) {
  if (data.is_array()) {
    validate_list_array(schema, data, path, out);
    return;
  }
  if (!data.is_object()) return;
  const auto* additional = additional_properties_schema(schema);
  for (const auto& [key, value] : data.items()) {
    if (const auto* property = property_schema(schema, key)) {
      validate_list_types(*property, value, child_path(path, key), out);
    } else if (additional) {
      validate_list_types(*additional, value, path + "[" + key + "]", out);
    }
  }
}

}  // namespace

std::vector<Cause> validate(const nlohmann::json& schema, const nlohmann::json& object) {
  std::vector<Cause> causes = Validator().validate(schema, object, "").causes;
  validate_list_types(schema, object, "", causes);
  return causes;
}

std::string invalid_message(const std::string& kind_group, const std::string& name,
                            const std::vector<Cause>& causes) {
  std::string message = kind_group + " " + detail::go_quote(name) + " is invalid";
  // ErrorList.ToAggregate drops repeated messages; one left prints bare, several in brackets.
  std::vector<std::string> unique;
  for (const auto& cause : causes) {
    std::string text = cause.field + ": " + cause.message;
    if (std::find(unique.begin(), unique.end(), text) == unique.end()) unique.push_back(std::move(text));
  }
  if (unique.empty()) return message;
  message += ": ";
  if (unique.size() == 1) return message + unique.front();
  return message + "[" + join(unique, ", ") + "]";
}

}  // namespace eslease::kubeemu::schema
