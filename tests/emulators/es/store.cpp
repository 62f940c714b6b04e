#include "emulators/es/store.h"

#include <algorithm>
#include <charconv>
#include <random>

#include "emulators/es/index_settings.h"
#include "emulators/es/mapping.h"
#include "emulators/es/mapping_merge.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

// XContentHelper.update: merges `changes` into `target`; true when anything changed.
bool merge_into(json& target, const json& changes) {
  bool modified = false;
  for (const auto& [key, value] : changes.items()) {
    auto it = target.find(key);
    if (it != target.end() && it->is_object() && value.is_object()) {
      modified |= merge_into(*it, value);
    } else {
      if (it == target.end() || *it != value) modified = true;
      target[key] = value;
    }
  }
  return modified;
}

// Why a write's condition fails on the document as it stands (nullptr: none, or a tombstone
// gc_deletes has forgotten), as InternalEngine words it; nothing when it holds. The condition
// is the seq_no/primary_term pair, or an external version compared as VersionType does.
std::optional<std::string> failed_condition(const Doc* existing, const WriteOp& op) {
  const bool live = existing != nullptr && !existing->deleted;
  if (op.if_seq_no != kUnassignedSeqNo) {
    std::string required = "required seqNo [" + std::to_string(op.if_seq_no) + "], primary term [" +
                           std::to_string(op.if_primary_term) + "].";
    if (!live) return required + " but no document was found";
    if (existing->seq_no != op.if_seq_no || existing->primary_term != op.if_primary_term) {
      return required + " current document has seqNo [" + std::to_string(existing->seq_no) +
             "] and primary term [" + std::to_string(existing->primary_term) + "]";
    }
    return std::nullopt;
  }
  // A tombstone still within gc_deletes keeps its version; a forgotten one is no document.
  if (op.version_type == VersionType::kInternal || existing == nullptr) return std::nullopt;
  const std::string current = "current version [" + std::to_string(existing->version) + "]";
  const std::string provided = " the one provided [" + std::to_string(op.version) + "]";
  if (op.version_type == VersionType::kExternal && existing->version >= op.version) {
    return current + " is higher or equal to" + provided;
  }
  if (op.version_type == VersionType::kExternalGte && existing->version > op.version) {
    return current + " is higher than" + provided;
  }
  return std::nullopt;
}

// The version a write leaves: the writer's own with external versioning, else one more.
std::int64_t next_version(const Doc* existing, const WriteOp& op) {
  if (op.version_type != VersionType::kInternal) return op.version;
  return existing != nullptr ? existing->version + 1 : 1;
}

int shards_total(const Index& index) {
  return 1 + index.replicas;
}

}  // namespace

std::string random_base64url(std::size_t length) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out(length, 'A');
  for (auto& c : out) c = kAlphabet[rng() % 64];
  return out;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  auto star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  if (text.substr(0, star) != pattern.substr(0, star)) return false;
  std::string_view rest = pattern.substr(star + 1);
  for (std::size_t i = star; i <= text.size(); ++i) {
    if (glob_match(rest, text.substr(i))) return true;
  }
  return false;
}

json WriteOutcome::to_json() const {
  json out = {{"_index", index}, {"_id", id}, {"_version", version}, {"result", result}};
  if (forced_refresh) out["forced_refresh"] = true;
  out["_shards"] = {{"total", shards_total}, {"successful", shards_successful}, {"failed", 0}};
  out["_seq_no"] = seq_no;
  out["_primary_term"] = primary_term;
  if (updated_source) {
    out["get"] = {
        {"_seq_no", seq_no}, {"_primary_term", primary_term}, {"found", true}, {"_source", *updated_source}};
  }
  return out;
}

Store::Store(const Clock& clock) : clock_(clock) {}

