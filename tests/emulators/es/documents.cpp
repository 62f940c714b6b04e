// Single-document APIs: index, create, get, head, _source, delete, update, mget.
#include "emulators/es/handlers.h"
#include "emulators/es/hits.h"
#include "emulators/es/query.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    auto comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// _source, _source_includes and _source_excludes parameters.
SourceFilter source_filter_from_params(const Params& params) {
  SourceFilter f;
  if (auto s = params.get("_source")) {
    if (*s == "false")
      f.enabled = false;
    else if (*s != "true" && !s->empty())
      f.includes = split_commas(*s);
  }
  if (auto s = params.get("_source_includes")) f.includes = split_commas(*s);
  if (auto s = params.get("_source_excludes")) f.excludes = split_commas(*s);
  return f;
}

json get_body(const GetOutcome& got, const std::string& id, const SourceFilter& filter) {
  json body = {{"_index", got.index}, {"_id", id}};
  if (!got.found) {
    body["found"] = false;
    return body;
  }
  body["_version"] = got.doc.version;
  body["_seq_no"] = got.doc.seq_no;
  body["_primary_term"] = got.doc.primary_term;
  body["found"] = true;
  if (filter.enabled) body["_source"] = filter_source(got.doc.source, filter);
  return body;
}

ApiResponse write_reply(const WriteOutcome& outcome) {
  if (outcome.error) return error_reply(*outcome.error);
  return json_reply(outcome.status, outcome.to_json());
}

}  // namespace

ApiResponse handle_doc_write(Call& call, WriteKind kind) {
  auto refresh = refresh_policy(call.params);
  if (auto* err = std::get_if<EsError>(&refresh)) return error_reply(*err);
  const auto op_type = call.params.get("op_type");
  if (op_type) {
    if (kind == WriteKind::kCreate && *op_type != "create") {
      return error_reply(illegal_argument("opType must be 'create', found: [" + *op_type + "]"));
    }
    if (*op_type == "create")
      kind = WriteKind::kCreate;
    else if (*op_type != "index") {
      return error_reply(illegal_argument("opType must be 'create' or 'index', found: [" + *op_type + "]"));
    }
  }
  // A request without an id gets one generated; the REST layer makes it a create unless
  // op_type says otherwise.
  const bool has_id = !call.id.empty();
  if (!has_id && !op_type) kind = WriteKind::kCreate;
  WriteOp op;
  op.kind = kind;
  op.index = call.index;
  op.id = call.id;
  if (auto err = read_cas_params(call.params, op.if_seq_no, op.if_primary_term)) return error_reply(*err);
  if (auto err = read_version_params(call.params, op)) return error_reply(*err);
  if (call.request.body.empty()) return error_reply(parse_error("request body is required"));
  auto body = parse_body(call.request.body, true);
  if (auto* err = std::get_if<EsError>(&body)) return error_reply(*err);
  op.source = std::move(std::get<json>(body));
  op.raw_source = call.request.body;
  std::vector<std::string> validation;
  check_index_request(op, kind == WriteKind::kCreate, has_id, validation);
  if (!validation.empty()) return error_reply(validation_error(validation));
  return write_reply(call.store.write({op}, std::get<RefreshPolicy>(refresh)).front());
}

ApiResponse handle_doc_get(Call& call, bool head, bool source_only) {
  auto realtime = call.params.as_bool("realtime");
  if (auto* err = std::get_if<EsError>(&realtime)) return error_reply(*err);
  auto refresh = call.params.as_bool("refresh");
  if (auto* err = std::get_if<EsError>(&refresh)) return error_reply(*err);
  if (std::get<std::optional<bool>>(refresh).value_or(false) && call.store.exists(call.index)) {
    call.store.refresh({call.index});
  }
  auto got = call.store.get(call.index, call.id, std::get<std::optional<bool>>(realtime).value_or(true));
  if (got.error) return error_reply(*got.error);
  SourceFilter filter = source_filter_from_params(call.params);
  if (source_only) {
    if (!got.found) {
      return error_reply(make_es_error(404, "resource_not_found_exception",
                                       "Document not found [" + call.index + "]/[" + call.id + "]"));
    }
    return json_reply(200, filter_source(got.doc.source, filter));
  }
  ApiResponse r = json_reply(got.found ? 200 : 404, get_body(got, call.id, filter));
  if (head) r.body.clear();
  return r;
}

