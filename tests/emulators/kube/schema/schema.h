// OpenAPI v3 structural-schema handling for custom resources, with the semantics of
// k8s.io/apiextensions-apiserver: pruning of unknown fields, defaulting, validation with
// Kubernetes' field.Error types and wording, CRD validation, and the OpenAPI v3 document
// that kubectl reads for client-side (and server-side field) validation.
//
// `schema` arguments are one version's `schema.openAPIV3Schema`. No function throws; a
// malformed schema is treated as permissive where apiextensions would have rejected the CRD.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace eslease::kubeemu::schema {

// One field.Error of k8s.io/apimachinery/pkg/util/validation/field, as it appears in a
// metav1.Status "details.causes" entry: reason (e.g. "FieldValueRequired"), message
// (field.Error.ErrorBody(), e.g. `Unsupported value: "x": supported values: "a", "b"`) and
// field (e.g. "spec.priority"; root-level paths use "<root>" as kube does).
struct Cause {
  std::string type;
  std::string message;
  std::string field;
};

// Structural defaulting: first drops nulls of non-nullable fields that have no default, then
// sets `default` values of missing (or non-nullable null) properties, recursively into objects
// and array items that exist, including objects that were just defaulted. Run after pruning.
void apply_defaults(const nlohmann::json& schema, nlohmann::json& object);

// Removes fields the schema does not specify, except under x-kubernetes-preserve-unknown-fields
// and embedded resources' apiVersion/kind/metadata. At the root apiVersion, kind and metadata
// are always kept. Returns the removed paths (e.g. "spec.foo") in document order.
std::vector<std::string> prune_unknown(const nlohmann::json& schema, nlohmann::json& object);

// Validates `object` (already pruned and defaulted) against `schema`. Empty when valid.
// Root-level apiVersion/kind/metadata are not validated here (the API server checks
// ObjectMeta itself).
std::vector<Cause> validate(const nlohmann::json& schema, const nlohmann::json& object);

// Validates an apiextensions.k8s.io/v1 CustomResourceDefinition the way the API server
// does on create/update (names, group, versions, storage version, structural schemas).
std::vector<Cause> validate_crd(const nlohmann::json& crd);

// OpenAPI 3.0 document served at /openapi/v3/apis/<group>/<version> for the CRDs that serve
// that group/version: components.schemas named "<reversed group>.<version>.<Kind>" (and
// "...<Kind>List") with x-kubernetes-group-version-kind, ObjectMeta/ListMeta schemas, and
// paths for the resources.
nlohmann::json openapi_v3_for_group_version(const std::string& group, const std::string& version,
                                            const std::vector<nlohmann::json>& crds);

// The message of a 422 Invalid Status, formatted as k8s.io/apimachinery errors.NewInvalid:
//   one cause:   `Lease.eslease.io "a" is invalid: spec.priority: Unsupported value: ...`
//   several:     `Lease.eslease.io "a" is invalid: [spec.priority: ..., spec.holder: ...]`
// kind_group is "Kind.group" ("Kind" alone for the core group).
std::string invalid_message(const std::string& kind_group, const std::string& name,
                            const std::vector<Cause>& causes);

// Converts a YAML document to JSON (tags resolved as YAML 1.1 plain scalars the way
// sigs.k8s.io/yaml does for manifests). nullopt when the YAML is malformed.
std::optional<nlohmann::json> yaml_to_json(const std::string& yaml_text);

// Every document of a multi-document YAML stream (empty documents skipped).
std::optional<std::vector<nlohmann::json>> yaml_documents_to_json(const std::string& yaml_text);

}  // namespace eslease::kubeemu::schema
