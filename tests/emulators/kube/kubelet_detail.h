// Helpers shared by the pod and node status rules (pod_status.cpp) and the simulated
// kubelet's thread (kubelet.cpp): accessors that never throw on what clients stored, pod
// conditions as the kubelet writes them, and node addressing.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace eslease::kubeemu::kubelet_detail {

inline constexpr const char* kPodsId = "/pods";
inline constexpr const char* kNodesId = "/nodes";
inline constexpr const char* kNotReadyTaint = "node.kubernetes.io/not-ready";
inline constexpr const char* kUnreachableTaint = "node.kubernetes.io/unreachable";
// Kubernetes' default spec.terminationGracePeriodSeconds (SetDefaults_PodSpec).
inline constexpr std::int64_t kDefaultGraceSeconds = 30;

// A grace period as a time offset, bounded (a century) so absurd requests cannot overflow
// the clock arithmetic.
std::chrono::seconds grace_offset(std::int64_t seconds);
// Accessors that never throw: pods can hold anything a client managed to store.
std::string string_at(const nlohmann::json& object, const char* key);
std::optional<std::int64_t> int_at(const nlohmann::json& object, const char* key);
const nlohmann::json& member(const nlohmann::json& object, const char* key);
// The object under `key`, made an object first if it is missing or malformed.
nlohmann::json& object_at(nlohmann::json& parent, const char* key);
std::string phase_of(const nlohmann::json& pod);
std::string node_of(const nlohmann::json& pod);
bool terminal(const std::string& phase);
bool deleting(const nlohmann::json& object);
std::string now_text(WallTime now);
const nlohmann::json* find_condition(const nlohmann::json& status, const std::string& type);
std::string condition_status(const nlohmann::json& status, const std::string& type);
// Sets one condition the way UpdatePodCondition does: lastTransitionTime moves only when
// the status changes. A nullopt reason or message keeps the current one.
void set_condition(nlohmann::json& status, const std::string& type, const std::string& value,
                   const std::optional<std::string>& reason, const std::optional<std::string>& message,
                   WallTime now, bool probe_time = true);
// The order a kubelet writes pod conditions in; others (readiness gates) follow.
void order_pod_conditions(nlohmann::json& status);
std::vector<std::string> container_names(const nlohmann::json& pod);
std::string unready_message(const nlohmann::json& pod);
std::string random_hex(std::size_t n);
// The QoS class GetPodQOS derives from requests and limits (quantities compared as written).
std::string qos_class(const nlohmann::json& pod);
std::string node_ip(int index);
int node_index(const std::string& name);

}  // namespace eslease::kubeemu::kubelet_detail
