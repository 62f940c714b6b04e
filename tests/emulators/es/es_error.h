// Elasticsearch's error model: an exception with a type, a reason, extra metadata fields
// and an optional cause, rendered as {"error":{"root_cause":[...],...},"status":N}. Every
// error the emulator answers is an EsError made here, returned as a value
// (std::variant<T, EsError> or std::optional<EsError>) and sent by error_reply.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace eslease::esemu {

struct EsError {
  int status = 500;
  std::string type;  // empty: an error of the REST layer itself, answered in its simple form
  std::string reason;
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();  // e.g. index, index_uuid, shard
  std::shared_ptr<EsError> caused_by;
  // Root causes when they are not this exception itself (a search phase failure reports
  // its shard failures).
  std::vector<EsError> root_causes;
  bool status_in_body = true;  // the simple form only: whether it carries "status"

  // {"type","reason",...metadata,"caused_by"}: the form used inside bulk items.
  nlohmann::ordered_json to_json() const;
  // The whole REST error body; for the REST layer's own errors the simple
  // {"error":"reason","status":N}.
  nlohmann::ordered_json body() const;
};

EsError make_es_error(int status, std::string type, std::string reason,
                      nlohmann::ordered_json metadata = nlohmann::ordered_json::object());

// "Validation Failed: 1: a;2: b;" (action_request_validation_exception, 400).
EsError validation_error(const std::vector<std::string>& messages);
EsError illegal_argument(std::string reason);
EsError parse_error(std::string reason);  // parse_exception, 400
EsError index_not_found(const std::string& index);
// Errors about one document carry the shard they happened on.
EsError document_error(int status, std::string type, std::string reason, const std::string& index,
                       const std::string& index_uuid);
EsError version_conflict(const std::string& id, const std::string& explanation, const std::string& index,
                         const std::string& index_uuid);
EsError emulator_limitation(const std::string& what);
// RestController's own answers, before any action runs: 405 and 406 as {"error","status"}.
EsError rest_error(int status, std::string reason);
// RestController's 400 for a path no handler takes: {"error"} alone.
EsError no_handler(const std::string& uri, const std::string& method);

}  // namespace eslease::esemu
