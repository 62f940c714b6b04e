// POST /_bulk and /{index}/_bulk: NDJSON actions executed in order under one store lock,
// with per-item results. Request-level problems (framing, malformed action lines,
// validation) reject the whole request with 400, as BulkRequestParser and
// BulkRequest.validate do; document-level failures are per-item errors.
#include <chrono>

#include "emulators/es/handlers.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {

struct BulkItem {
  std::string action;  // index, create, update, delete
  WriteOp op;
  bool has_id = false;                 // the action line named an _id, perhaps an empty one
  std::optional<EsError> early_error;  // fails without reaching the store
  std::optional<int> op_position;      // index into the executed ops
};

json item_json(const BulkItem& item, const WriteOutcome* outcome) {
  const EsError* error =
      item.early_error ? &*item.early_error : (outcome && outcome->error ? &*outcome->error : nullptr);
  if (error != nullptr) {
    json id = outcome && !outcome->id.empty() ? json(outcome->id) : (item.has_id ? json(item.op.id) : json());
    return {
        {item.action,
         {{"_index", item.op.index}, {"_id", id}, {"status", error->status}, {"error", error->to_json()}}}};
  }
  json body = outcome->to_json();
  body["status"] = outcome->status;
  return {{item.action, body}};
}

}  // namespace

