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

std::vector<std::string> split_lines(const std::string& body) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < body.size()) {
    auto nl = body.find('\n', pos);
    lines.push_back(body.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

EsError malformed(const std::string& line_no, const std::string& what) {
  return illegal_argument("Malformed action/metadata line [" + line_no + "], " + what);
}

std::optional<EsError> read_long(const json& value, const std::string& line_no, const std::string& key,
                                 long long& out) {
  if (!value.is_number_integer()) return malformed(line_no, "failed to parse field [" + key + "]");
  out = value.get<long long>();
  return std::nullopt;
}

// One metadata field of an action line into `item` (retry_on_conflict, for updates, apart).
std::optional<EsError> read_metadata_field(const std::string& key, const json& value,
                                           const std::string& line_no, BulkItem& item,
                                           int& retry_on_conflict) {
  WriteOp& op = item.op;
  long long number = 0;
  if (key == "_index") {
    op.index = value.is_string() ? value.get<std::string>() : value.dump();
  } else if (key == "_id") {
    op.id = value.is_string() ? value.get<std::string>() : value.dump();
    item.has_id = !value.is_null();
  } else if (key == "if_seq_no" || key == "if_primary_term" || key == "retry_on_conflict" ||
             key == "version") {
    if (auto err = read_long(value, line_no, key, number)) return err;
    if (key == "if_seq_no") op.if_seq_no = number;
    if (key == "if_primary_term") op.if_primary_term = number;
    if (key == "retry_on_conflict") retry_on_conflict = static_cast<int>(number);
    if (key == "version") op.version = number;
  } else if (key == "op_type") {
    if (value == "create") {
      item.action = item.action == "index" ? "create" : item.action;
    } else if (value != "index") {
      return illegal_argument("opType must be 'create' or 'index', found: [" + value.dump() + "]");
    }
  } else if (key == "version_type") {
    return parse_version_type(value.is_string() ? value.get<std::string>() : value.dump(), op.version_type);
  } else if (key != "routing" && key != "pipeline" && key != "require_alias" &&
             key != "require_data_stream" && key != "list_executed_pipelines") {
    return illegal_argument("Action/metadata line [" + line_no + "] contains an unknown parameter [" + key +
                            "]");
  }
  return std::nullopt;
}

// An action line, checked token by token as BulkRequestParser reads it, in its order and words.
std::variant<BulkItem, EsError> parse_action(const std::string& line, const std::string& line_no,
                                             const std::string& default_index, int& retry_on_conflict) {
  auto parsed = parse_body(line, false);
  if (auto* err = std::get_if<EsError>(&parsed)) return *err;
  const json& action_line = std::get<json>(parsed);
  if (!action_line.is_object()) {
    return malformed(line_no, "expected START_OBJECT but found [" + token_name(action_line) + "]");
  }
  if (action_line.empty()) return malformed(line_no, "expected FIELD_NAME but found [END_OBJECT]");
  BulkItem item;
  item.action = action_line.begin().key();
  const json& meta = action_line.begin().value();
  if (item.action != "index" && item.action != "create" && item.action != "update" &&
      item.action != "delete") {
    return malformed(
        line_no, "expected field [create], [delete], [index] or [update] but found [" + item.action + "]");
  }
  if (!meta.is_object()) {
    return malformed(line_no, "expected START_OBJECT or END_OBJECT but found [" + token_name(meta) + "]");
  }
  if (action_line.size() > 1) return malformed(line_no, "expected END_OBJECT but found [FIELD_NAME]");
  item.op.index = default_index;
  for (const auto& [key, value] : meta.items()) {
    if (value.is_object() || value.is_array()) {
      if (key == "dynamic_templates" || key == "_source") continue;
      return malformed(
          line_no, "expected a simple value for field [" + key + "] but found [" + token_name(value) + "]");
    }
    if (auto err = read_metadata_field(key, value, line_no, item, retry_on_conflict)) return *err;
  }
  if (item.action == "index") item.op.kind = item.has_id ? WriteKind::kIndex : WriteKind::kCreate;
  if (item.action == "create") item.op.kind = WriteKind::kCreate;
  if (item.action == "update") item.op.kind = WriteKind::kUpdate;
  if (item.action == "delete") item.op.kind = WriteKind::kDelete;
  return item;
}

// The source line of an index, create or update. A request-level error rejects the whole
// bulk; a document that does not parse fails alone (early_error).
std::optional<EsError> read_source(BulkItem& item, const std::string& source_line, int retry_on_conflict,
                                   std::vector<std::string>& validation) {
  WriteOp& op = item.op;
  auto source = parse_body(source_line, item.action != "update");
  if (item.action != "update") {
    if (auto* err = std::get_if<EsError>(&source)) {
      item.early_error = *err;  // the shard fails to parse this one document
    } else {
      op.source = std::get<json>(source);
      op.raw_source = source_line;
    }
    return std::nullopt;
  }
  if (op.version != kMatchAnyVersion || op.version_type != VersionType::kInternal) {
    return illegal_argument(
        "Update requests do not support versioning. Please use `if_seq_no` and `if_primary_term` instead");
  }
  if (auto* err = std::get_if<EsError>(&source)) return *err;
  bool has_doc = false, has_script = false;
  if (auto err = parse_update_body(std::get<json>(source), source_line, op, has_doc, has_script)) return err;
  if (has_script) {
    item.early_error =
        emulator_limitation("scripts in update requests; send a partial document in [doc] instead");
  }
  check_update(op, retry_on_conflict, has_doc, has_script, validation);
  return std::nullopt;
}

// BulkRequest.validate's checks of one item, and routing's refusal of an empty _id.
void validate_item(BulkItem& item, std::vector<std::string>& validation) {
  const WriteOp& op = item.op;
  if (op.index.empty()) validation.push_back("index is missing");
  if ((item.action == "update" || item.action == "delete") && op.id.empty())
    validation.push_back("id is missing");
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
}

// Every item of the body; an error rejects the whole request.
std::variant<std::vector<BulkItem>, EsError> parse_items(const std::string& body,
                                                         const std::string& default_index) {
  const std::vector<std::string> lines = split_lines(body);
  std::vector<BulkItem> items;
  std::vector<std::string> validation;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
    int retry_on_conflict = 0;
    auto parsed = parse_action(lines[i], std::to_string(i + 1), default_index, retry_on_conflict);
    if (auto* err = std::get_if<EsError>(&parsed)) return *err;
    BulkItem& item = std::get<BulkItem>(parsed);
    if (item.action != "delete") {
      if (i + 1 >= lines.size()) break;  // an action without its source line is dropped
      if (auto err = read_source(item, lines[++i], retry_on_conflict, validation)) return *err;
    }
    validate_item(item, validation);
    items.push_back(std::move(item));
  }
  if (items.empty()) validation.push_back("no requests added");
  if (!validation.empty()) return validation_error(validation);
  return items;
}

}  // namespace

ApiResponse handle_bulk(Call& call) {
  const MonoTime start = call.clock.monotonic();
  auto refresh = refresh_policy(call.params);
  if (auto* err = std::get_if<EsError>(&refresh)) return error_reply(*err);
  const std::string& body = call.request.body;
  if (!body.empty() && body.back() != '\n') {
    return error_reply(illegal_argument("The bulk request must be terminated by a newline [\\n]"));
  }
  auto parsed = parse_items(body, call.index);
  if (auto* err = std::get_if<EsError>(&parsed)) return error_reply(*err);
  auto& items = std::get<std::vector<BulkItem>>(parsed);
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
  const long long took =
      std::chrono::duration_cast<std::chrono::milliseconds>(call.clock.monotonic() - start).count();
  return json_reply(200, {{"errors", errors}, {"took", took}, {"items", results}});
}

}  // namespace eslease::esemu
