#include <algorithm>
#include <charconv>

#include "common/text.h"
#include "emulators/es/handlers.h"
#include "emulators/es/json_positions.h"
#include "emulators/es/mapping.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

std::vector<std::pair<std::string, std::string>> http_query_pairs(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t start = 0;
  while (start < query.size()) {
    auto amp = query.find('&', start);
    std::string_view part =
        query.substr(start, amp == std::string_view::npos ? std::string_view::npos : amp - start);
    if (!part.empty()) {
      auto eq = part.find('=');
      std::string_view key = part.substr(0, eq);
      std::string_view value = eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
      auto k = percent_decode(key, true);
      auto v = percent_decode(value, true);
      out.emplace_back(k ? *k : std::string(key), v ? *v : std::string(value));
    }
    if (amp == std::string_view::npos) break;
    start = amp + 1;
  }
  return out;
}

std::optional<std::string> Params::get(const std::string& name) const {
  std::optional<std::string> found;
  for (const auto& [key, value] : items_) {
    if (key == name) found = value;  // the last occurrence wins
  }
  return found;
}

std::variant<std::optional<long long>, EsError> Params::as_long(const std::string& name) const {
  auto raw = get(name);
  if (!raw) return std::optional<long long>();
  long long v = 0;
  auto [ptr, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), v);
  if (raw->empty() || ec != std::errc() || ptr != raw->data() + raw->size()) {
    return illegal_argument("Failed to parse long parameter [" + name + "] with value [" + *raw + "]");
  }
  return std::optional<long long>(v);
}

std::variant<std::optional<int>, EsError> Params::as_int(const std::string& name) const {
  auto raw = get(name);
  if (!raw) return std::optional<int>();
  int v = 0;
  auto [ptr, ec] = std::from_chars(raw->data(), raw->data() + raw->size(), v);
  if (raw->empty() || ec != std::errc() || ptr != raw->data() + raw->size()) {
    return illegal_argument("Failed to parse int parameter [" + name + "] with value [" + *raw + "]");
  }
  return std::optional<int>(v);
}

std::variant<std::optional<bool>, EsError> Params::as_bool(const std::string& name) const {
  auto raw = get(name);
  if (!raw) return std::optional<bool>();
  if (raw->empty() || *raw == "true") return std::optional<bool>(true);
  if (*raw == "false") return std::optional<bool>(false);
  return illegal_argument("Failed to parse value [" + *raw + "] as only [true] or [false] are allowed.");
}

ApiResponse json_reply(int status, const json& body) {
  ApiResponse r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

ApiResponse error_reply(const EsError& error) {
  return json_reply(error.status, error.body());
}

std::variant<json, EsError> parse_body(const std::string& body, bool document_source) {
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    const std::size_t at = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, body.size());
    const std::string where = locate_offset(body, at);
    std::string what = e.what();
    // nlohmann's message carries its own prefix; keep the part that describes the problem.
    if (auto colon = what.find("syntax error"); colon != std::string::npos) what = what.substr(colon);
    EsError parse = make_es_error(400, "x_content_parse_exception", where + "Unexpected character: " + what);
    if (!document_source) return parse;
    EsError doc = make_es_error(400, "document_parsing_exception", where + "failed to parse");
    doc.caused_by = std::make_shared<EsError>(parse);
    return doc;
  }
}

std::string token_name(const json& value) {
  if (value.is_object()) return "START_OBJECT";
  if (value.is_array()) return "START_ARRAY";
  if (value.is_string()) return "VALUE_STRING";
  if (value.is_number()) return "VALUE_NUMBER";
  if (value.is_boolean()) return "VALUE_BOOLEAN";
  return "VALUE_NULL";
}

namespace {

// UTF-8 text cut into characters, so that an edit counts one character, not one byte.
std::vector<std::string_view> characters(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t next = i + 1;
    while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80) ++next;
    out.push_back(text.substr(i, next - i));
    i = next;
  }
  return out;
}

// Lucene's LevenshteinDistance similarity: 1 - edits / length of the longer text.
float similarity(std::string_view a, std::string_view b) {
  const auto s = characters(a);
  const auto t = characters(b);
  if (s.empty() || t.empty()) return s.size() == t.size() ? 1.0f : 0.0f;
  std::vector<std::size_t> previous(s.size() + 1), row(s.size() + 1);
  for (std::size_t i = 0; i <= s.size(); ++i) previous[i] = i;
  for (std::size_t j = 1; j <= t.size(); ++j) {
    row[0] = j;
    for (std::size_t i = 1; i <= s.size(); ++i) {
      const std::size_t cost = s[i - 1] == t[j - 1] ? 0 : 1;
      row[i] = std::min({row[i - 1] + 1, previous[i] + 1, previous[i - 1] + cost});
    }
    std::swap(previous, row);
  }
  return 1.0f - static_cast<float>(previous[s.size()]) / static_cast<float>(std::max(s.size(), t.size()));
}

