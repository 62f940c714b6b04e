// `metadata.managedFields`: who set which field, as kube-apiserver's field manager records
// it. Every write is recorded: an apply (server-side apply, operation Apply) replaces the
// applier's set with the fields it applied; any other write (create, PUT, PATCH, operation
// Update) gives its manager the fields whose values it changed and takes them from everyone
// else. Fields that disappear from the object disappear from every set.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "emulators/kube/api_status.h"
#include "emulators/kube/field_set.h"

namespace eslease::kubeemu {

struct ManagerEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string time;  // RFC 3339, seconds
  std::string subresource;
  FieldSet fields;

  // Managers are told apart by name, operation, subresource and, for Update, apiVersion.
  bool same_manager(const ManagerEntry& other) const;
  // How a conflict names it: `"helm"` or `"kubectl-edit" using apps/v1 at <time>`.
  std::string printed() const;
};

std::vector<ManagerEntry> read_managed_fields(const nlohmann::json& object);
// Writes `managers` into object.metadata.managedFields (removed when empty).
void write_managed_fields(nlohmann::json& object, const std::vector<ManagerEntry>& managers);

// The manager of a write that names none: the User-Agent up to its first '/' (as
// kube-apiserver defaults it), "unknown" without one.
std::string default_manager(const std::string& user_agent);

// Records a write that is not an apply. `who` has no fields yet; `before`/`after` are the
// field sets of the object before and after the write (empty `before` for a create).
void record_update(std::vector<ManagerEntry>& managers, const ManagerEntry& who, const FieldSet& before,
                   const FieldSet& after, const nlohmann::json& old_object, const nlohmann::json& new_object);

struct ApplyRequest {
  ManagerEntry applier;  // operation Apply, no fields yet
  bool force = false;
  ListTypes lists;
  bool with_status = true;  // false for the main resource of a kind with a status subresource
};

struct Applied {
  nlohmann::json object;  // managedFields written in
  std::vector<ManagerEntry> managers;
};

// Server-side apply of `config` onto `live` (null when the object does not exist yet).
// Conflicts (a field the config sets to another value than a field another manager owns)
// are a 409 Conflict listing each field, unless `force` moves them to the applier. Fields the
// applier applied before and leaves out now are removed unless another manager owns them.
std::variant<Applied, ApiError> server_side_apply(const nlohmann::json& live, const nlohmann::json& config,
                                                  const ApplyRequest& request);

}  // namespace eslease::kubeemu
