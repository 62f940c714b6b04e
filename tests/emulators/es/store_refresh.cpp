// The refreshed view that search and non-realtime gets read, and the refresh schedule.
#include <algorithm>
#include <chrono>

#include "emulators/es/index_settings.h"
#include "emulators/es/store.h"

namespace eslease::esemu {

void Store::for_each_searchable(const std::vector<std::string>& names, const SearchVisitor& visit) {
  std::lock_guard lock(mutex_);
  for (const auto& name : names) {
    auto it = indices_.find(name);
    if (it == indices_.end()) continue;
    refresh_if_due_locked(it->second);
    std::vector<std::pair<const std::string*, const Doc*>> ordered;
    ordered.reserve(it->second.searchable.size());
    for (const auto& [id, doc] : it->second.searchable) ordered.emplace_back(&id, &doc);
    // Lucene appends every new version of a document, so one shard returns equal-score
    // hits in the order of their last write.
    std::sort(ordered.begin(), ordered.end(),
              [](const auto& a, const auto& b) { return a.second->seq_no < b.second->seq_no; });
    for (const auto& [id, doc] : ordered) visit(it->second, *id, *doc);
  }
}

long long Store::now_millis() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().time_since_epoch()).count();
}

void Store::refresh_locked(Index& index) {
  for (const auto& id : index.dirty) {
    auto it = index.docs.find(id);
    if (it != index.docs.end() && !it->second.deleted) {
      index.searchable[id] = it->second;
    } else {
      index.searchable.erase(id);
    }
  }
  index.dirty.clear();
}

void Store::refresh_if_due_locked(Index& index) {
  if (index.refresh_interval_ms < 0) return;
  const long long now = now_millis();
  if (index.refresh_interval_ms == 0) {
    refresh_locked(index);
    return;
  }
  // Scheduled refreshes fall every interval from the index's creation (or the interval's
  // last change).
  const long long start = index.refresh_schedule_start_ms;
  const long long elapsed = std::max(0LL, now - start);
  const long long latest = start + elapsed / index.refresh_interval_ms * index.refresh_interval_ms;
  if (latest <= index.last_scheduled_refresh_ms) return;
  index.last_scheduled_refresh_ms = latest;
  refresh_locked(index);
}

int Store::refresh(const std::vector<std::string>& names) {
  std::lock_guard lock(mutex_);
  int shards = 0;
  for (const auto& name : names) {
    auto it = indices_.find(name);
    if (it == indices_.end()) continue;
    refresh_locked(it->second);
    shards += 1 + it->second.replicas;  // the primary and its (unassigned) replicas
  }
  return shards;
}

std::optional<EsError> Store::put_settings(const std::string& expression,
                                           const nlohmann::ordered_json& body) {
  if (!body.is_object() || body.empty())
    return make_es_error(400, "action_request_validation_exception",
                         "Validation Failed: 1: no settings to update;");
  nlohmann::ordered_json flat = nlohmann::ordered_json::object();
  flatten_settings(body.contains("settings") ? body["settings"] : body, "", flat);
  nlohmann::ordered_json changes = nlohmann::ordered_json::object();
  for (const auto& [key, value] : flat.items())
    changes[key.rfind("index.", 0) == 0 ? key : "index." + key] = value;
  for (const auto& [key, value] : changes.items()) {
    if (key == "index.number_of_shards") {
      return illegal_argument(
          "Can't update non dynamic settings [[index.number_of_shards]] for open indices");
    }
    if (key != "index.refresh_interval" && key != "index.number_of_replicas" && key != "index.gc_deletes") {
      return illegal_argument("unknown setting [" + key +
                              "] please check that any required plugins are installed, "
                              "or check the breaking changes documentation for removed settings");
    }
  }
  if (refresh_interval_setting(changes) == LLONG_MIN) {
    return illegal_argument("failed to parse setting [index.refresh_interval] with value [" +
                            changes["index.refresh_interval"].get<std::string>() +
                            "] as a time value: unit is missing or unrecognized");
  }
  auto names = resolve(expression);
  if (auto* err = std::get_if<EsError>(&names)) return *err;
  std::lock_guard lock(mutex_);
  for (const auto& name : std::get<std::vector<std::string>>(names)) {
    auto it = indices_.find(name);
    if (it == indices_.end()) return index_not_found(name);  // deleted meanwhile
    Index& index = it->second;
    for (const auto& [key, value] : changes.items()) index.settings[key] = value;
    if (auto replicas = parse_int_setting(changes, "index.number_of_replicas"); replicas && *replicas >= 0) {
      index.replicas = static_cast<int>(*replicas);
    }
    if (auto gc = changes.find("index.gc_deletes"); gc != changes.end()) {
      index.gc_deletes_ms = parse_time_setting(gc->get<std::string>()).value_or(60000);
    }
    if (changes.contains("index.refresh_interval")) {
      index.refresh_interval_ms = refresh_interval_setting(changes).value_or(1000);
      index.refresh_schedule_start_ms = now_millis();
      index.last_scheduled_refresh_ms = index.refresh_schedule_start_ms;
    }
  }
  return std::nullopt;
}

}  // namespace eslease::esemu
