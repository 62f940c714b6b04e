#include "kube/api.h"

#include "common/text.h"

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

Result<std::optional<json>> as_sent(Result<json> answer) {
  if (!answer.ok()) return answer.error();
  return std::optional<json>(std::move(*answer));
}

Result<std::optional<json>> Api::create_unless_busy(const Resource& r, const std::string& ns,
                                                    const json& object) {
  return as_sent(create(r, ns, object));
}

Result<std::optional<json>> Api::patch_unless_busy(const Resource& r, const std::string& ns,
                                                   const std::string& name, PatchType type, const json& patch,
                                                   bool status_subresource, const CallOptions& call) {
  return as_sent(this->patch(r, ns, name, type, patch, status_subresource, call));
}

Result<std::string> list_each(Api& api, const Resource& r, const std::string& ns, ListOptions options,
                              const std::function<void(json object)>& each) {
  options.continue_token.clear();
  while (true) {
    auto page = api.list(r, ns, options);
    if (!page.ok()) return page.error();
    for (auto& item : page->items) each(std::move(item));
    if (page->continue_token.empty()) return page->resource_version;
    options.continue_token = page->continue_token;
  }
}

Result<ListPage> list_all(Api& api, const Resource& r, const std::string& ns, ListOptions options) {
  ListPage all;
  auto version =
      list_each(api, r, ns, std::move(options), [&](json item) { all.items.push_back(std::move(item)); });
  if (!version.ok()) return version.error();
  all.resource_version = std::move(*version);
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
  return eslease::object_key(meta_string(object, "namespace"), meta_string(object, "name"));
}

}  // namespace eslease::kube
