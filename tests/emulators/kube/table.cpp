#include "emulators/kube/table.h"

#include <cstdio>

#include "common/text.h"
#include "emulators/kube/printers.h"
#include "emulators/kube/schema/go_format.h"

namespace eslease::kubeemu {

using nlohmann::json;

IncludeObject include_object_of(const std::string& value) {
  if (value == "None") return IncludeObject::kNone;
  if (value == "Object") return IncludeObject::kObject;
  return IncludeObject::kMetadata;
}

std::string human_duration(std::chrono::seconds d) {
  const long long seconds = d.count();
  auto f = [](const char* fmt, long long a, long long b = 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), fmt, a, b);
    return std::string(buf);
  };
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return f("%llds", seconds);
  const long long minutes = seconds / 60;
  if (minutes < 10) return seconds % 60 == 0 ? f("%lldm", minutes) : f("%lldm%llds", minutes, seconds % 60);
  if (minutes < 180) return f("%lldm", minutes);
  const long long hours = minutes / 60;
  if (hours < 8) return minutes % 60 == 0 ? f("%lldh", hours) : f("%lldh%lldm", hours, minutes % 60);
  if (hours < 48) return f("%lldh", hours);
  if (hours < 24 * 8)
    return hours % 24 == 0 ? f("%lldd", hours / 24) : f("%lldd%lldh", hours / 24, hours % 24);
  if (hours < 24 * 365 * 2) return f("%lldd", hours / 24);
  if (hours < 24 * 365 * 8) {
    const long long days = (hours / 24) % 365;
    return days == 0 ? f("%lldy", hours / 24 / 365) : f("%lldy%lldd", hours / 24 / 365, days);
  }
  return f("%lldy", hours / 24 / 365);
}

namespace {

// Resolves ".a.b[0].c" (an optional leading "{" "}" pair is tolerated). Null when absent.
json resolve_path(const json& object, std::string path) {
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') path = path.substr(1, path.size() - 2);
  const json* node = &object;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      std::size_t end = i;
      while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
      const std::string key = path.substr(i, end - i);
      if (!node->is_object() || !node->contains(key)) return nullptr;
      node = &(*node)[key];
      i = end;
    } else if (path[i] == '[') {
      auto close = path.find(']', i);
      if (close == std::string::npos) return nullptr;
      const std::string index = path.substr(i + 1, close - i - 1);
      char* end = nullptr;
      const long n = std::strtol(index.c_str(), &end, 10);
      if (index.empty() || *end != '\0' || !node->is_array() || n < 0 ||
          static_cast<std::size_t>(n) >= node->size())
        return nullptr;
      node = &(*node)[static_cast<std::size_t>(n)];
      i = close + 1;
    } else {
      return nullptr;
    }
  }
  return *node;
}

json age_cell(const json& value, WallTime now) {
  if (!value.is_string()) return "<unknown>";
  auto t = parse_rfc3339(value.get<std::string>());
  if (!t) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

json cell_for(const PrinterColumn& column, const json& value, WallTime now) {
  if (value.is_null()) return nullptr;
  if (column.type == "date") return age_cell(value, now);
  if (column.type == "integer" && value.is_number()) return value.get<std::int64_t>();
  if (column.type == "number" && value.is_number()) return value.get<double>();
  if (column.type == "boolean" && value.is_boolean()) return value;
  if (value.is_string()) return value;
  // A string column prints any other value as Go's fmt does: a list as [a b].
  if (column.type == "string") return schema::detail::go_plain_v(value);
  return value.dump();
}

json partial_metadata(const json& object) {
  return {{"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", object.value("metadata", json::object())}};
}

}  // namespace

json make_table(const ResourceType& type, const std::string& version, const std::vector<json>& objects,
                const std::string& list_resource_version, const std::string& continue_token,
                IncludeObject include, WallTime now) {
  const BuiltinPrinter* builtin = type.custom ? nullptr : builtin_printer(type.group, type.plural);
  std::vector<TableColumn> definitions_in;
  std::vector<PrinterColumn> columns;
  if (builtin != nullptr) {
    definitions_in = builtin->columns;
  } else {
    if (type.custom) {
      if (const auto* v = type.version(version)) columns = v->columns;
    } else {
      columns.push_back({"Age", "date", "",
                         "CreationTimestamp is a timestamp representing the server time "
                         "when this object was created.",
                         ".metadata.creationTimestamp", 0});
    }
    definitions_in.push_back({"Name", "string", "name", "Name must be unique within a namespace.", 0});
    for (const auto& c : columns)
      definitions_in.push_back({c.name, c.type, c.format, c.description, c.priority});
  }
  json definitions = json::array();
  for (const auto& c : definitions_in) {
    definitions.push_back({{"name", c.name},
                           {"type", c.type},
                           {"format", c.format},
                           {"description", c.description},
                           {"priority", c.priority}});
  }
  json rows = json::array();
  for (const auto& object : objects) {
    json cells = json::array();
    if (builtin != nullptr) {
      cells = builtin->cells(object, now);
    } else {
      cells.push_back(object["metadata"].value("name", ""));
      for (const auto& c : columns) cells.push_back(cell_for(c, resolve_path(object, c.json_path), now));
    }
    json row = {{"cells", cells}};
    if (include == IncludeObject::kMetadata) row["object"] = partial_metadata(object);
    if (include == IncludeObject::kObject) row["object"] = object;
    rows.push_back(std::move(row));
  }
  json metadata = json::object();
  if (!list_resource_version.empty()) metadata["resourceVersion"] = list_resource_version;
  if (!continue_token.empty()) metadata["continue"] = continue_token;
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", metadata},
          {"columnDefinitions", definitions},
          {"rows", rows}};
}

}  // namespace eslease::kubeemu
