// GET, LIST (selectors, pagination) and WATCH (history, bookmarks, 410) of ApiServer.
#include <algorithm>
#include <cstring>

#include "common/base64.h"
#include "common/text.h"
#include "emulators/kube/api_server.h"
#include "emulators/kube/selectors.h"
#include "emulators/kube/table.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

struct Selectors {
  LabelSelector labels;
  FieldSelector fields;
  bool matches(const json& object) const { return labels.matches(object) && fields.matches(object); }
  bool empty() const { return labels.empty() && fields.empty(); }
};

std::variant<Selectors, ApiError> parse_selectors(const std::string& label_text,
                                                  const std::string& field_text, const ResourceType& type) {
  auto labels = LabelSelector::parse(label_text);
  if (!labels) return bad_request(labels.error().message);
  auto fields = FieldSelector::parse(field_text, type.extra_field_labels);
  if (!fields) return bad_request(fields.error().message);
  return Selectors{std::move(*labels), std::move(*fields)};
}

// Continue tokens look like the apiserver's: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}.
std::string encode_continue(std::uint64_t rv, const std::string& last_key) {
  return base64_encode(
      json{{"v", "meta.k8s.io/v1"}, {"rv", rv}, {"start", last_key + std::string(1, '\0')}}.dump());
}

struct ContinueToken {
  std::uint64_t rv;
  std::string after_key;
};

std::optional<ContinueToken> decode_continue(const std::string& token) {
  auto raw = base64_decode(token);
  if (!raw) return std::nullopt;
  json parsed = json::parse(*raw, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("rv") || !parsed["rv"].is_number_unsigned() ||
      !parsed.contains("start") || !parsed["start"].is_string()) {
    return std::nullopt;
  }
  std::string start = parsed["start"].get<std::string>();
  if (!start.empty() && start.back() == '\0') start.pop_back();
  return ContinueToken{parsed["rv"].get<std::uint64_t>(), start};
}

std::optional<std::uint64_t> parse_rv(const std::string& text) {
  if (text.empty() || text.size() > 19 || !std::all_of(text.begin(), text.end(), ::isdigit))
    return std::nullopt;
  return std::stoull(text);
}

std::string key_of_object(const json& object) {
  const auto& meta = object["metadata"];
  return ObjectStore::key_of(meta.value("namespace", ""), meta.value("name", ""));
}

}  // namespace

void ApiServer::get(const Call& call, http::ServerResponse& response) {
  ObjectPtr object;
  {
    std::lock_guard lock(mutex_);
    object = store_.get(call.type->id(), call.ns, call.name);
  }
  if (!object) return send_error(response, not_found(call.type->group, call.type->plural, call.name));
  json body = present(call, *object);
  if (call.wants_table && call.subresource.empty()) {
    body = make_table(*call.type, call.version, {body}, "", "",
                      include_object_of(call.param("includeObject")), clock_.now());
  }
  send_json(response, 200, body);
}

void ApiServer::list(const Call& call, http::ServerResponse& response) {
  auto selectors = parse_selectors(call.param("labelSelector"), call.param("fieldSelector"), *call.type);
  if (auto* error = std::get_if<ApiError>(&selectors)) return send_error(response, *error);
  const Selectors& filter = std::get<Selectors>(selectors);
  std::size_t limit = 0;
  if (const std::string text = call.param("limit"); !text.empty()) {
    auto parsed = parse_rv(text);
    if (parsed) limit = static_cast<std::size_t>(*parsed);
  }
  std::vector<ObjectPtr> page;
  std::uint64_t list_rv;
  std::string next_token;
  std::optional<std::size_t> remaining;
  {
    std::lock_guard lock(mutex_);
    std::string after_key;
    list_rv = store_.current_rv();
    if (const std::string token = call.param("continue"); !token.empty()) {
      auto decoded = decode_continue(token);
      if (!decoded)
        return send_error(response, bad_request("continue key is not valid: incorrect encoded start "
                                                "resourceVersion (version meta.k8s.io/v1)"));
      if (decoded->rv < store_.history_floor()) {
        ApiError gone = expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a "
            "new "
            "list without the continue parameter, or use the continue token in this response to retrieve the "
            "remainder of the results. Continuing with the provided token results in an inconsistent list - "
            "objects that were created, modified, or deleted between the time the first chunk was returned "
            "and "
            "now may show up in the list.");
        json body = gone.body();
        body["metadata"]["continue"] = encode_continue(store_.current_rv(), decoded->after_key);
        http::Headers headers = {{"Content-Type", "application/json"}};
        return response.send(410, headers, body.dump());
      }
      list_rv = decoded->rv;
      after_key = decoded->after_key;
    }
    // Scan in key order, keeping only matches, until the page is full and one more match
    // proves that a continue token is needed.
    bool more = false;
    std::size_t visited_after_page = 0;
    store_.scan(call.type->id(), call.ns, after_key, [&](const ObjectPtr& object) {
      if (limit > 0 && page.size() >= limit) {
        ++visited_after_page;
        if (!more && filter.matches(*object)) more = true;
        // Without selectors the remaining count is wanted too, so keep counting.
        return !more || filter.empty();
      }
      if (filter.matches(*object)) page.push_back(object);
      return true;
    });
    if (more) {
      next_token = encode_continue(list_rv, key_of_object(*page.back()));
      if (filter.empty()) remaining = visited_after_page;
    }
  }
  json metadata = {{"resourceVersion", std::to_string(list_rv)}};
  if (!next_token.empty()) metadata["continue"] = next_token;
  if (remaining) metadata["remainingItemCount"] = *remaining;
  std::vector<json> items;
  items.reserve(page.size());
  for (const auto& object : page) items.push_back(present(call, *object));
  if (call.wants_table) {
    return send_json(response, 200,
                     make_table(*call.type, call.version, items, std::to_string(list_rv), next_token,
                                include_object_of(call.param("includeObject")), clock_.now()));
  }
  json body = {{"kind", call.type->list_kind},
               {"apiVersion", call.type->group_version(call.version)},
               {"metadata", metadata},
               {"items", std::move(items)}};
  send_json(response, 200, body);
}