ApiResponse handle_doc_delete(Call& call) {
  auto refresh = refresh_policy(call.params);
  if (auto* err = std::get_if<EsError>(&refresh)) return error_reply(*err);
  std::vector<std::string> validation;
  WriteOp op;
  op.kind = WriteKind::kDelete;
  op.index = call.index;
  op.id = call.id;
  if (auto err = read_cas_params(call.params, op.if_seq_no, op.if_primary_term)) return error_reply(*err);
  if (auto err = read_version_params(call.params, op)) return error_reply(*err);
  check_versioning(op, validation);
  if (auto too_long = check_id(op.id)) validation.push_back(*too_long);
  if (!validation.empty()) return error_reply(validation_error(validation));
  return write_reply(call.store.write({op}, std::get<RefreshPolicy>(refresh)).front());
}

ApiResponse handle_update(Call& call) {
  auto refresh = refresh_policy(call.params);
  if (auto* err = std::get_if<EsError>(&refresh)) return error_reply(*err);
  auto retries = call.params.as_int("retry_on_conflict");
  if (auto* err = std::get_if<EsError>(&retries)) return error_reply(*err);
  std::vector<std::string> validation;
  WriteOp op;
  op.kind = WriteKind::kUpdate;
  op.index = call.index;
  op.id = call.id;
  if (auto err = read_cas_params(call.params, op.if_seq_no, op.if_primary_term)) return error_reply(*err);
  if (call.request.body.empty()) return error_reply(parse_error("request body is required"));
  auto body = parse_body(call.request.body, false);
  if (auto* err = std::get_if<EsError>(&body)) return error_reply(*err);
  bool has_doc = false, has_script = false;
  if (auto err = parse_update_body(std::get<json>(body), call.request.body, op, has_doc, has_script))
    return error_reply(*err);
  if (has_script) {
    return error_reply(
        emulator_limitation("scripts in update requests; send a partial document in [doc] instead"));
  }
  if (auto s = call.params.get("_source")) op.update.fetch_source = *s != "false";
  check_update(op, std::get<std::optional<int>>(retries).value_or(0), has_doc, has_script, validation);
  if (auto too_long = check_id(op.id)) validation.push_back(*too_long);
  if (!validation.empty()) return error_reply(validation_error(validation));
  return write_reply(call.store.write({op}, std::get<RefreshPolicy>(refresh)).front());
}

ApiResponse handle_mget(Call& call) {
  if (call.request.body.empty()) return error_reply(parse_error("request body is required"));
  auto parsed = parse_body(call.request.body, false);
  if (auto* err = std::get_if<EsError>(&parsed)) return error_reply(*err);
  const json& body = std::get<json>(parsed);
  auto realtime = call.params.as_bool("realtime");
  if (auto* err = std::get_if<EsError>(&realtime)) return error_reply(*err);
  const bool rt = std::get<std::optional<bool>>(realtime).value_or(true);
  std::vector<std::pair<std::string, std::string>> wanted;  // index, id
  std::vector<std::string> validation;
  if (!body.is_object()) return error_reply(parse_error("Failed to derive xcontent"));
  for (const auto& [key, value] : body.items()) {
    if (key == "docs" && value.is_array()) {
      for (const auto& d : value) {
        if (!d.is_object())
          return error_reply(illegal_argument("docs array element should include an object"));
        std::string index = d.value("_index", call.index);
        json id = d.contains("_id") ? d["_id"] : json();
        if (index.empty()) validation.push_back("index is missing for doc " + std::to_string(wanted.size()));
        if (!id.is_string()) validation.push_back("id is missing for doc " + std::to_string(wanted.size()));
        wanted.emplace_back(index, id.is_string() ? id.get<std::string>() : "");
      }
    } else if (key == "ids" && value.is_array()) {
      for (const auto& id : value) {
        if (call.index.empty())
          validation.push_back("index is missing for doc " + std::to_string(wanted.size()));
        wanted.emplace_back(call.index, id.is_string() ? id.get<std::string>() : id.dump());
      }
    } else {
      return error_reply(parse_error("unknown key [" + key + "] for a " +
                                     (value.is_array() ? "START_ARRAY" : "VALUE") +
                                     ", expected [docs] or [ids]"));
    }
  }
  if (wanted.empty()) validation.push_back("no documents to get");
  if (!validation.empty()) return error_reply(validation_error(validation));
  SourceFilter filter = source_filter_from_params(call.params);
  json docs = json::array();
  for (const auto& [index, id] : wanted) {
    auto got = call.store.get(index, id, rt);
    if (got.error) {
      docs.push_back({{"_index", index}, {"_id", id}, {"error", got.error->to_json()}});
    } else {
      docs.push_back(get_body(got, id, filter));
    }
  }
  return json_reply(200, {{"docs", docs}});
}

}  // namespace eslease::esemu