// The fields UpdateRequest's parser declares: the candidates of its suggestions.
const std::vector<std::string> kUpdateFields = {"script",  "scripted_upsert", "upsert",
                                                "doc",     "doc_as_upsert",   "detect_noop",
                                                "_source", "if_seq_no",       "if_primary_term"};

}  // namespace

std::string did_you_mean(std::string_view unknown, const std::vector<std::string>& candidates) {
  std::vector<std::pair<float, std::string>> close;
  for (const auto& candidate : candidates) {
    const float score = similarity(unknown, candidate);
    if (score > 0.5f) close.emplace_back(score, candidate);
  }
  if (close.empty()) return "";
  // Closest first; equally close ones by name.
  std::stable_sort(close.begin(), close.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (close.size() == 1) return " did you mean [" + close.front().second + "]?";
  std::string list;
  for (const auto& [score, name] : close) list += (list.empty() ? "" : ", ") + name;
  return " did you mean any of [" + list + "]?";
}

std::optional<EsError> parse_update_body(const json& body, std::string_view raw, WriteOp& op, bool& has_doc,
                                         bool& has_script) {
  const std::string parser = "[UpdateRequest] ";
  if (!body.is_object()) {
    const std::size_t first = std::min(raw.find_first_not_of(" \t\r\n"), raw.size());
    return make_es_error(
        400, "x_content_parse_exception",
        locate_offset(raw, first) + parser + "Expected START_OBJECT but was: " + token_name(body));
  }
  auto failed_field = [&](const std::string& key, std::optional<EsError> cause = std::nullopt) {
    EsError e = make_es_error(400, "x_content_parse_exception",
                              locate_value(raw, key) + parser + "failed to parse field [" + key + "]");
    if (cause) e.caused_by = std::make_shared<EsError>(*cause);
    return e;
  };
  for (const auto& [key, value] : body.items()) {
    if (key == "doc" || key == "upsert") {
      if (!value.is_object()) return failed_field(key);
      if (key == "doc") {
        op.update.doc = value;
        has_doc = true;
      } else {
        op.update.upsert = value;
      }
    } else if (key == "doc_as_upsert" || key == "detect_noop" || key == "scripted_upsert") {
      if (!value.is_boolean()) return failed_field(key);
      if (key == "doc_as_upsert") op.update.doc_as_upsert = value.get<bool>();
      if (key == "detect_noop") op.update.detect_noop = value.get<bool>();
    } else if (key == "if_seq_no" || key == "if_primary_term") {
      if (!value.is_number_integer()) return failed_field(key);
      const auto number = value.get<std::int64_t>();
      if (key == "if_seq_no") {
        if (number < 0 && number != kUnassignedSeqNo) {
          return failed_field(key, illegal_argument("sequence numbers must be non negative. got [" +
                                                    std::to_string(number) + "]."));
        }
        op.if_seq_no = number;
      } else {
        if (number < 0) {
          return failed_field(key, illegal_argument("primary term must be non negative. got [" +
                                                    std::to_string(number) + "]"));
        }
        op.if_primary_term = number;
      }
    } else if (key == "script") {
      has_script = true;
    } else if (key == "_source") {
      op.update.fetch_source = value.is_boolean() ? value.get<bool>() : true;
    } else {
      return make_es_error(
          400, "x_content_parse_exception",
          locate_key(raw, key) + parser + "unknown field [" + key + "]" + did_you_mean(key, kUpdateFields));
    }
  }
  return std::nullopt;
}

std::variant<RefreshPolicy, EsError> refresh_policy(const Params& params) {
  auto raw = params.get("refresh");
  if (!raw || *raw == "false") return RefreshPolicy::kNone;
  if (raw->empty() || *raw == "true") return RefreshPolicy::kImmediate;
  if (*raw == "wait_for") return RefreshPolicy::kWaitFor;
  return illegal_argument("Unknown value for refresh: [" + *raw + "].");
}

std::optional<EsError> read_cas_params(const Params& params, std::int64_t& seq_no,
                                       std::int64_t& primary_term) {
  auto s = params.as_long("if_seq_no");
  if (auto* err = std::get_if<EsError>(&s)) return *err;
  auto t = params.as_long("if_primary_term");
  if (auto* err = std::get_if<EsError>(&t)) return *err;
  auto seq = std::get<std::optional<long long>>(s);
  auto term = std::get<std::optional<long long>>(t);
  if (seq && *seq < 0 && *seq != kUnassignedSeqNo) {
    return illegal_argument("sequence numbers must be non negative. got [" + std::to_string(*seq) + "].");
  }
  if (term && *term < 0) {
    return illegal_argument("primary term must be non negative. got [" + std::to_string(*term) + "]");
  }
  seq_no = seq.value_or(kUnassignedSeqNo);
  primary_term = term.value_or(kUnassignedPrimaryTerm);
  return std::nullopt;
}

std::optional<EsError> parse_version_type(const std::string& text, VersionType& type) {
  if (text == "internal") {
    type = VersionType::kInternal;
  } else if (text == "external" || text == "external_gt") {
    type = VersionType::kExternal;
  } else if (text == "external_gte") {
    type = VersionType::kExternalGte;
  } else {
    return illegal_argument("No version type match [" + text + "]");
  }
  return std::nullopt;
}

std::optional<EsError> read_version_params(const Params& params, WriteOp& op) {
  auto version = params.as_long("version");
  if (auto* err = std::get_if<EsError>(&version)) return *err;
  op.version = std::get<std::optional<long long>>(version).value_or(kMatchAnyVersion);
  if (auto type = params.get("version_type")) return parse_version_type(*type, op.version_type);
  return std::nullopt;
}

namespace {

const char* version_type_name(VersionType type) {
  switch (type) {
    case VersionType::kInternal:
      return "INTERNAL";
    case VersionType::kExternal:
      return "EXTERNAL";
    case VersionType::kExternalGte:
      return "EXTERNAL_GTE";
  }
  return "";
}

bool explicit_version(std::int64_t version) {
  return version != kMatchAnyVersion && version != kMatchDeletedVersion;
}

}  // namespace

void check_versioning(const WriteOp& op, std::vector<std::string>& validation) {
  const bool internal = op.version_type == VersionType::kInternal;
  const bool valid = internal ? op.version > 0 || !explicit_version(op.version) : op.version >= 0;
  if (!valid) {
    validation.push_back("illegal version value [" + std::to_string(op.version) + "] for version type [" +
                         version_type_name(op.version_type) + "]");
  }
  if (internal && explicit_version(op.version)) {
    validation.push_back(
        "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and "
        "`if_primary_term` instead");
  }
  if (op.if_seq_no != kUnassignedSeqNo && (!internal || op.version != kMatchAnyVersion)) {
    validation.push_back("compare and write operations can not use versioning");
  }
  check_cas_pair(op.if_seq_no, op.if_primary_term, validation);
}

void check_index_request(const WriteOp& op, bool create, bool has_id, std::vector<std::string>& validation) {
  const bool internal = op.version_type == VersionType::kInternal;
  if (create) {
    if (!internal) {
      validation.push_back("create operations only support internal versioning. use index instead");
      return;
    }
    if (explicit_version(op.version)) {
      validation.push_back("create operations do not support explicit versions. use index instead");
      return;
    }
    if (op.if_seq_no != kUnassignedSeqNo || op.if_primary_term != kUnassignedPrimaryTerm) {
      validation.push_back("create operations do not support compare and set. use index instead");
      return;
    }
  }
  if (!has_id && (!internal || explicit_version(op.version))) {
    validation.push_back("an id must be provided if version type or value are set");
  }
  check_versioning(op, validation);
  if (auto too_long = check_id(op.id)) validation.push_back(*too_long);
}

void check_cas_pair(std::int64_t seq_no, std::int64_t primary_term, std::vector<std::string>& validation) {
  if (seq_no != kUnassignedSeqNo && primary_term == kUnassignedPrimaryTerm) {
    validation.push_back("ifSeqNo is set, but primary term is [0]");
  }
  if (seq_no == kUnassignedSeqNo && primary_term != kUnassignedPrimaryTerm) {
    validation.push_back("ifSeqNo is unassigned, but primary term is [" + std::to_string(primary_term) + "]");
  }
}

void check_update(const WriteOp& op, int retry_on_conflict, bool has_doc, bool has_script,
                  std::vector<std::string>& validation) {
  check_cas_pair(op.if_seq_no, op.if_primary_term, validation);
  if (op.if_seq_no != kUnassignedSeqNo) {
    if (retry_on_conflict > 0) validation.push_back("compare and write operations can not be retried");
    if (op.update.doc_as_upsert)
      validation.push_back("compare and write operations can not be used with upsert");
    if (op.update.upsert)
      validation.push_back("upsert requests don't support `if_seq_no` and `if_primary_term`");
  }
  if (!has_doc && !has_script) validation.push_back("script or doc is missing");
}

std::optional<std::string> check_id(const std::string& id) {
  if (id.size() > 512) {
    return "id [" + id +
           "] is too long, must be no longer than 512 bytes but was: " + std::to_string(id.size());
  }
  return std::nullopt;
}

}  // namespace eslease::esemu
