#include "emulators/kube/field_set.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

constexpr char kSeparator = '\n';

// The metadata fields the server owns: never part of anyone's field set.
bool server_owned_meta(const std::string& key) {
  for (const char* owned : {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                            "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"}) {
    if (key == owned) return true;
  }
  return false;
}

std::string key_element(const json& item, const std::vector<std::string>& keys) {
  json k = json::object();
  for (const auto& key : keys) {
    if (item.is_object() && item.contains(key)) k[key] = item[key];
  }
  return "k:" + k.dump();
}

struct Walker {
  const ListTypes& lists;
  FieldSet& out;

  void walk(const json& node, const std::string& path, std::vector<std::string>& names) {
    if (node.is_object() && !node.empty()) {
      for (const auto& [key, value] : node.items()) {
        names.push_back(key);
        walk(value, extend(path, "f:" + key), names);
        names.pop_back();
      }
      return;
    }
    if (node.is_array() && !node.empty()) {
      const ListType type = lists(names);
      if (type.apply == ListKind::kSet) {
        for (const auto& item : node) out.insert(extend(path, "v:" + item.dump()));
        return;
      }
      if (type.apply == ListKind::kMap) {
        for (const auto& item : node) {
          const std::string element = extend(path, key_element(item, type.apply_keys));
          out.insert(element);
          if (item.is_object()) {
            for (const auto& [key, value] : item.items()) {
              names.push_back(key);
              walk(value, extend(element, "f:" + key), names);
              names.pop_back();
            }
          }
        }
        return;
      }
    }
    out.insert(path);  // a scalar, an empty object or list, an atomic list
  }

  static std::string extend(const std::string& path, const std::string& element) {
    return path.empty() ? element : path + kSeparator + element;
  }
};

// The list element `element` names among `list`, or -1.
long find_element(const json& list, const std::string& element) {
  if (!list.is_array() || element.size() < 2) return -1;
  const json wanted = json::parse(element.substr(2), nullptr, false);
  if (wanted.is_discarded()) return -1;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (element[0] == 'v' && list[i] == wanted) return static_cast<long>(i);
    if (element[0] == 'k' && wanted.is_object() && list[i].is_object()) {
      bool match = true;
      for (const auto& [key, value] : wanted.items()) {
        match = match && list[i].contains(key) && list[i][key] == value;
      }
      if (match) return static_cast<long>(i);
    }
  }
  return -1;
}

const json* child(const json& node, const std::string& element) {
  if (element.rfind("f:", 0) == 0) {
    if (!node.is_object()) return nullptr;
    auto it = node.find(element.substr(2));
    return it == node.end() ? nullptr : &*it;
  }
  const long at = find_element(node, element);
  return at < 0 ? nullptr : &node[static_cast<std::size_t>(at)];
}

json* child(json& node, const std::string& element) {
  return const_cast<json*>(child(static_cast<const json&>(node), element));  // the same lookup, writable
}

bool erase_child(json& node, const std::string& element) {
  if (element.rfind("f:", 0) == 0) return node.is_object() && node.erase(element.substr(2)) > 0;
  const long at = find_element(node, element);
  if (at < 0) return false;
  node.erase(static_cast<std::size_t>(at));
  return true;
}

bool erase_in(json& node, const std::vector<std::string>& elements, std::size_t at) {
  if (at + 1 == elements.size()) return erase_child(node, elements[at]);
  // Found before the recursion: an emptied list element no longer matches its key.
  const bool field = elements[at].rfind("f:", 0) == 0;
  const long index = field ? -1 : find_element(node, elements[at]);
  json* next =
      field ? child(node, elements[at]) : (index < 0 ? nullptr : &node[static_cast<std::size_t>(index)]);
  if (next == nullptr || !erase_in(*next, elements, at + 1)) return false;
  if ((next->is_object() || next->is_array()) && next->empty()) {
    if (field) {
      node.erase(elements[at].substr(2));
    } else {
      node.erase(static_cast<std::size_t>(index));
    }
  }
  return true;
}

void tree_insert(json& tree, const std::vector<std::string>& elements) {
  json* node = &tree;
  for (const auto& e : elements) node = &(*node)[e];
  if (node->is_null()) *node = json::object();
}

void tree_read(const json& node, const std::string& path, FieldSet& out) {
  if (!node.is_object()) return;
  if (node.empty() && !path.empty()) out.insert(path);
  for (const auto& [key, value] : node.items()) {
    if (key == ".") {
      if (!path.empty()) out.insert(path);
      continue;
    }
    tree_read(value, Walker::extend(path, key), out);
  }
}

}  // namespace

std::vector<std::string> path_elements(const FieldPath& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto end = path.find(kSeparator, start);
    out.push_back(path.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

FieldPath path_join(const std::vector<std::string>& elements) {
  std::string out;
  for (const auto& e : elements) out = Walker::extend(out, e);
  return out;
}

bool path_within(const FieldPath& path, const FieldPath& prefix) {
  return path == prefix || (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
                            path[prefix.size()] == kSeparator);
}

bool has_children(const FieldSet& set, const FieldPath& path) {
  auto it = set.upper_bound(path);
  return it != set.end() && path_within(*it, path);
}

bool owns_within(const FieldSet& set, const FieldPath& path) {
  return set.count(path) > 0 || has_children(set, path);
}

FieldSet fields_of(const json& object, const ListTypes& lists, bool with_status) {
  FieldSet out;
  if (!object.is_object()) return out;
  Walker walker{lists, out};
  std::vector<std::string> names;
  for (const auto& [key, value] : object.items()) {
    if (key == "apiVersion" || key == "kind" || (key == "status" && !with_status)) continue;
    names.push_back(key);
    if (key == "metadata" && value.is_object()) {
      for (const auto& [meta_key, meta_value] : value.items()) {
        if (server_owned_meta(meta_key)) continue;
        names.push_back(meta_key);
        walker.walk(meta_value, "f:metadata" + std::string(1, kSeparator) + "f:" + meta_key, names);
        names.pop_back();
      }
    } else {
      walker.walk(value, "f:" + key, names);
    }
    names.pop_back();
  }
  return out;
}

const json* value_at(const json& object, const FieldPath& path) {
  const json* node = &object;
  for (const auto& element : path_elements(path)) {
    node = child(*node, element);
    if (node == nullptr) return nullptr;
  }
  return node;
}

void erase_at(json& object, const FieldPath& path) {
  erase_in(object, path_elements(path), 0);
}

std::string path_string(const FieldPath& path) {
  std::string out;
  for (const auto& element : path_elements(path)) {
    const std::string body = element.size() > 2 ? element.substr(2) : "";
    if (element.rfind("f:", 0) == 0) {
      out += "." + body;
    } else if (element.rfind("v:", 0) == 0) {
      out += "[=" + body + "]";
    } else {
      const json keys = json::parse(body, nullptr, false);
      std::string inner;
      if (keys.is_object()) {
        for (const auto& [key, value] : keys.items())
          inner += (inner.empty() ? "" : ",") + key + "=" + value.dump();
      }
      out += "[" + inner + "]";
    }
  }
  return out;
}

json fields_v1(const FieldSet& set) {
  json tree = json::object();
  for (const auto& path : set) {
    auto elements = path_elements(path);
    if (has_children(set, path)) elements.emplace_back(".");
    tree_insert(tree, elements);
  }
  return tree;
}

FieldSet from_fields_v1(const json& tree) {
  FieldSet out;
  tree_read(tree, "", out);
  return out;
}

}  // namespace eslease::kubeemu
