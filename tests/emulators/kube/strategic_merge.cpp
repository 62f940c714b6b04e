#include "emulators/kube/strategic_merge.h"

#include <algorithm>

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

const std::string kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";
const std::string kSetElementOrder = "$setElementOrder/";

struct Merger {
  const ListTypes& lists;
  std::vector<std::string> names;
  std::optional<ApiError> error;

  void fail(const std::string& message) {
    if (!error) error = bad_request(message);
  }

  // A patch value with its directives resolved against nothing (a key the target lacks).
  json fresh(const json& patch) {
    if (patch.is_object()) {
      json empty = json::object();
      merge_map(empty, patch);
      return empty;
    }
    if (patch.is_array()) {
      json empty = json::array();
      merge_list(empty, patch);
      return empty;
    }
    return patch;
  }

  // Returns false when the map is to be deleted ($patch: delete).
  bool merge_map(json& target, const json& patch) {
    if (patch.contains("$patch")) {
      const json& directive = patch["$patch"];
      if (directive == "delete") return false;
      if (directive == "replace") {
        json clean = patch;
        clean.erase("$patch");
        target = fresh(clean);
        return true;
      }
      if (directive != "merge") fail("Unknown patch type: " + directive.dump() + " in map: " + patch.dump());
    }
    if (!target.is_object()) target = json::object();
    for (const auto& [key, value] : patch.items()) {
      if (key.rfind(kDeleteFromPrimitiveList, 0) == 0) {
        const std::string list = key.substr(kDeleteFromPrimitiveList.size());
        if (!value.is_array()) return fail("invalid type for " + key), true;
        if (target.contains(list) && target[list].is_array()) {
          json& items = target[list];
          for (const auto& v : value) items.erase(std::remove(items.begin(), items.end(), v), items.end());
        }
      }
    }
    for (const auto& [key, value] : patch.items()) {
      if (key.empty() || key[0] == '$') continue;
      names.push_back(key);
      if (value.is_null()) {
        target.erase(key);
      } else if (!target.contains(key)) {
        json made = fresh(value);
        if (!(value.is_object() && value.value("$patch", "") == "delete")) target[key] = std::move(made);
      } else if (value.is_object() && target[key].is_object()) {
        if (!merge_map(target[key], value)) target.erase(key);
      } else if (value.is_array() && target[key].is_array()) {
        merge_list(target[key], value);
      } else {
        target[key] = fresh(value);
      }
      names.pop_back();
    }
    for (const auto& [key, value] : patch.items()) {
      if (key.rfind(kSetElementOrder, 0) == 0) order(target, key.substr(kSetElementOrder.size()), value);
    }
    if (patch.contains("$retainKeys")) {
      const json& keep = patch["$retainKeys"];
      if (!keep.is_array()) return fail("invalid type for $retainKeys"), true;
      for (auto it = target.begin(); it != target.end();) {
        it = std::find(keep.begin(), keep.end(), it.key()) == keep.end() ? target.erase(it) : std::next(it);
      }
    }
    return true;
  }

  void merge_list(json& target, const json& patch) {
    const ListType type = lists(names);
    const bool replace = std::any_of(patch.begin(), patch.end(), [](const json& item) {
      return item.is_object() && item.value("$patch", "") == "replace";
    });
    if (replace || type.patch == ListKind::kAtomic) {
      json out = json::array();
      for (const auto& item : patch) {
        if (item.is_object() && item.contains("$patch")) continue;
        out.push_back(item.is_object() ? fresh(item) : item);
      }
      target = std::move(out);
      return;
    }
    if (type.patch == ListKind::kSet) {
      for (const auto& item : patch) {
        if (std::find(target.begin(), target.end(), item) == target.end()) target.push_back(item);
      }
      return;
    }
    const std::string& key = type.patch_key;
    for (const auto& item : patch) {
      if (!item.is_object() || !item.contains(key)) {
        fail("map: " + item.dump() + " does not contain declared merge key: " + key);
        return;
      }
      auto it = std::find_if(target.begin(), target.end(), [&](const json& e) {
        return e.is_object() && e.contains(key) && e[key] == item[key];
      });
      if (item.value("$patch", "") == "delete") {
        target.erase(std::remove_if(target.begin(), target.end(),
                                    [&](const json& e) {
                                      return e.is_object() && e.contains(key) && e[key] == item[key];
                                    }),
                     target.end());
      } else if (it == target.end()) {
        target.push_back(fresh(item));
      } else if (!merge_map(*it, item)) {
        target.erase(it);
      }
    }
  }

  // $setElementOrder: the listed elements first, in that order; the others keep theirs after.
  void order(json& target, const std::string& list, const json& wanted) {
    if (!target.contains(list) || !target[list].is_array() || !wanted.is_array()) return;
    names.push_back(list);
    const ListType type = lists(names);
    names.pop_back();
    auto rank = [&](const json& item) {
      for (std::size_t i = 0; i < wanted.size(); ++i) {
        const json& w = wanted[i];
        const bool same = type.patch == ListKind::kMap
                              ? (w.is_object() && item.is_object() && w.contains(type.patch_key) &&
                                 item.contains(type.patch_key) && w[type.patch_key] == item[type.patch_key])
                              : w == item;
        if (same) return i;
      }
      return wanted.size();
    };
    std::vector<json> items(target[list].begin(), target[list].end());
    std::stable_sort(items.begin(), items.end(),
                     [&](const json& a, const json& b) { return rank(a) < rank(b); });
    target[list] = items;
  }
};

}  // namespace

std::optional<ApiError> strategic_merge(json& target, const json& patch, const ListTypes& lists) {
  if (!patch.is_object()) return bad_request("error decoding patch: patch is not a JSON object");
  Merger merger{lists, {}, std::nullopt};
  if (!merger.merge_map(target, patch)) target = json::object();
  return merger.error;
}

}  // namespace eslease::kubeemu
