// ObjectMeta rules of the generic registry: name validation, the fields the server owns
// (uid, creationTimestamp, generation, deletion), and when generation moves.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "emulators/kube/api_status.h"

namespace eslease::kubeemu {

// RFC 1123 subdomain (most resources) or label (namespaces) checks with the apiserver's
// messages; empty when valid.
std::vector<StatusCause> validate_object_name(const std::string& name, bool label_only);
std::string random_uid();
// generateName + 5 characters from the apiserver's alphabet.
std::string generate_name(const std::string& prefix);
// Whether anything outside metadata and status differs: the generation bump rule.
bool spec_changed(const nlohmann::json& before, const nlohmann::json& after);
std::vector<std::string> finalizers_of(const nlohmann::json& object);
std::string meta_string(const nlohmann::json& object, const char* key);

}  // namespace eslease::kubeemu