void ApiServer::watch(const Call& call, http::ServerResponse& response) {
  auto selectors = parse_selectors(call.param("labelSelector"), call.param("fieldSelector"), *call.type);
  if (auto* error = std::get_if<ApiError>(&selectors)) return send_error(response, *error);
  const Selectors filter = std::get<Selectors>(selectors);
  const std::string rv_text = call.param("resourceVersion");
  const bool bookmarks = call.flag("allowWatchBookmarks");
  const bool initial_events_param = call.flag("sendInitialEvents");
  const bool send_initial = rv_text.empty() || rv_text == "0" || initial_events_param;
  std::optional<std::uint64_t> from_rv;
  if (!send_initial) {
    from_rv = parse_rv(rv_text);
    if (!from_rv) return send_error(response, bad_request("invalid resource version: " + rv_text));
  }
  auto deadline = std::chrono::steady_clock::time_point::max();
  if (const std::string t = call.param("timeoutSeconds"); !t.empty()) {
    if (auto seconds = parse_rv(t))
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*seconds);
  }
  if (shutting_down_) return send_error(response, service_unavailable("the server is shutting down"));

  std::shared_ptr<WatchStream> stream;
  std::vector<ObjectPtr> initial;
  std::uint64_t start_rv = 0;
  std::uint64_t floor = 0;
  {
    std::lock_guard lock(mutex_);
    if (send_initial) {
      initial = store_.list(call.type->id(), call.ns);
      stream = store_.watch_from_now(call.type->id());
    } else if (*from_rv > store_.current_rv()) {
      // A version from the future (e.g. remembered from before a server restart): the real
      // server refuses it rather than silently waiting, so clients re-list.
      return send_error(response, too_large_resource_version(*from_rv, store_.current_rv()));
    } else {
      stream = store_.watch(call.type->id(), *from_rv);
    }
    start_rv = store_.current_rv();
    floor = store_.history_floor();
  }
  http::Headers headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}};
  auto write_event = [&](const std::string& type, const json& object) {
    return response.write_chunk(
        json{{"type", type}, {"object", object}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
  };
  auto render = [&](const json& object) {
    json shown = present(call, object);
    if (!call.wants_table) return shown;
    return make_table(*call.type, call.version, {shown}, "", "",
                      include_object_of(call.param("includeObject")), clock_.now());
  };
  if (!stream) {
    // Too old: the real server answers 200 and sends a single ERROR event.
    if (!response.begin_chunked(200, headers)) return;
    write_event("ERROR",
                expired("too old resource version: " + rv_text + " (" + std::to_string(floor) + ")").body());
    return response.end_chunked();
  }
  auto release = [&] {
    std::lock_guard lock(mutex_);
    store_.unwatch(stream);
  };
  if (!response.begin_chunked(200, headers)) return release();
  bool alive = true;
  for (const auto& object : initial) {
    if (!filter.matches(*object)) continue;
    if (!(alive = write_event("ADDED", render(*object)))) break;
  }
  if (alive && initial_events_param && bookmarks) {
    alive = write_event("BOOKMARK", {{"kind", call.type->kind},
                                     {"apiVersion", call.type->group_version(call.version)},
                                     {"metadata",
                                      {{"resourceVersion", std::to_string(start_rv)},
                                       {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}});
  }
  auto next_bookmark = std::chrono::steady_clock::now() + options_.bookmark_interval;
  while (alive) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || response.closing()) break;
    // Wake at least every 100 ms to notice a closed peer.
    auto until =
        std::min({deadline, now + std::chrono::milliseconds(100), bookmarks ? next_bookmark : deadline});
    EventPtr event;
    const auto next = stream->next(event, until);
    if (next == WatchStream::Next::kClosed) break;
    if (next == WatchStream::Next::kIdle) {
      if (bookmarks && std::chrono::steady_clock::now() >= next_bookmark) {
        alive = write_event("BOOKMARK",
                            {{"kind", call.type->kind},
                             {"apiVersion", call.type->group_version(call.version)},
                             {"metadata", {{"resourceVersion", std::to_string(stream->progress())}}}});
        next_bookmark = std::chrono::steady_clock::now() + options_.bookmark_interval;
      }
      continue;
    }
    if (!call.ns.empty() && event->ns != call.ns) continue;
    // The cacher's rule: a change that moves an object into or out of the selection is
    // an ADDED or a DELETED (of the previous state, at the new resourceVersion).
    const bool now_matches = event->type != "DELETED" && filter.matches(*event->object);
    const bool was_matching = event->previous && filter.matches(*event->previous);
    if (event->type == "ADDED") {
      if (now_matches) alive = write_event("ADDED", render(*event->object));
    } else if (event->type == "DELETED") {
      if (filter.matches(*event->object)) alive = write_event("DELETED", render(*event->object));
    } else if (now_matches && was_matching) {
      alive = write_event("MODIFIED", render(*event->object));
    } else if (now_matches) {
      alive = write_event("ADDED", render(*event->object));
    } else if (was_matching) {
      json previous = *event->previous;
      previous["metadata"]["resourceVersion"] = std::to_string(event->resource_version);
      alive = write_event("DELETED", render(previous));
    }
  }
  release();
  if (alive && !response.closing()) response.end_chunked();
}

}  // namespace eslease::kubeemu