ApiResponse handle_bulk(Call& call) {
  const auto start = std::chrono::steady_clock::now();
  auto refresh = refresh_policy(call.params);
  if (auto* err = std::get_if<EsError>(&refresh)) return error_reply(*err);
  const std::string& body = call.request.body;
  if (!body.empty() && body.back() != '\n') {
    return error_reply(illegal_argument("The bulk request must be terminated by a newline [\\n]"));
  }
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < body.size()) {
    auto nl = body.find('\n', pos);
    lines.push_back(body.substr(pos, nl - pos));
    pos = nl + 1;
  }

  std::vector<BulkItem> items;
  std::vector<std::string> validation;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line_no = std::to_string(i + 1);
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = parse_body(lines[i], false);
    if (auto* err = std::get_if<EsError>(&parsed)) return error_reply(*err);
    const json& action_line = std::get<json>(parsed);
    // BulkRequestParser's token-by-token expectations, in its order and words.
    auto malformed = [&](const std::string& what) {
      return error_reply(illegal_argument("Malformed action/metadata line [" + line_no + "], " + what));
    };
    if (!action_line.is_object()) {
      return malformed("expected START_OBJECT but found [" + token_name(action_line) + "]");
    }
    if (action_line.empty()) return malformed("expected FIELD_NAME but found [END_OBJECT]");
    BulkItem item;
    item.action = action_line.begin().key();
    const json& meta = action_line.begin().value();
    if (item.action != "index" && item.action != "create" && item.action != "update" &&
        item.action != "delete") {
      return malformed("expected field [create], [delete], [index] or [update] but found [" + item.action +
                       "]");
    }
    if (!meta.is_object()) {
      return malformed("expected START_OBJECT or END_OBJECT but found [" + token_name(meta) + "]");
    }
    if (action_line.size() > 1) return malformed("expected END_OBJECT but found [FIELD_NAME]");
    WriteOp& op = item.op;
    op.index = call.index;
    int retry_on_conflict = 0;
    for (const auto& [key, value] : meta.items()) {
      if (value.is_object() || value.is_array()) {
        if (key == "dynamic_templates" || key == "_source") continue;
        return error_reply(illegal_argument("Malformed action/metadata line [" + line_no +
                                            "], expected a simple value for field [" + key + "] but found [" +
                                            token_name(value) + "]"));
      }
      auto as_long = [&](long long& out) -> std::optional<EsError> {
        if (value.is_number_integer()) {
          out = value.get<long long>();
          return std::nullopt;
        }
        return illegal_argument("Malformed action/metadata line [" + line_no + "], failed to parse field [" +
                                key + "]");
      };
      if (key == "_index") {
        op.index = value.is_string() ? value.get<std::string>() : value.dump();
      } else if (key == "_id") {
        op.id = value.is_string() ? value.get<std::string>() : value.dump();
        item.has_id = !value.is_null();
      } else if (key == "if_seq_no" || key == "if_primary_term" || key == "retry_on_conflict") {
        long long v = 0;
        if (auto err = as_long(v)) return error_reply(*err);
        if (key == "if_seq_no")
          op.if_seq_no = v;
        else if (key == "if_primary_term")
          op.if_primary_term = v;
        else
          retry_on_conflict = static_cast<int>(v);
      } else if (key == "op_type") {
        if (value == "create")
          item.action = item.action == "index" ? "create" : item.action;
        else if (value != "index")
          return error_reply(
              illegal_argument("opType must be 'create' or 'index', found: [" + value.dump() + "]"));
      } else if (key == "version") {
        long long v = 0;
        if (auto err = as_long(v)) return error_reply(*err);
        op.version = v;
      } else if (key == "version_type") {
        if (auto err = parse_version_type(value.is_string() ? value.get<std::string>() : value.dump(),
                                          op.version_type)) {
          return error_reply(*err);
        }
      } else if (key != "routing" && key != "pipeline" && key != "require_alias" &&
                 key != "require_data_stream" && key != "list_executed_pipelines") {
        return error_reply(illegal_argument("Action/metadata line [" + line_no +
                                            "] contains an unknown parameter [" + key + "]"));
      }
    }
    if (item.action == "index") op.kind = item.has_id ? WriteKind::kIndex : WriteKind::kCreate;
    if (item.action == "create") op.kind = WriteKind::kCreate;
    if (item.action == "update") op.kind = WriteKind::kUpdate;
    if (item.action == "delete") op.kind = WriteKind::kDelete;

    if (item.action != "delete") {
      if (i + 1 >= lines.size()) break;  // an action without its source line is dropped
      const std::string& source_line = lines[++i];
      auto source = parse_body(source_line, item.action != "update");
      if (item.action == "update") {
        if (op.version != kMatchAnyVersion || op.version_type != VersionType::kInternal) {
          return error_reply(
              illegal_argument("Update requests do not support versioning. Please use `if_seq_no` and "
                               "`if_primary_term` instead"));
        }
        if (auto* err = std::get_if<EsError>(&source)) return error_reply(*err);
        bool has_doc = false, has_script = false;
        if (auto err = parse_update_body(std::get<json>(source), source_line, op, has_doc, has_script)) {
          return error_reply(*err);
        }
        if (has_script) {
          item.early_error =
              emulator_limitation("scripts in update requests; send a partial document in [doc] instead");
        }
        check_update(op, retry_on_conflict, has_doc, has_script, validation);
      } else if (auto* err = std::get_if<EsError>(&source)) {
        item.early_error = *err;  // the shard fails to parse this one document
      } else {
        op.source = std::get<json>(source);
        op.raw_source = source_line;
      }
    }
    if (op.index.empty()) validation.push_back("index is missing");
    if ((item.action == "update" || item.action == "delete") && op.id.empty()) {
      validation.push_back("id is missing");
    }
    if (item.action == "index" || item.action == "create") {
      check_index_request(op, item.action == "create", item.has_id, validation);
    } else {
      if (item.action == "delete") check_versioning(op, validation);
      if (auto too_long = check_id(op.id)) validation.push_back(*too_long);
    }
    // Routing refuses an empty _id for this item alone (an absent one is generated), before the
    // shard would parse its source.
    if (item.has_id && op.id.empty() && (op.kind == WriteKind::kIndex || op.kind == WriteKind::kCreate)) {
      item.early_error = illegal_argument("if _id is specified it must not be empty");
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) validation.push_back("no requests added");
  if (!validation.empty()) return error_reply(validation_error(validation));

  std::vector<WriteOp> ops;
  for (auto& item : items) {
    if (item.early_error) continue;
    item.op_position = static_cast<int>(ops.size());
    ops.push_back(item.op);
  }
  auto outcomes = call.store.write(ops, std::get<RefreshPolicy>(refresh));
  bool errors = false;
  json results = json::array();
  for (const auto& item : items) {
    const WriteOutcome* outcome = item.op_position ? &outcomes[*item.op_position] : nullptr;
    if (item.early_error || (outcome && outcome->error)) errors = true;
    results.push_back(item_json(item, outcome));
  }
  long long took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  return json_reply(200, {{"errors", errors}, {"took", took}, {"items", results}});
}

}  // namespace eslease::esemu
