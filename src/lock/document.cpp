#include "lock/document.h"

#include <array>
#include <limits>
#include <utility>

#include "common/json_text.h"
#include "common/text.h"

namespace eslease::lock {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<const char*, const char*>, 19> kFields{{
    {"lock", "keyword"},
    {"lease", "keyword"},
    {"leaseUID", "keyword"},
    {"holder", "keyword"},
    {"holderUID", "keyword"},
    {"node", "keyword"},
    {"priority", "keyword"},
    {"acquiredAt", "date"},
    {"renewedAt", "date"},
    {"expiresAt", "date"},
    {"ttlMillis", "long"},
    {"fencingToken", "long"},
    {"transitions", "long"},
    {"writer", "keyword"},
    // Lock shapes (kFirstShapeField on). Whole numbers are long, as Elasticsearch's dynamic mapping maps
    // them.
    {"slot", "long"},
    {"capacity", "long"},
    {"access", "keyword"},
    {"grant", "keyword"},
    {"grantDocs", "keyword"},
}};

constexpr std::size_t kFirstShapeField = 14;

Error malformed(const std::string& field) {
  return make_error(ErrorCode::kProtocol, "lock document has a missing or malformed field '" + field + "'");
}

Result<std::string> string_at(const json& source, const char* field, bool required) {
  auto it = source.find(field);
  if (it == source.end() || it->is_null()) {
    if (required) return malformed(field);
    return std::string();
  }
  if (!it->is_string()) return malformed(field);
  return it->get<std::string>();
}

// An integer field from `low` to `high`. A missing one is malformed unless `absent` stands for
// it (a field lock shapes added).
Result<std::int64_t> int_at(const json& source, const char* field, std::int64_t low = 0,
                            std::int64_t high = std::numeric_limits<std::int64_t>::max(),
                            std::optional<std::int64_t> absent = std::nullopt) {
  auto it = source.find(field);
  if (absent && (it == source.end() || it->is_null())) return *absent;
  if (it == source.end() || !it->is_number_integer()) return malformed(field);
  const auto value = it->get<std::int64_t>();
  if (value < low || value > high) return malformed(field);
  return value;
}

Result<WallTime> time_at(const json& source, const char* field) {
  auto text = string_at(source, field, true);
  if (!text.ok()) return text.error();
  auto parsed = parse_rfc3339(*text);
  if (!parsed) return malformed(field);
  return to_millis(*parsed);
}

}  // namespace

std::string slot_document_id(const std::string& lock_id, std::int64_t slot) {
  return slot == 0 ? lock_id : lock_id + "#" + std::to_string(slot);
}

std::string document_id(const LockDocument& doc) {
  return slot_document_id(doc.lock, doc.slot);
}

WallTime to_millis(WallTime t) {
  return std::chrono::floor<std::chrono::milliseconds>(t);
}

es::Source source_of(const LockDocument& doc) {
  // Members in name order, as a JSON object of the same document would print them.
  json_text::ObjectWriter out;
  out.add("access", to_string(doc.access))
      .add("acquiredAt", format_rfc3339_millis(doc.acquired_at))
      .add("capacity", doc.capacity)
      .add("expiresAt", format_rfc3339_millis(doc.expires_at))
      .add("fencingToken", doc.fencing_token);
  if (!doc.grant.empty()) out.add("grant", doc.grant).add("grantDocs", doc.grant_docs);
  out.add("holder", doc.holder)
      .add("holderUID", doc.holder_uid)
      .add("lease", doc.lease)
      .add("leaseUID", doc.lease_uid)
      .add("lock", doc.lock)
      .add("node", doc.node)
      .add("priority", doc.priority)
      .add("renewedAt", format_rfc3339_millis(doc.renewed_at))
      .add("slot", doc.slot)
      .add("transitions", doc.transitions)
      .add("ttlMillis", doc.ttl_millis)
      .add("writer", doc.writer);
  return es::Source::from_text(out.finish());
}

