#include "es/responses.h"

#include <algorithm>

#include "es/bulk_answer.h"

namespace eslease::es {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxReasonBytes = 512;

std::optional<std::int64_t> int_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::string string_field(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

std::string clip(std::string text) {
  if (text.size() > kMaxReasonBytes) {
    text.resize(kMaxReasonBytes);
    text += "...";
  }
  return text;
}

std::string error_type(const json& body) {
  if (!body.is_object()) return {};
  auto it = body.find("error");
  if (it == body.end() || !it->is_object()) return {};
  return string_field(*it, "type");
}

Result<Version> version_of(const json& object, std::string_view op) {
  auto seq_no = int_field(object, "_seq_no");
  auto primary_term = int_field(object, "_primary_term");
  if (!seq_no || !primary_term || *seq_no < 0 || *primary_term < 1) {
    return make_error(ErrorCode::kProtocol,
                      "Elasticsearch " + std::string(op) + " answer lacks a valid _seq_no/_primary_term");
  }
  return Version{*seq_no, *primary_term};
}

}  // namespace

Result<json> parse_object(std::string_view body, std::string_view op) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return make_error(ErrorCode::kProtocol,
                      "Elasticsearch " + std::string(op) + " answered with a body that is not a JSON object");
  }
  return parsed;
}

std::string describe_es_error(const json& error) {
  if (error.is_string()) return clip(error.get<std::string>());
  if (!error.is_object()) return "no error details";
  std::string out = string_field(error, "type");
  const std::string reason = string_field(error, "reason");
  if (!reason.empty()) out += (out.empty() ? "" : ": ") + reason;
  auto causes = error.find("root_cause");
  if (causes != error.end() && causes->is_array() && !causes->empty() && (*causes)[0].is_object()) {
    const json& cause = (*causes)[0];
    const std::string cause_type = string_field(cause, "type");
    const std::string cause_reason = string_field(cause, "reason");
    if (cause_type != string_field(error, "type") || cause_reason != reason) {
      out += " (root cause: " + cause_type + (cause_reason.empty() ? "" : ": " + cause_reason) + ")";
    }
  }
  return clip(out.empty() ? std::string("no error details") : out);
}

Error error_from_response(const http::Response& response, std::string_view op) {
  json body = json::parse(response.body, nullptr, false);
  std::string details;
  if (!body.is_discarded() && body.is_object() && body.contains("error")) {
    details = describe_es_error(body["error"]);
  } else if (!response.body.empty()) {
    details = "unexpected body: " + clip(response.body);
  } else {
    details = "empty body";
  }
  const int status = response.status;
  std::string message;
  if (status == 401) {
    message = "Elasticsearch rejected the credentials (" + details +
              "); check the username/password file, API key file or bearer token file";
  } else if (status == 403) {
    message = "Elasticsearch refused " + std::string(op) + " for these credentials (" + details + ")";
  } else {
    message = "Elasticsearch " + std::string(op) + " failed: " + details;
  }
  Error error = make_error(error_code_for_http_status(status), std::move(message), status);
  if (auto retry_after = response.header("retry-after")) {
    char* end = nullptr;
    const long seconds = std::strtol(retry_after->c_str(), &end, 10);
    if (end != retry_after->c_str() && seconds >= 0 && seconds < 3600) {
      error.retry_after = std::chrono::seconds(seconds);
    }
  }
  return error;
}

Result<WriteResult> parse_write(const http::Response& response, std::string_view op) {
  const int status = response.status;
  if (status != 200 && status != 201 && status != 404 && status != 409)
    return error_from_response(response, op);
  auto body = parse_object(response.body, op);
  if (!body.ok()) return body.error();
  WriteResult out;
  out.result = string_field(*body, "result");
  if (status == 409) {
    out.status = WriteStatus::kConflict;
    if (error_type(*body) != "version_conflict_engine_exception") return error_from_response(response, op);
    out.conflict_reason = describe_es_error((*body)["error"]);
    return out;
  }
  if (status == 404) {
    // A delete of a missing document answers 404 with result "not_found"; anything else
    // (a missing index on a write) is an error the caller must see.
    if (out.result != "not_found") return error_from_response(response, op);
    out.status = WriteStatus::kNotFound;
    if (auto version = version_of(*body, op); version.ok()) out.version = *version;
    return out;
  }
  auto version = version_of(*body, op);
  if (!version.ok()) return version.error();
  out.status = WriteStatus::kApplied;
  out.version = *version;
  out.doc_version = int_field(*body, "_version").value_or(0);
  return out;
}

