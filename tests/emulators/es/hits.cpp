#include "emulators/es/hits.h"

#include <climits>
#include <cmath>

#include "emulators/es/dates.h"
#include "emulators/es/field_values.h"
#include "emulators/es/mapping.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

std::variant<std::vector<SortField>, EsError> parse_sort(const json& sort) {
  std::vector<SortField> out;
  auto one = [&](const json& s) -> std::optional<EsError> {
    if (s.is_string()) {
      SortField f{s.get<std::string>(), false};
      f.descending = f.field == "_score";
      out.push_back(f);
      return std::nullopt;
    }
    if (s.is_object() && s.size() == 1) {
      SortField f{s.begin().key(), false};
      const json& spec = s.begin().value();
      std::string order;
      if (spec.is_string()) {
        order = spec.get<std::string>();
      } else if (spec.is_object()) {
        for (const auto& [key, value] : spec.items()) {
          if (key == "order" && value.is_string())
            order = value.get<std::string>();
          else if (key == "unmapped_type" || key == "format" || key == "mode" || key == "missing" ||
                   key == "numeric_type")
            continue;
          else
            return make_es_error(400, "parsing_exception", "[" + f.field + "] unknown field [" + key + "]");
        }
      } else {
        return make_es_error(400, "parsing_exception", "[sort] malformed sort for field [" + f.field + "]");
      }
      if (!order.empty() && order != "asc" && order != "desc") {
        return illegal_argument("Unknown SortOrder [" + order + "]");
      }
      f.descending = order.empty() ? f.field == "_score" : order == "desc";
      out.push_back(f);
      return std::nullopt;
    }
    return make_es_error(400, "parsing_exception", "[sort] malformed sort");
  };
  if (sort.is_array()) {
    for (const auto& s : sort) {
      if (auto err = one(s)) return *err;
    }
  } else if (auto err = one(sort)) {
    return *err;
  }
  return out;
}