Index& Store::create_locked(const std::string& name, json settings, json mappings, json aliases) {
  Index index;
  index.name = name;
  index.uuid = random_base64url(22);
  index.creation_date_ms = now_millis();
  if (!settings.contains("index.number_of_shards")) settings["index.number_of_shards"] = "1";
  if (!settings.contains("index.number_of_replicas")) settings["index.number_of_replicas"] = "1";
  settings["index.provided_name"] = name;
  settings["index.creation_date"] = std::to_string(index.creation_date_ms);
  settings["index.uuid"] = index.uuid;
  settings["index.version.created"] = "8110199";
  if (!settings.contains("index.routing.allocation.include._tier_preference")) {
    settings["index.routing.allocation.include._tier_preference"] = "data_content";
  }
  index.replicas = static_cast<int>(parse_int_setting(settings, "index.number_of_replicas").value_or(1));
  if (settings.contains("index.gc_deletes") && settings["index.gc_deletes"].is_string()) {
    index.gc_deletes_ms = parse_time_setting(settings["index.gc_deletes"].get<std::string>()).value_or(60000);
  }
  if (auto interval = refresh_interval_setting(settings)) index.refresh_interval_ms = *interval;
  index.refresh_schedule_start_ms = index.creation_date_ms;
  index.last_scheduled_refresh_ms = index.creation_date_ms;
  index.settings = std::move(settings);
  index.mappings = std::move(mappings);
  index.aliases = aliases.is_object() ? std::move(aliases) : json::object();
  return indices_.emplace(name, std::move(index)).first->second;
}

std::optional<EsError> Store::create_index(const std::string& name, const json& body) {
  if (auto err = validate_index_name(name)) return err;
  json settings = json::object();
  json mappings = json::object();
  json aliases = json::object();
  if (!body.is_null()) {
    if (!body.is_object()) return parse_error("Failed to derive xcontent");
    for (const auto& [key, value] : body.items()) {
      if (key == "settings") {
        if (!value.is_object()) return parse_error("key [settings] must be an object");
        json flat = json::object();
        flatten_settings(value, "", flat);
        for (const auto& [k, v] : flat.items()) {
          settings[k.rfind("index.", 0) == 0 ? k : "index." + k] = v;
        }
      } else if (key == "mappings") {
        if (auto err = normalize_mappings(value, mappings)) return err;
      } else if (key == "aliases") {
        aliases = value;
      } else {
        return parse_error("unknown key [" + key + "] for create index");
      }
    }
  }
  for (const char* key : {"index.number_of_shards", "index.number_of_replicas"}) {
    auto v = parse_int_setting(settings, key);
    long long minimum = std::string(key) == "index.number_of_shards" ? 1 : 0;
    if (v && (*v == LLONG_MIN || *v < minimum || *v > 1024)) {
      return illegal_argument("Failed to parse value [" + settings[key].get<std::string>() +
                              "] for setting [" + key + "] must be >= " + std::to_string(minimum));
    }
  }
  if (refresh_interval_setting(settings) == LLONG_MIN) {
    return illegal_argument("failed to parse setting [index.refresh_interval] with value [" +
                            settings["index.refresh_interval"].get<std::string>() +
                            "] as a time value: unit is missing or unrecognized");
  }
  std::lock_guard lock(mutex_);
  if (auto it = indices_.find(name); it != indices_.end()) {
    return make_es_error(400, "resource_already_exists_exception",
                         "index [" + name + "/" + it->second.uuid + "] already exists",
                         {{"index_uuid", it->second.uuid}, {"index", name}});
  }
  create_locked(name, std::move(settings), std::move(mappings), std::move(aliases));
  return std::nullopt;
}

std::optional<EsError> Store::delete_indices(const std::string& expression) {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= expression.size()) {
    auto comma = expression.find(',', start);
    std::string name =
        expression.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name == "_all" || name.find('*') != std::string::npos) {
      return illegal_argument("Wildcard expressions or all indices are not allowed");
    }
    if (!indices_.contains(name)) return index_not_found(name);
    names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& name : names) indices_.erase(name);
  return std::nullopt;
}

std::optional<EsError> Store::put_mapping(const std::string& expression, const json& body) {
  auto names = resolve(expression);
  if (auto* err = std::get_if<EsError>(&names)) return *err;
  std::lock_guard lock(mutex_);
  std::map<std::string, json> merged;
  for (const auto& name : std::get<std::vector<std::string>>(names)) {
    auto it = indices_.find(name);
    if (it == indices_.end()) return index_not_found(name);  // deleted meanwhile
    json mapping = it->second.mappings;
    if (auto err = merge_mapping(mapping, body)) return err;
    merged[name] = std::move(mapping);
  }
  for (auto& [name, mapping] : merged) indices_.at(name).mappings = std::move(mapping);
  return std::nullopt;
}

bool Store::exists(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return indices_.contains(name);
}