Result<LockDocument> parse_lock_document(const json& source) {
  if (!source.is_object()) return make_error(ErrorCode::kProtocol, "lock document is not a JSON object");
  LockDocument doc;
  // Field by field; the first missing or malformed one is the error.
  std::optional<Error> error;
  const auto take = [&error](auto parsed, auto& target) {
    if (error) return;
    if (parsed.ok()) {
      target = std::move(*parsed);
    } else {
      error = parsed.error();
    }
  };
  take(string_at(source, "lock", true), doc.lock);
  take(string_at(source, "lease", false), doc.lease);
  take(string_at(source, "leaseUID", true), doc.lease_uid);
  take(string_at(source, "holder", true), doc.holder);
  take(string_at(source, "holderUID", false), doc.holder_uid);
  take(string_at(source, "node", false), doc.node);
  take(string_at(source, "priority", false), doc.priority);
  take(string_at(source, "writer", false), doc.writer);
  take(time_at(source, "acquiredAt"), doc.acquired_at);
  take(time_at(source, "renewedAt"), doc.renewed_at);
  take(time_at(source, "expiresAt"), doc.expires_at);
  take(int_at(source, "ttlMillis"), doc.ttl_millis);
  take(int_at(source, "fencingToken"), doc.fencing_token);
  take(int_at(source, "transitions"), doc.transitions);
  if (error) return *error;
  if (doc.ttl_millis <= 0) return malformed("ttlMillis");
  // The shape fields, absent from documents written before shapes existed.
  std::string access;
  take(int_at(source, "capacity", 1, kMaxCapacity, doc.capacity), doc.capacity);
  take(int_at(source, "slot", 0, doc.capacity - 1, doc.slot), doc.slot);
  take(string_at(source, "access", false), access);
  if (error) return *error;
  if (const std::optional<Access> parsed = api::parse_access(access)) {
    doc.access = *parsed;
  } else if (!access.empty()) {
    return malformed("access");
  }
  take(string_at(source, "grant", false), doc.grant);
  if (error) return *error;
  if (auto it = source.find("grantDocs"); it != source.end() && !it->is_null()) {
    if (!it->is_array()) return malformed("grantDocs");
    for (const json& id : *it) {
      if (!id.is_string()) return malformed("grantDocs");
      doc.grant_docs.push_back(id.get<std::string>());
    }
  }
  if (doc.grant.empty() != doc.grant_docs.empty())
    return malformed(doc.grant.empty() ? "grant" : "grantDocs");
  return doc;
}

Result<std::int64_t> fencing_token_of(const es::Version& version, std::int64_t epoch) {
  constexpr std::int64_t kMaxSeqNo = 0xFFFFFFFFLL;
  constexpr std::int64_t kMaxTerm = 0xFFFFLL;
  if (version.seq_no < 0 || version.seq_no > kMaxSeqNo || version.primary_term < 1 ||
      version.primary_term > kMaxTerm || epoch < 0 || epoch > kMaxEpoch) {
    return make_error(ErrorCode::kProtocol, "version (seq_no " + std::to_string(version.seq_no) +
                                                ", primary_term " + std::to_string(version.primary_term) +
                                                ") of epoch " + std::to_string(epoch) +
                                                " does not fit a 64-bit fencing token");
  }
  return epoch_base(epoch) | (version.primary_term << 32) | version.seq_no;
}

Result<LockState> make_state(LockDocument doc, const es::Version& version) {
  constexpr std::int64_t kPairBits = epoch_base(1) - 1;
  LockState state;
  if ((doc.fencing_token & kPairBits) != 0) {
    state.token = doc.fencing_token;  // written by a renewal: the grant's whole token
  } else {
    auto token = fencing_token_of(version, epoch_of(doc.fencing_token));
    if (!token.ok()) return token.error();
    state.token = *token;
  }
  state.doc = std::move(doc);
  state.version = version;
  return state;
}

bool same_grant(const LockDocument& doc, const LockDocument& grant) {
  return doc.lease_uid == grant.lease_uid && doc.acquired_at == grant.acquired_at && doc.lock == grant.lock &&
         doc.slot == grant.slot && doc.grant == grant.grant;
}

bool same_write(const LockDocument& doc, const LockDocument& written) {
  return same_grant(doc, written) && doc.writer == written.writer && doc.renewed_at == written.renewed_at &&
         doc.ttl_millis == written.ttl_millis;
}

json index_definition() {
  json properties = json::object();
  for (const auto& [name, type] : kFields) properties[name] = json{{"type", type}};
  return json{{"settings", {{"number_of_shards", 1}}},
              {"mappings", {{"dynamic", "strict"}, {"properties", properties}}}};
}

MappingCheck check_mapping(const json& mappings) {
  const json no_fields = json::object();
  const bool has_properties =
      mappings.is_object() && mappings.contains("properties") && mappings["properties"].is_object();
  const json& properties = has_properties ? mappings["properties"] : no_fields;
  const bool strict = mappings.is_object() && mappings.value("dynamic", "") == "strict";
  MappingCheck check;
  auto worse = [&](MappingFit fit, std::string problem) {
    if (fit <= check.fit) return;
    check.fit = fit;
    check.problem = std::move(problem);
  };
  bool lacks_older_fields = false;
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    const auto& [name, type] = kFields[i];
    auto it = properties.find(name);
    if (it == properties.end()) {
      check.missing[name] = json{{"type", type}};
      lacks_older_fields = lacks_older_fields || i < kFirstShapeField;
      worse(MappingFit::kLacksFields, std::string("the lock index does not map field '") + name + "'");
      continue;
    }
    const std::string mapped = it->is_object() ? it->value("type", "object") : "";
    if (mapped == type) continue;
    if (!strict && mapped == "text" && std::string(type) == "keyword") {
      worse(MappingFit::kDynamic, std::string("the lock index maps field '") + name +
                                      "' as text, as a write that created the index maps it");
      continue;
    }
    worse(MappingFit::kConflicts, std::string("the lock index maps field '") + name + "' as " +
                                      (mapped.empty() ? "something else" : mapped) + " (want type " + type +
                                      "); use another index or recreate it");
  }
  check.lacks_only_shape_fields = check.fit == MappingFit::kLacksFields && !lacks_older_fields;
  return check;
}

}  // namespace eslease::lock
