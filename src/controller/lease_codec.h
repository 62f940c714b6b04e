// Decoding the API's JSON into the controller's typed records, once per object as it
// arrives from a LIST or WATCH, and encoding the status the controller writes back. Decoding
// never fails: what the schema let through but the controller cannot serve is recorded in
// LeaseSpec::problem, and the claim becomes Invalid.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "controller/model.h"

namespace eslease::controller {

LeaseRecord decode_lease(const nlohmann::json& object);
PodRecord decode_pod(const nlohmann::json& object);
NodeRecord decode_node(const nlohmann::json& object);
// A kubelet's node Lease (kube-node-lease): the node's heartbeat.
NodeLeaseRecord decode_node_lease(const nlohmann::json& object);

// The whole status as a JSON merge patch body ({"status": {...}}): every field the
// controller owns is present, absent values are null so a merge patch removes them.
nlohmann::json status_patch(const LeaseStatus& status);

// A pod's eslease.io/holds value: "<Lease>=<fencing token>" entries joined by commas, in
// Lease name order. Parsing skips entries that are not of that form (a hand edit).
std::map<std::string, std::string> parse_holds(std::string_view value);
std::string format_holds(const std::map<std::string, std::string>& token_by_lease);

}  // namespace eslease::controller
