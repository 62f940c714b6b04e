// GET /, cluster health and the index APIs (create, delete, exists, get, mapping, put mapping,
// refresh).
#include "emulators/es/handlers.h"

namespace eslease::esemu {

using json = nlohmann::ordered_json;

namespace {
constexpr const char* kClusterName = "es-emulator";
constexpr const char* kClusterUuid = "ZXMtZW11bGF0b3ItY2x1c3Rlcg";

// The request's JSON body; null when it has none.
std::variant<json, EsError> optional_body(const Call& call) {
  if (call.request.body.empty()) return json();
  return parse_body(call.request.body, false);
}
}  // namespace

ApiResponse handle_info(Call& call) {
  return json_reply(200, {{"name", "es-emulator-node-0"},
                          {"cluster_name", kClusterName},
                          {"cluster_uuid", kClusterUuid},
                          {"version",
                           {{"number", "8.11.1"},
                            {"build_flavor", "default"},
                            {"build_type", "docker"},
                            {"build_hash", "6f9ff581fbcde658e6f69d6ce03050f060d1fd0c"},
                            {"build_date", "2023-11-11T10:05:59.421038163Z"},
                            {"build_snapshot", false},
                            {"lucene_version", "9.8.0"},
                            {"minimum_wire_compatibility_version", "7.17.0"},
                            {"minimum_index_compatibility_version", "7.0.0"}}},
                          {"tagline", "You Know, for Search"}});
}

ApiResponse handle_cluster_health(Call& call) {
  ClusterCounts counts = call.store.counts();
  std::string status = counts.unassigned_replicas > 0 ? "yellow" : "green";
  int primaries = counts.primaries;
  int unassigned = counts.unassigned_replicas;
  bool timed_out = false;
  if (!call.index.empty()) {
    auto names = call.store.resolve(call.index);
    if (std::holds_alternative<EsError>(names)) {
      // Elasticsearch waits for the index to appear, then reports red: the emulator does
      // not wait.
      status = "red";
      timed_out = true;
      primaries = 0;
      unassigned = 0;
    } else {
      primaries = 0;
      unassigned = 0;
      for (const auto& name : std::get<std::vector<std::string>>(names)) {
        ++primaries;
        unassigned += call.store.replicas_of(name);
      }
      status = unassigned > 0 ? "yellow" : "green";
    }
  }
  if (auto wanted = call.params.get("wait_for_status")) {
    auto rank = [](const std::string& s) { return s == "green" ? 2 : (s == "yellow" ? 1 : 0); };
    if (*wanted != "green" && *wanted != "yellow" && *wanted != "red") {
      return error_reply(illegal_argument("unknown cluster health status [" + *wanted + "]"));
    }
    if (rank(status) < rank(*wanted)) timed_out = true;
  }
  const int active = primaries;
  json body = {{"cluster_name", kClusterName},
               {"status", status},
               {"timed_out", timed_out},
               {"number_of_nodes", 1},
               {"number_of_data_nodes", 1},
               {"active_primary_shards", active},
               {"active_shards", active},
               {"relocating_shards", 0},
               {"initializing_shards", 0},
               {"unassigned_shards", unassigned},
               {"delayed_unassigned_shards", 0},
               {"number_of_pending_tasks", 0},
               {"number_of_in_flight_fetch", 0},
               {"task_max_waiting_in_queue_millis", 0},
               {"active_shards_percent_as_number",
                active + unassigned == 0 ? 100.0 : 100.0 * active / (active + unassigned)}};
  return json_reply(timed_out ? 408 : 200, body);
}

ApiResponse handle_index_create(Call& call) {
  auto body = optional_body(call);
  if (auto* err = std::get_if<EsError>(&body)) return error_reply(*err);
  if (auto err = call.store.create_index(call.index, std::get<json>(body))) return error_reply(*err);
  return json_reply(200, {{"acknowledged", true}, {"shards_acknowledged", true}, {"index", call.index}});
}

ApiResponse handle_index_delete(Call& call) {
  if (auto err = call.store.delete_indices(call.index)) return error_reply(*err);
  return json_reply(200, {{"acknowledged", true}});
}

ApiResponse handle_index_exists(Call& call) {
  auto names = call.store.resolve(call.index);
  ApiResponse r;
  r.status = std::holds_alternative<EsError>(names) ? 404 : 200;
  return r;
}

ApiResponse handle_index_get(Call& call, bool mappings_only) {
  auto described = call.store.describe(call.index, mappings_only);
  if (auto* err = std::get_if<EsError>(&described)) return error_reply(*err);
  return json_reply(200, std::get<json>(described));
}

ApiResponse handle_put_mapping(Call& call) {
  auto body = optional_body(call);
  if (auto* err = std::get_if<EsError>(&body)) return error_reply(*err);
  if (auto err = call.store.put_mapping(call.index, std::get<json>(body))) return error_reply(*err);
  return json_reply(200, {{"acknowledged", true}});
}

ApiResponse handle_put_settings(Call& call) {
  auto body = optional_body(call);
  if (auto* err = std::get_if<EsError>(&body)) return error_reply(*err);
  if (auto err = call.store.put_settings(call.index, std::get<json>(body))) return error_reply(*err);
  return json_reply(200, {{"acknowledged", true}});
}

ApiResponse handle_refresh(Call& call) {
  auto names = call.store.resolve(call.index);
  if (auto* err = std::get_if<EsError>(&names)) return error_reply(*err);
  const auto& list = std::get<std::vector<std::string>>(names);
  int total = call.store.refresh(list);
  return json_reply(
      200, {{"_shards", {{"total", total}, {"successful", static_cast<int>(list.size())}, {"failed", 0}}}});
}

}  // namespace eslease::esemu
