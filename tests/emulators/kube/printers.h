// The columns kube-apiserver prints for built-in resources (its internal printers), so that
// `kubectl get pods`, `get events`, `get nodes`, `get deployments` and `get leases` show what
// they show against a real server.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/clock.h"

namespace eslease::kubeemu {

struct TableColumn {
  std::string name;
  std::string type;  // string, integer, date, ...
  std::string format;
  std::string description;
  int priority = 0;  // 1: only with `-o wide`
};

struct BuiltinPrinter {
  std::vector<TableColumn> columns;
  // One cell per column, in order.
  std::function<nlohmann::json(const nlohmann::json& object, WallTime now)> cells;
};

// The printer of a built-in resource (group "" for core), or nullptr when it prints Name and
// Age only.
const BuiltinPrinter* builtin_printer(const std::string& group, const std::string& plural);

// The pod's STATUS column: its phase, or the reason a container or the pod gives, as kubectl
// shows it ("ContainerCreating", "Init:0/1", "Terminating", "Completed", ...).
std::string pod_status_reason(const nlohmann::json& pod);

}  // namespace eslease::kubeemu
