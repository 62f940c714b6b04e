// Loads the project's real CRD and examples for the schema tests.
#pragma once

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>

#include "emulators/kube/schema/schema.h"

namespace eslease::kubeemu::schema::testing {

inline std::string source_dir() {
  const char* dir = std::getenv("ESLEASE_SOURCE_DIR");
  return dir ? dir : ESLEASE_SOURCE_DIR_FALLBACK;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline const nlohmann::json& lease_crd() {
  static const nlohmann::json crd = [] {
    auto parsed = yaml_to_json(read_text(source_dir() + "/crds/leases.eslease.io.yaml"));
    if (!parsed) throw std::runtime_error("crds/leases.eslease.io.yaml is not valid YAML");
    return *parsed;
  }();
  return crd;
}

inline const nlohmann::json& lease_schema() {
  return lease_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

// A valid claim-mode Lease; tests change one thing at a time.
inline nlohmann::json claim_lease() {
  return nlohmann::json::parse(R"({
    "apiVersion": "eslease.io/v1alpha1", "kind": "Lease",
    "metadata": {"name": "report-a", "namespace": "batch"},
    "spec": {"lockName": "nightly-report", "holder": {"podName": "report-7f9c"}}
  })");
}

}  // namespace eslease::kubeemu::schema::testing
