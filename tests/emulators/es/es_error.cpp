#include "emulators/es/es_error.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

json EsError::to_json() const {
  json out = {{"type", type}, {"reason", reason}};
  for (const auto& [key, value] : metadata.items()) out[key] = value;
  if (caused_by) out["caused_by"] = caused_by->to_json();
  return out;
}

json EsError::body() const {
  if (type.empty()) {
    json simple = {{"error", reason}};
    if (status_in_body) simple["status"] = status;
    return simple;
  }
  // Elasticsearch reports the exception itself as root cause unless it only wraps another.
  json root = {{"type", type}, {"reason", reason}};
  for (const auto& [key, value] : metadata.items()) root[key] = value;
  return {{"error",
           [&] {
             json e = to_json();
             json inner;
             inner["root_cause"] = json::array({root});
             if (!root_causes.empty()) {
               inner["root_cause"] = json::array();
               for (const auto& cause : root_causes) inner["root_cause"].push_back(cause.to_json());
             }
             for (const auto& [key, value] : e.items()) inner[key] = value;
             return inner;
           }()},
          {"status", status}};
}

EsError make_es_error(int status, std::string type, std::string reason, json metadata) {
  EsError e;
  e.status = status;
  e.type = std::move(type);
  e.reason = std::move(reason);
  e.metadata = std::move(metadata);
  return e;
}

EsError validation_error(const std::vector<std::string>& messages) {
  std::string reason = "Validation Failed: ";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    reason += std::to_string(i + 1) + ": " + messages[i] + ";";
  }
  return make_es_error(400, "action_request_validation_exception", reason);
}

EsError illegal_argument(std::string reason) {
  return make_es_error(400, "illegal_argument_exception", std::move(reason));
}

EsError parse_error(std::string reason) {
  return make_es_error(400, "parse_exception", std::move(reason));
}

EsError index_not_found(const std::string& index) {
  return make_es_error(404, "index_not_found_exception", "no such index [" + index + "]",
                       {{"resource.type", "index_or_alias"},
                        {"resource.id", index},
                        {"index_uuid", "_na_"},
                        {"index", index}});
}

EsError document_error(int status, std::string type, std::string reason, const std::string& index,
                       const std::string& index_uuid) {
  return make_es_error(status, std::move(type), std::move(reason),
                       {{"index_uuid", index_uuid}, {"shard", "0"}, {"index", index}});
}

EsError version_conflict(const std::string& id, const std::string& explanation, const std::string& index,
                         const std::string& index_uuid) {
  return document_error(409, "version_conflict_engine_exception",
                        "[" + id + "]: version conflict, " + explanation, index, index_uuid);
}

EsError emulator_limitation(const std::string& what) {
  return illegal_argument("es-emulator does not support " + what);
}

EsError rest_error(int status, std::string reason) {
  return make_es_error(status, "", std::move(reason));
}

EsError no_handler(const std::string& uri, const std::string& method) {
  EsError e = rest_error(400, "no handler found for uri [" + uri + "] and method [" + method + "]");
  e.status_in_body = false;
  return e;
}

}  // namespace eslease::esemu
