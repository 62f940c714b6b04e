// Shared pieces of the REST handlers: decoded parameters, JSON replies, and one function
// per endpoint group (indices.cpp, documents.cpp, search.cpp, bulk.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "emulators/es/api.h"
#include "emulators/es/es_error.h"
#include "emulators/es/store.h"

namespace eslease::esemu {

// Decodes "a=1&b=x%2Fy" into pairs ('+' is a space); malformed escapes are kept raw.
std::vector<std::pair<std::string, std::string>> http_query_pairs(std::string_view query);

class Params {
 public:
  explicit Params(std::vector<std::pair<std::string, std::string>> items) : items_(std::move(items)) {}
  std::optional<std::string> get(const std::string& name) const;
  bool has(const std::string& name) const { return get(name).has_value(); }
  const std::vector<std::pair<std::string, std::string>>& items() const { return items_; }

  // RestRequest.paramAsLong / paramAsInt / paramAsBoolean, with their error messages.
  std::variant<std::optional<long long>, EsError> as_long(const std::string& name) const;
  std::variant<std::optional<int>, EsError> as_int(const std::string& name) const;
  std::variant<std::optional<bool>, EsError> as_bool(const std::string& name) const;

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

struct Call {
  const ApiRequest& request;
  Params params;
  std::string index;  // decoded {index} path segment, if any
  std::string id;     // decoded {id} path segment, if any
  Store& store;
  Clock& clock;
  long long now_ms;  // the clock's wall time when the request came in
};

ApiResponse json_reply(int status, const nlohmann::ordered_json& body);
ApiResponse error_reply(const EsError& error);

// Parses a JSON body. Errors look like Elasticsearch's: x_content_parse_exception, or
// document_parsing_exception for document sources.
std::variant<nlohmann::ordered_json, EsError> parse_body(const std::string& body, bool document_source);
// The name of the token a JSON value starts with, as XContentParser reports it
// (START_OBJECT, VALUE_STRING, ...).
std::string token_name(const nlohmann::ordered_json& value);
// " did you mean [doc]?" or " did you mean any of [a, b]?" for an unknown field, worded and
// ranked as Elasticsearch's SuggestingErrorOnUnknown does; "" when no candidate is close.
std::string did_you_mean(std::string_view unknown, const std::vector<std::string>& candidates);
// An update body ({"doc", "upsert", "doc_as_upsert", ...}) into `op`, as UpdateRequest's
// parser reads it, for _update and for the update lines of _bulk. `raw` is the body's text,
// to report [line:col]. A script only sets `has_script` (the emulator runs none).
std::optional<EsError> parse_update_body(const nlohmann::ordered_json& body, std::string_view raw,
                                         WriteOp& op, bool& has_doc, bool& has_script);
std::variant<RefreshPolicy, EsError> refresh_policy(const Params& params);
// if_seq_no / if_primary_term from parameters.
std::optional<EsError> read_cas_params(const Params& params, std::int64_t& seq_no,
                                       std::int64_t& primary_term);
// `version` and `version_type` from parameters into `op` (VersionType.fromString's words for an
// unknown type); whether they may be combined is check_versioning's.
std::optional<EsError> read_version_params(const Params& params, WriteOp& op);
std::optional<EsError> parse_version_type(const std::string& text, VersionType& type);
// DocWriteRequest.validateSeqNoBasedCASParams: a version valid for its type, no internal
// version (if_seq_no replaced it), no version beside if_seq_no, and the pair complete.
void check_versioning(const WriteOp& op, std::vector<std::string>& validation);
// IndexRequest.validate (past its source checks), for index and create writes in its order:
// what a create cannot carry, an id for a versioned write, check_versioning, the id's length.
void check_index_request(const WriteOp& op, bool create, bool has_id, std::vector<std::string>& validation);
// DocWriteRequest's check of the pair once the request is complete: one without the other.
void check_cas_pair(std::int64_t seq_no, std::int64_t primary_term, std::vector<std::string>& validation);
// UpdateRequest.validate's checks of a parsed update: the pair, what conditional updates
// cannot combine with, and that there is something to apply.
void check_update(const WriteOp& op, int retry_on_conflict, bool has_doc, bool has_script,
                  std::vector<std::string>& validation);
std::optional<std::string> check_id(const std::string& id);  // a validation message or nothing

ApiResponse handle_info(Call& call);
ApiResponse handle_cluster_health(Call& call);
ApiResponse handle_index_create(Call& call);
ApiResponse handle_index_delete(Call& call);
ApiResponse handle_index_exists(Call& call);
ApiResponse handle_index_get(Call& call, bool mappings_only);
ApiResponse handle_put_mapping(Call& call);
ApiResponse handle_put_settings(Call& call);
ApiResponse handle_refresh(Call& call);

ApiResponse handle_doc_write(Call& call, WriteKind kind);  // index (with or without id) and create
ApiResponse handle_doc_get(Call& call, bool head, bool source_only);
ApiResponse handle_doc_delete(Call& call);
ApiResponse handle_update(Call& call);
ApiResponse handle_mget(Call& call);

ApiResponse handle_search(Call& call);
ApiResponse handle_count(Call& call);
ApiResponse handle_delete_by_query(Call& call);

ApiResponse handle_bulk(Call& call);

}  // namespace eslease::esemu
