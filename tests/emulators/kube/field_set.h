// Sets of field paths, as server-side apply records them in `metadata.managedFields`
// (fieldsType FieldsV1, sigs.k8s.io/structured-merge-diff): a path is a sequence of
// `f:<field>`, `k:{<list map keys>}` (an element of a list merged by key) and `v:<value>` (an
// element of a set). A path in the set with others below it is written with a "." child.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "emulators/kube/list_types.h"

namespace eslease::kubeemu {

// One path, its elements joined by '\n' (which no field name or encoded key contains).
using FieldPath = std::string;
using FieldSet = std::set<FieldPath>;

std::vector<std::string> path_elements(const FieldPath& path);
FieldPath path_join(const std::vector<std::string>& elements);
// Whether `path` is `prefix` or below it.
bool path_within(const FieldPath& path, const FieldPath& prefix);
// Whether the set holds a path strictly below `path`.
bool has_children(const FieldSet& set, const FieldPath& path);
// Whether the set holds `path` or a path below it.
bool owns_within(const FieldSet& set, const FieldPath& path);

// The fields an object sets: every scalar, empty object, atomic list, set element and list
// map element (each element also a path of its own). Not tracked, as kube-apiserver: apiVersion,
// kind, the metadata the server owns (name, namespace, uid, resourceVersion, generation,
// creationTimestamp, deletion fields, managedFields), and status when `with_status` is false
// (a resource whose status is a subresource).
FieldSet fields_of(const nlohmann::json& object, const ListTypes& lists, bool with_status);

// The node a path names, or nullptr.
const nlohmann::json* value_at(const nlohmann::json& object, const FieldPath& path);
// Removes the field or element a path names; parents left empty by it are removed too.
void erase_at(nlohmann::json& object, const FieldPath& path);

// The path as structured-merge-diff prints it: `.spec.containers[name="app"].image`.
std::string path_string(const FieldPath& path);

// FieldsV1 JSON and back.
nlohmann::json fields_v1(const FieldSet& set);
FieldSet from_fields_v1(const nlohmann::json& tree);

}  // namespace eslease::kubeemu