std::variant<std::vector<std::string>, EsError> Store::resolve(const std::string& expression) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (expression.empty() || expression == "_all") {
    for (const auto& [name, index] : indices_) add(name);
    return out;
  }
  std::size_t start = 0;
  while (true) {
    auto comma = expression.find(',', start);
    std::string part =
        expression.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (part.find('*') != std::string::npos) {
      for (const auto& [name, index] : indices_) {
        if (glob_match(part, name) && (name[0] != '.' || part[0] == '.')) add(name);
      }
    } else if (indices_.contains(part)) {
      add(part);
    } else {
      return index_not_found(part);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::variant<json, EsError> Store::describe(const std::string& expression, bool mappings_only) const {
  auto names = resolve(expression);
  if (auto* err = std::get_if<EsError>(&names)) return *err;
  std::lock_guard lock(mutex_);
  json out = json::object();
  for (const auto& name : std::get<std::vector<std::string>>(names)) {
    const Index& index = indices_.at(name);
    if (mappings_only) {
      out[name] = {{"mappings", index.mappings}};
    } else {
      out[name] = {{"aliases", index.aliases},
                   {"mappings", index.mappings},
                   {"settings", nest_settings(index.settings)}};
    }
  }
  return out;
}

const Doc* Store::current(const Index& index, const std::string& id) const {
  auto it = index.docs.find(id);
  if (it == index.docs.end()) return nullptr;
  if (it->second.deleted && now_millis() - it->second.deleted_at_ms > index.gc_deletes_ms) return nullptr;
  return &it->second;
}

GetOutcome Store::get(const std::string& index_name, const std::string& id, bool realtime) {
  std::lock_guard lock(mutex_);
  GetOutcome out;
  out.index = index_name;
  auto it = indices_.find(index_name);
  if (it == indices_.end()) {
    out.error = index_not_found(index_name);
    return out;
  }
  Index& index = it->second;
  const Doc* doc = nullptr;
  if (realtime) {
    doc = current(index, id);
  } else {
    refresh_if_due_locked(index);
    if (auto s = index.searchable.find(id); s != index.searchable.end()) doc = &s->second;
  }
  if (doc != nullptr && !doc->deleted) {
    out.found = true;
    out.doc = *doc;
  }
  return out;
}

int Store::replicas_of(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = indices_.find(name);
  return it == indices_.end() ? 0 : it->second.replicas;
}

std::optional<std::int64_t> Store::bump_primary_term(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = indices_.find(name);
  if (it == indices_.end()) return std::nullopt;
  return ++it->second.primary_term;
}

ClusterCounts Store::counts() const {
  std::lock_guard lock(mutex_);
  ClusterCounts c;
  for (const auto& [name, index] : indices_) {
    ++c.indices;
    ++c.primaries;
    c.unassigned_replicas += index.replicas;
  }
  return c;
}

std::vector<WriteOutcome> Store::write(const std::vector<WriteOp>& ops, RefreshPolicy refresh) {
  std::lock_guard lock(mutex_);
  std::vector<WriteOutcome> outcomes;
  outcomes.reserve(ops.size());
  std::set<std::string> touched;
  for (const auto& op : ops) outcomes.push_back(apply(op, touched));
  if (refresh != RefreshPolicy::kNone) {
    for (const auto& name : touched) {
      if (auto it = indices_.find(name); it != indices_.end()) refresh_locked(it->second);
    }
    if (refresh == RefreshPolicy::kImmediate) {
      for (auto& outcome : outcomes) {
        if (!outcome.error && outcome.result != "noop") outcome.forced_refresh = true;
      }
    }
  }
  return outcomes;
}

WriteOutcome Store::apply(const WriteOp& op, std::set<std::string>& touched) {
  auto it = indices_.find(op.index);
  if (it == indices_.end()) {
    // Deletes do not create the index they target; every other write does (auto-create).
    if (op.kind == WriteKind::kDelete) {
      WriteOutcome out;
      out.index = op.index;
      out.id = op.id;
      out.error = index_not_found(op.index);
      return out;
    }
    if (auto err = validate_index_name(op.index)) {
      WriteOutcome out;
      out.index = op.index;
      out.id = op.id;
      out.error = err;
      return out;
    }
    it = indices_.find(create_locked(op.index, json::object(), json::object(), json::object()).name);
  }
  Index& index = it->second;
  touched.insert(index.name);
  switch (op.kind) {
    case WriteKind::kIndex:
      return apply_index(index, op, op.source, op.raw_source, false);
    case WriteKind::kCreate:
      return apply_index(index, op, op.source, op.raw_source, true);
    case WriteKind::kUpdate:
      return apply_update(index, op);
    case WriteKind::kDelete:
      return apply_delete(index, op);
  }
  return {};
}

WriteOutcome Store::apply_index(Index& index, const WriteOp& op, const json& source, const std::string& raw,
                                bool create) {
  WriteOutcome out;
  out.index = index.name;
  out.id = op.id.empty() ? random_base64url(20) : op.id;
  json mapping = index.mappings;
  if (auto err = apply_document(mapping, source, DocumentContext{index.name, out.id, raw})) {
    out.error = err;
    return out;
  }
  const Doc* existing = current(index, out.id);
  const bool live = existing != nullptr && !existing->deleted;
  if (create && live) {
    out.error = version_conflict(
        out.id, "document already exists (current version [" + std::to_string(existing->version) + "])",
        index.name, index.uuid);
    return out;
  }
  if (auto failed = failed_condition(existing, op)) {
    out.error = version_conflict(out.id, *failed, index.name, index.uuid);
    return out;
  }
  Doc doc;
  doc.source = source;
  doc.seq_no = index.next_seq_no++;
  doc.primary_term = index.primary_term;
  doc.version = next_version(existing, op);
  index.mappings = std::move(mapping);
  index.docs[out.id] = doc;
  index.dirty.insert(out.id);
  out.result = live ? "updated" : "created";
  out.status = live ? 200 : 201;
  out.version = doc.version;
  out.seq_no = doc.seq_no;
  out.primary_term = doc.primary_term;
  out.shards_total = shards_total(index);
  out.shards_successful = 1;
  return out;
}

WriteOutcome Store::apply_update(Index& index, const WriteOp& op) {
  const Doc* existing = current(index, op.id);
  const bool live = existing != nullptr && !existing->deleted;
  const UpdateSpec& spec = op.update;
  if (!live) {
    if (!spec.upsert && !spec.doc_as_upsert) {
      WriteOutcome out;
      out.index = index.name;
      out.id = op.id;
      out.error = document_error(404, "document_missing_exception", "[" + op.id + "]: document missing",
                                 index.name, index.uuid);
      return out;
    }
    const json& source = spec.doc_as_upsert ? spec.doc : *spec.upsert;
    WriteOp create = op;
    create.if_seq_no = kUnassignedSeqNo;
    auto out = apply_index(index, create, source, source.dump(), true);
    if (!out.error && spec.fetch_source) out.updated_source = source;
    return out;
  }
  if (auto failed = failed_condition(existing, op)) {
    WriteOutcome out;
    out.index = index.name;
    out.id = op.id;
    out.error = version_conflict(op.id, *failed, index.name, index.uuid);
    return out;
  }
  json merged = existing->source;
  const bool modified = merge_into(merged, spec.doc);
  if (!modified && spec.detect_noop) {
    WriteOutcome out;
    out.index = index.name;
    out.id = op.id;
    out.result = "noop";
    out.status = 200;
    out.version = existing->version;
    out.seq_no = existing->seq_no;
    out.primary_term = existing->primary_term;
    if (spec.fetch_source) out.updated_source = merged;
    return out;
  }
  // The merged document is written with the seq_no it was read at, as UpdateHelper does.
  WriteOp replace = op;
  replace.if_seq_no = existing->seq_no;
  replace.if_primary_term = existing->primary_term;
  auto out = apply_index(index, replace, merged, merged.dump(), false);
  if (!out.error && spec.fetch_source) out.updated_source = merged;
  return out;
}

WriteOutcome Store::apply_delete(Index& index, const WriteOp& op) {
  WriteOutcome out;
  out.index = index.name;
  out.id = op.id;
  const Doc* existing = current(index, op.id);
  const bool live = existing != nullptr && !existing->deleted;
  if (auto failed = failed_condition(existing, op)) {
    out.error = version_conflict(op.id, *failed, index.name, index.uuid);
    return out;
  }
  // Deleting a missing document still takes a sequence number and leaves a tombstone.
  Doc tombstone;
  tombstone.deleted = true;
  tombstone.deleted_at_ms = now_millis();
  tombstone.seq_no = index.next_seq_no++;
  tombstone.primary_term = index.primary_term;
  tombstone.version = next_version(existing, op);
  index.docs[op.id] = tombstone;
  index.dirty.insert(op.id);
  out.result = live ? "deleted" : "not_found";
  out.status = live ? 200 : 404;
  out.version = tombstone.version;
  out.seq_no = tombstone.seq_no;
  out.primary_term = tombstone.primary_term;
  out.shards_total = shards_total(index);
  out.shards_successful = 1;
  return out;
}

}  // namespace eslease::esemu
