// Turning Elasticsearch answers into typed results. Every function accepts any bytes: a
// malformed or truncated body becomes a kProtocol Error, never a crash.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "es/document_api.h"
#include "http/transport.h"

namespace eslease::es {

// Parses a JSON object body. kProtocol when it is not one.
Result<nlohmann::json> parse_object(std::string_view body, std::string_view op);

// The Error for a non-success answer, with Elasticsearch's error type, reason and root
// cause when the body carries them: 400 kInvalidArgument, 401 kUnauthorized, 403
// kForbidden, 404 kNotFound, 409 kConflict, 429 kTooManyRequests, 5xx kUnavailable.
Error error_from_response(const http::Response& response, std::string_view op);

// "type: reason (root cause: type: reason)" from an Elasticsearch "error" value.
std::string describe_es_error(const nlohmann::json& error);

// 200/201/404/409 answers of _create, _doc index and delete.
Result<WriteResult> parse_write(const http::Response& response, std::string_view op);
// 200/404 answers of GET _doc.
Result<GetResult> parse_get(const http::Response& response);
// The 200 answer of _bulk; `expected_items` must match the number of operations sent.
Result<BulkResult> parse_bulk(const http::Response& response, std::size_t expected_items);
Result<std::vector<SearchHit>> parse_search(const http::Response& response);

}  // namespace eslease::es
