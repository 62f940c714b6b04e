// kubectl's typed commands (`kubectl create namespace`, `create configmap`, `create
// secret`) and Helm's release storage (Secrets, and the DeleteOptions of their DELETE) send
// `application/vnd.kubernetes.protobuf`. This decodes the Kubernetes protobuf envelope and
// the few kinds those clients send into the JSON form the rest of the emulator works with.
// Other kinds are not understood (the caller answers 415).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace eslease::kubeemu {

std::optional<nlohmann::json> decode_kubernetes_protobuf(const std::string& body);

}  // namespace eslease::kubeemu
