#include "emulators/kube/managed_fields.h"

#include <algorithm>
#include <map>

namespace eslease::kubeemu {

using nlohmann::json;

bool ManagerEntry::same_manager(const ManagerEntry& other) const {
  return manager == other.manager && operation == other.operation && subresource == other.subresource &&
         (operation != "Update" || api_version == other.api_version);
}

std::string ManagerEntry::printed() const {
  std::string out = json(manager).dump();
  if (!subresource.empty()) out += " with subresource " + json(subresource).dump();
  if (operation == "Update") {
    out += " using " + api_version;
    if (!time.empty()) out += " at " + time;
  }
  return out;
}

std::vector<ManagerEntry> read_managed_fields(const json& object) {
  std::vector<ManagerEntry> out;
  const json& meta = object.is_object() && object.contains("metadata") ? object["metadata"] : json();
  if (!meta.is_object() || !meta.contains("managedFields") || !meta["managedFields"].is_array()) return out;
  for (const auto& entry : meta["managedFields"]) {
    if (!entry.is_object()) continue;
    ManagerEntry e;
    e.manager = entry.value("manager", "");
    e.operation = entry.value("operation", "");
    e.api_version = entry.value("apiVersion", "");
    e.time = entry.value("time", "");
    e.subresource = entry.value("subresource", "");
    if (entry.contains("fieldsV1")) e.fields = from_fields_v1(entry["fieldsV1"]);
    if (!e.fields.empty()) out.push_back(std::move(e));
  }
  return out;
}

void write_managed_fields(json& object, const std::vector<ManagerEntry>& managers) {
  json entries = json::array();
  for (const auto& m : managers) {
    if (m.fields.empty()) continue;
    json entry = {{"manager", m.manager}, {"operation", m.operation}, {"apiVersion", m.api_version},
                  {"time", m.time},       {"fieldsType", "FieldsV1"}, {"fieldsV1", fields_v1(m.fields)}};
    if (!m.subresource.empty()) entry["subresource"] = m.subresource;
    entries.push_back(std::move(entry));
  }
  if (entries.empty()) {
    object["metadata"].erase("managedFields");
  } else {
    object["metadata"]["managedFields"] = std::move(entries);
  }
}

std::string default_manager(const std::string& user_agent) {
  std::string manager = user_agent.substr(0, user_agent.find('/'));
  if (manager.size() > 128) manager.resize(128);
  return manager.empty() ? "unknown" : manager;
}

namespace {

void drop_empty(std::vector<ManagerEntry>& managers) {
  managers.erase(
      std::remove_if(managers.begin(), managers.end(), [](const auto& m) { return m.fields.empty(); }),
      managers.end());
}

ManagerEntry& entry_for(std::vector<ManagerEntry>& managers, const ManagerEntry& who) {
  for (auto& m : managers) {
    if (m.same_manager(who)) {
      m.api_version = who.api_version;
      m.time = who.time;
      return m;
    }
  }
  managers.push_back(who);
  managers.back().fields.clear();
  return managers.back();
}

// A leaf's value changed, or a path is new.
bool changed(const FieldSet& before, const FieldSet& after, const FieldPath& path, const json& old_object,
             const json& new_object) {
  if (before.count(path) == 0) return true;
  if (has_children(after, path)) return false;  // a list element: its fields speak for it
  const json* a = value_at(old_object, path);
  const json* b = value_at(new_object, path);
  return a == nullptr || b == nullptr || *a != *b;
}

// Merges `config` into `live` as an apply does: objects field by field, lists by their type.
void merge_into(json& live, const json& config, const ListTypes& lists, std::vector<std::string>& names) {
  if (config.is_object() && live.is_object()) {
    for (const auto& [key, value] : config.items()) {
      names.push_back(key);
      if (value.is_null()) {
        live.erase(key);
      } else if (live.contains(key)) {
        merge_into(live[key], value, lists, names);
      } else {
        live[key] = value;
      }
      names.pop_back();
    }
    return;
  }
  if (config.is_array() && live.is_array()) {
    const ListType type = lists(names);
    if (type.apply == ListKind::kSet) {
      for (const auto& item : config) {
        if (std::find(live.begin(), live.end(), item) == live.end()) live.push_back(item);
      }
      return;
    }
    if (type.apply == ListKind::kMap) {
      for (const auto& item : config) {
        auto same_keys = [&](const json& existing) {
          for (const auto& key : type.apply_keys) {
            const json a = item.is_object() && item.contains(key) ? item[key] : json();
            const json b = existing.is_object() && existing.contains(key) ? existing[key] : json();
            if (a != b) return false;
          }
          return true;
        };
        auto it = std::find_if(live.begin(), live.end(), same_keys);
        if (it == live.end()) {
          live.push_back(item);
        } else {
          merge_into(*it, item, lists, names);
        }
      }
      return;
    }
  }
  live = config;
}

ApiError apply_conflict(const std::vector<std::pair<ManagerEntry*, FieldPath>>& conflicts) {
  json causes = json::array();
  std::map<std::string, std::vector<std::string>> by_manager;
  for (const auto& [manager, path] : conflicts) {
    causes.push_back({{"reason", "FieldManagerConflict"},
                      {"message", "conflict with " + manager->printed()},
                      {"field", path_string(path)}});
    by_manager[manager->printed()].push_back(path_string(path));
  }
  std::string message;
  if (conflicts.size() == 1) {
    message = "Apply failed with 1 conflict: conflict with " + conflicts[0].first->printed() + ": " +
              path_string(conflicts[0].second);
  } else {
    std::string lines;
    for (const auto& [manager, paths] : by_manager) {
      lines += (lines.empty() ? "" : "\n") + std::string("conflicts with ") + manager + ":";
      for (const auto& p : paths) lines += "\n- " + p;
    }
    message = "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: " + lines;
  }
  return make_api_error(409, "Conflict", message, {{"causes", causes}});
}

}  // namespace

void record_update(std::vector<ManagerEntry>& managers, const ManagerEntry& who, const FieldSet& before,
                   const FieldSet& after, const json& old_object, const json& new_object) {
  FieldSet changes;
  for (const auto& path : after) {
    if (changed(before, after, path, old_object, new_object)) changes.insert(path);
  }
  for (auto& m : managers) {
    for (auto it = m.fields.begin(); it != m.fields.end();) {
      const bool gone = after.count(*it) == 0;
      const bool taken = changes.count(*it) > 0 && !m.same_manager(who);
      it = gone || taken ? m.fields.erase(it) : std::next(it);
    }
  }
  if (!changes.empty()) {
    ManagerEntry& mine = entry_for(managers, who);
    mine.fields.insert(changes.begin(), changes.end());
  }
  drop_empty(managers);
}

std::variant<Applied, ApiError> server_side_apply(const json& live, const json& config,
                                                  const ApplyRequest& request) {
  const FieldSet applied = fields_of(config, request.lists, request.with_status);
  std::vector<ManagerEntry> managers =
      live.is_null() ? std::vector<ManagerEntry>{} : read_managed_fields(live);
  json object = live.is_null() ? json::object() : live;
  if (object.contains("metadata")) object["metadata"].erase("managedFields");

  std::vector<std::pair<ManagerEntry*, FieldPath>> conflicts;
  for (const auto& path : applied) {
    if (has_children(applied, path)) continue;  // list elements conflict through their fields
    const json* now = value_at(object, path);
    const json* wanted = value_at(config, path);
    if (now == nullptr || wanted == nullptr || *now == *wanted) continue;
    for (auto& m : managers) {
      if (!m.same_manager(request.applier) && m.fields.count(path) > 0) conflicts.emplace_back(&m, path);
    }
  }
  if (!conflicts.empty() && !request.force) return apply_conflict(conflicts);
  for (const auto& [manager, path] : conflicts)
    manager->fields.erase(path);  // force: they are the applier's now

  ManagerEntry& mine = entry_for(managers, request.applier);
  // What the applier set before and leaves out now goes, unless someone else owns it.
  std::vector<FieldPath> dropped;
  for (const auto& path : mine.fields) {
    if (owns_within(applied, path)) continue;
    const bool shared = std::any_of(managers.begin(), managers.end(), [&](const ManagerEntry& m) {
      return !m.same_manager(request.applier) && owns_within(m.fields, path);
    });
    if (!shared) dropped.push_back(path);
  }
  // A list element that goes takes its fields with it: erasing a key field first would leave
  // the rest of the element unfindable.
  const FieldSet dropped_set(dropped.begin(), dropped.end());
  std::erase_if(dropped, [&](const FieldPath& path) {
    auto elements = path_elements(path);
    for (elements.pop_back(); !elements.empty(); elements.pop_back()) {
      if (dropped_set.count(path_join(elements)) > 0) return true;
    }
    return false;
  });
  std::sort(dropped.begin(), dropped.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const auto& path : dropped) erase_at(object, path);

  json merged_config = config;
  if (!request.with_status) merged_config.erase("status");
  std::vector<std::string> names;
  merge_into(object, merged_config, request.lists, names);
  for (auto& m : managers) {
    if (m.same_manager(request.applier)) m.fields = applied;
  }
  drop_empty(managers);
  write_managed_fields(object, managers);
  return Applied{std::move(object), std::move(managers)};
}

}  // namespace eslease::kubeemu
