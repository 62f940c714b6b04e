#include "kube/api.h"

namespace eslease::kube {

const char* to_string(WatchEvent::Type type) {
  switch (type) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
    case WatchEvent::Type::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

Result<ListPage> list_all(Api& api, const Resource& r, const std::string& ns, ListOptions options,
                          const std::function<json(json)>& each) {
  ListPage all;
  options.continue_token.clear();
  while (true) {
    auto page = api.list(r, ns, options);
    if (!page.ok()) return page.error();
    all.items.reserve(all.items.size() + page->items.size());
    for (auto& item : page->items) all.items.push_back(each ? each(std::move(item)) : std::move(item));
    all.resource_version = page->resource_version;
    if (page->continue_token.empty()) break;
    options.continue_token = page->continue_token;
  }
  return all;
}

std::string meta_string(const json& object, const char* field) {
  if (!object.is_object()) return {};
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return {};
  auto value = meta->find(field);
  if (value == meta->end() || !value->is_string()) return {};
  return value->get<std::string>();
}

std::string object_key(const json& object) {
  std::string ns = meta_string(object, "namespace");
  std::string name = meta_string(object, "name");
  return ns.empty() ? name : ns + "/" + name;
}

}  // namespace eslease::kube