std::vector<SortField> parse_sort_param(const std::string& param) {
  std::vector<SortField> out;
  std::size_t start = 0;
  while (start <= param.size()) {
    auto comma = param.find(',', start);
    std::string part = param.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) {
      auto colon = part.rfind(':');
      if (colon != std::string::npos) {
        out.push_back({part.substr(0, colon), part.substr(colon + 1) == "desc"});
      } else {
        out.push_back({part, part == "_score"});
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::variant<json, EsError> sort_value(const SortField& sort, const Index& index, const std::string& id,
                                       const Doc& doc) {
  if (sort.field == "_score") return 1.0;
  if (sort.field == "_doc") return doc.seq_no;
  if (sort.field == "_seq_no") return doc.seq_no;
  auto type = field_type(index.mappings, sort.field);
  if (!type) {
    return make_es_error(400, "query_shard_exception",
                         "No mapping found for [" + sort.field + "] in order to sort on",
                         {{"index_uuid", index.uuid}, {"index", index.name}});
  }
  if (is_text(*type)) {
    return illegal_argument(
        "Fielddata is disabled on [" + sort.field + "] in [" + index.name +
        "]. Text fields are not optimised for operations that require per-document field data "
        "like aggregations and sorting, so these operations are disabled by default. Please use "
        "a keyword field instead.");
  }
  std::vector<const json*> values;
  collect_values(doc.source, sort.field, values);
  if (values.empty()) {
    auto dot = sort.field.rfind('.');
    if (dot != std::string::npos) collect_values(doc.source, sort.field.substr(0, dot), values);
  }
  std::optional<json> best;
  for (const json* v : values) {
    json key;
    if (is_numeric_type(*type)) {
      auto n = to_number(*v);
      if (!n) continue;
      if (std::floor(*n) == *n && std::fabs(*n) < 9.2e18L) {
        key = static_cast<long long>(*n);
      } else {
        key = static_cast<double>(*n);
      }
    } else if (*type == "date" || *type == "date_nanos") {
      auto ms = parse_date_millis(*v);
      if (!ms) continue;
      key = *ms;
    } else if (*type == "boolean") {
      auto b = to_bool(*v);
      if (!b) continue;
      key = *b ? 1 : 0;
    } else {
      key = to_keyword(*v);
    }
    if (!best || compare_sort_values(key, *best, sort.descending) < 0) best = key;
  }
  if (best) return *best;
  if (is_numeric_type(*type) || *type == "date" || *type == "date_nanos" || *type == "boolean") {
    // Missing numeric values sort last with the extreme value as their sort key.
    return sort.descending ? json(LLONG_MIN) : json(LLONG_MAX);
  }
  return json();
}

int compare_sort_values(const json& a, const json& b, bool descending) {
  if (a.is_null() || b.is_null()) {
    if (a.is_null() && b.is_null()) return 0;
    return a.is_null() ? 1 : -1;  // missing last either way
  }
  int c = 0;
  if (a.is_number() && b.is_number()) {
    auto x = to_number(a).value_or(0), y = to_number(b).value_or(0);
    c = x < y ? -1 : (x > y ? 1 : 0);
  } else {
    std::string x = to_keyword(a), y = to_keyword(b);
    c = x.compare(y) < 0 ? -1 : (x.compare(y) > 0 ? 1 : 0);
  }
  return descending ? -c : c;
}

std::variant<SourceFilter, EsError> parse_source_filter(const json& value) {
  SourceFilter f;
  auto strings = [](const json& v, std::vector<std::string>& out) {
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
      return true;
    }
    if (!v.is_array()) return false;
    for (const auto& s : v) {
      if (!s.is_string()) return false;
      out.push_back(s.get<std::string>());
    }
    return true;
  };
  if (value.is_boolean()) {
    f.enabled = value.get<bool>();
  } else if (value.is_string() || value.is_array()) {
    if (!strings(value, f.includes))
      return parse_error("Expected one of [TRUE, FALSE, VALUE_STRING, START_ARRAY, START_OBJECT]");
  } else if (value.is_object()) {
    for (const auto& [key, v] : value.items()) {
      bool ok = false;
      if (key == "includes" || key == "include")
        ok = strings(v, f.includes);
      else if (key == "excludes" || key == "exclude")
        ok = strings(v, f.excludes);
      if (!ok)
        return parse_error("Unknown key for a " + std::string(v.is_array() ? "START_ARRAY" : "VALUE") +
                           " in [" + key + "].");
    }
  } else {
    return parse_error("Expected one of [TRUE, FALSE, VALUE_STRING, START_ARRAY, START_OBJECT]");
  }
  return f;
}

namespace {

bool path_selected(const std::string& path, const std::vector<std::string>& patterns, bool prefix_counts) {
  for (const auto& p : patterns) {
    if (glob_match(p, path)) return true;
    // "meta" selects "meta.owner"; while descending, "meta" is on the way to "meta.owner".
    if (path.rfind(p + ".", 0) == 0) return true;
    if (prefix_counts && (p.rfind(path + ".", 0) == 0 || (p.find('*') != std::string::npos))) return true;
  }
  return false;
}

json filter_object(const json& object, const std::string& prefix, const SourceFilter& filter) {
  json out = json::object();
  for (const auto& [key, value] : object.items()) {
    std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!filter.excludes.empty() && path_selected(path, filter.excludes, false)) continue;
    bool included = filter.includes.empty() || path_selected(path, filter.includes, false);
    if (included && filter.excludes.empty()) {
      out[key] = value;
      continue;
    }
    if (value.is_object() && (included || path_selected(path, filter.includes, true))) {
      json child = filter_object(value, path, included ? SourceFilter{true, {}, filter.excludes} : filter);
      if (!child.empty() || included) out[key] = child;
    } else if (included) {
      out[key] = value;
    }
  }
  return out;
}

}  // namespace

json filter_source(const json& source, const SourceFilter& filter) {
  if (filter.includes.empty() && filter.excludes.empty()) return source;
  if (!source.is_object()) return source;
  return filter_object(source, "", filter);
}

}  // namespace eslease::esemu