Result<GetResult> parse_get(const http::Response& response) {
  if (response.status != 200 && response.status != 404) return error_from_response(response, "get");
  auto body = parse_object(response.body, "get");
  if (!body.ok()) return body.error();
  GetResult out;
  if (response.status == 404) {
    auto found = body->find("found");
    const bool missing_doc = found != body->end() && found->is_boolean() && !found->get<bool>();
    if (!missing_doc && error_type(*body) != "index_not_found_exception") {
      return error_from_response(response, "get");
    }
    return out;
  }
  auto found = body->find("found");
  auto source = body->find("_source");
  if (found == body->end() || !found->is_boolean() || !found->get<bool>() || source == body->end() ||
      !source->is_object()) {
    return make_error(ErrorCode::kProtocol, "Elasticsearch get answer lacks found/_source");
  }
  auto version = version_of(*body, "get");
  if (!version.ok()) return version.error();
  out.found = true;
  out.source = std::move(*source);
  out.version = *version;
  return out;
}

Result<BulkResult> parse_bulk(const http::Response& response, std::size_t expected_items) {
  if (response.status != 200) return error_from_response(response, "bulk");
  if (std::optional<BulkResult> plain = read_plain_bulk_answer(response.body, expected_items)) return *plain;
  auto body = parse_object(response.body, "bulk");
  if (!body.ok()) return body.error();
  return bulk_result_of(*body, expected_items);
}

Result<BulkResult> bulk_result_of(const json& body, std::size_t expected_items) {
  auto items = body.find("items");
  if (items == body.end() || !items->is_array() || items->size() != expected_items) {
    return make_error(ErrorCode::kProtocol, "Elasticsearch bulk answer does not hold one item per operation");
  }
  BulkResult out;
  out.items.reserve(expected_items);
  for (const json& wrapper : *items) {
    if (!wrapper.is_object() || wrapper.size() != 1 || !wrapper.begin()->is_object()) {
      return make_error(ErrorCode::kProtocol, "Elasticsearch bulk answer holds a malformed item");
    }
    const json& item = *wrapper.begin();
    BulkItemResult result;
    result.id = string_field(item, "_id");
    const auto status = int_field(item, "status");
    if (!status) return make_error(ErrorCode::kProtocol, "Elasticsearch bulk item lacks a status");
    if (*status == 200 || *status == 201) {
      auto version = version_of(item, "bulk item");
      if (!version.ok()) return version.error();
      result.status = WriteStatus::kApplied;
      result.version = *version;
    } else if (*status == 409 && error_type(item) == "version_conflict_engine_exception") {
      result.status = WriteStatus::kConflict;
    } else if (*status == 404 && string_field(item, "result") == "not_found") {
      result.status = WriteStatus::kNotFound;
    } else {
      const std::string details =
          item.contains("error") ? describe_es_error(item["error"]) : "no error details";
      result.error = make_error(error_code_for_http_status(static_cast<int>(*status)),
                                "Elasticsearch bulk item failed: " + details, static_cast<int>(*status));
    }
    out.items.push_back(std::move(result));
  }
  return out;
}

Result<std::vector<SearchHit>> parse_search(const http::Response& response) {
  if (response.status == 404) {
    auto body = json::parse(response.body, nullptr, false);
    if (error_type(body) == "index_not_found_exception") return std::vector<SearchHit>{};
  }
  if (response.status != 200) return error_from_response(response, "search");
  auto body = parse_object(response.body, "search");
  if (!body.ok()) return body.error();
  auto hits = body->find("hits");
  if (hits == body->end() || !hits->is_object() || !hits->contains("hits") || !(*hits)["hits"].is_array()) {
    return make_error(ErrorCode::kProtocol, "Elasticsearch search answer lacks hits.hits");
  }
  std::vector<SearchHit> out;
  for (const json& hit : (*hits)["hits"]) {
    if (!hit.is_object() || !hit.contains("_id") || !hit["_id"].is_string() || !hit.contains("_source") ||
        !hit["_source"].is_object()) {
      return make_error(ErrorCode::kProtocol, "Elasticsearch search answer holds a malformed hit");
    }
    auto version = version_of(hit, "search hit");
    if (!version.ok()) return version.error();
    out.push_back(SearchHit{hit["_id"].get<std::string>(), hit["_source"], *version});
  }
  return out;
}

}  // namespace eslease::es
