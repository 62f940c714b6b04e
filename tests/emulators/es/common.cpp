#include <charconv>

#include "common/text.h"
#include "emulators/es/handlers.h"

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

ApiResponse simple_error_reply(int status, const std::string& message, bool with_status) {
  json body = {{"error", message}};
  if (with_status) body["status"] = status;
  return json_reply(status, body);
}

std::variant<json, EsError> parse_body(const std::string& body, bool document_source) {
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    int line = 1;
    std::size_t line_start = 0;
    std::size_t at = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, body.size());
    for (std::size_t i = 0; i < at; ++i) {
      if (body[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    std::string where = "[" + std::to_string(line) + ":" + std::to_string(at - line_start + 1) + "] ";
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

std::variant<RefreshPolicy, EsError> refresh_policy(const Params& params) {
  auto raw = params.get("refresh");
  if (!raw || *raw == "false") return RefreshPolicy::kNone;
  if (raw->empty() || *raw == "true") return RefreshPolicy::kImmediate;
  if (*raw == "wait_for") return RefreshPolicy::kWaitFor;
  return illegal_argument("Unknown value for refresh: [" + *raw + "].");
}

std::optional<EsError> read_cas_params(const Params& params, std::int64_t& seq_no, std::int64_t& primary_term,
                                       std::vector<std::string>& validation) {
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
  if (seq_no != kUnassignedSeqNo && primary_term == kUnassignedPrimaryTerm) {
    validation.push_back("ifSeqNo is set, but primary term is [0]");
  }
  if (seq_no == kUnassignedSeqNo && primary_term != kUnassignedPrimaryTerm) {
    validation.push_back("ifSeqNo is unassigned, but primary term is [" + std::to_string(primary_term) + "]");
  }
  if (params.has("version")) {
    validation.push_back(
        "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and "
        "`if_primary_term` instead");
  }
  return std::nullopt;
}

std::optional<std::string> check_id(const std::string& id) {
  if (id.size() > 512) {
    return "id [" + id +
           "] is too long, must be no longer than 512 bytes but was: " + std::to_string(id.size());
  }
  return std::nullopt;
}

}  // namespace eslease::esemu
