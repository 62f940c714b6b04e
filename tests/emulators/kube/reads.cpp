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

namespace {

// One page of a LIST: `limit` items (0: all) after the continue token's key.
struct ListPage {
  std::vector<ObjectPtr> items;
  std::uint64_t resource_version = 0;
  std::string continue_token;            // empty on the last page
  std::optional<std::size_t> remaining;  // remainingItemCount, without selectors only
};

ApiError continue_expired(const ObjectStore& store, const std::string& after_key) {
  ApiError gone = expired(
      "The provided continue parameter is too old to display a consistent list result. You can start a new "
      "list without the continue parameter, or use the continue token in this response to retrieve the "
      "remainder of the results. Continuing with the provided token results in an inconsistent list - "
      "objects that were created, modified, or deleted between the time the first chunk was returned and "
      "now may show up in the list.");
  gone.continue_token = encode_continue(store.current_rv(), after_key);
  return gone;
}

// Reads a page with the store's lock held.
std::variant<ListPage, ApiError> read_page(const ObjectStore& store, const std::string& resource_id,
                                           const std::string& ns, const Selectors& filter, std::size_t limit,
                                           const std::string& token) {
  ListPage page;
  std::string after_key;
  page.resource_version = store.current_rv();
  if (!token.empty()) {
    auto decoded = decode_continue(token);
    if (!decoded) {
      return bad_request(
          "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
    }
    if (decoded->rv < store.history_floor()) return continue_expired(store, decoded->after_key);
    page.resource_version = decoded->rv;
    after_key = decoded->after_key;
  }
  // Scan in key order, keeping only matches, until the page is full and one more match
  // proves that a continue token is needed.
  bool more = false;
  std::size_t visited_after_page = 0;
  store.scan(resource_id, ns, after_key, [&](const ObjectPtr& object) {
    if (limit > 0 && page.items.size() >= limit) {
      ++visited_after_page;
      if (!more && filter.matches(*object)) more = true;
      // Without selectors the remaining count is wanted too, so keep counting.
      return !more || filter.empty();
    }
    if (filter.matches(*object)) page.items.push_back(object);
    return true;
  });
  if (more) {
    page.continue_token = encode_continue(page.resource_version, key_of_object(*page.items.back()));
    if (filter.empty()) page.remaining = visited_after_page;
  }
  return page;
}

// How a watcher whose selectors are `filter` sees one change (nullopt: not at all). The
// cacher's rule: a change that moves an object into or out of the selection is an ADDED or a
// DELETED (of the previous state, at the new resourceVersion).
std::optional<std::pair<const char*, ObjectPtr>> seen_as(const WatchEvent& event, const Selectors& filter) {
  const bool now_matches = event.type != "DELETED" && filter.matches(*event.object);
  const bool was_matching = event.previous && filter.matches(*event.previous);
  if (event.type == "ADDED") {
    if (!now_matches) return std::nullopt;
    return std::make_pair("ADDED", event.object);
  }
  if (event.type == "DELETED") {
    if (!filter.matches(*event.object)) return std::nullopt;
    return std::make_pair("DELETED", event.object);
  }
  if (now_matches) return std::make_pair(was_matching ? "MODIFIED" : "ADDED", event.object);
  if (!was_matching) return std::nullopt;
  json previous = *event.previous;
  previous["metadata"]["resourceVersion"] = std::to_string(event.resource_version);
  return std::make_pair("DELETED", std::make_shared<const json>(std::move(previous)));
}

// One line of a watch stream; false when the client has gone.
// Written as text around the object's own serialization: an event is not worth a copy of it.
bool write_watch_event(http::ServerResponse& response, const std::string& type, const json& object) {
  return response.write_chunk(R"({"object":)" + to_text(object) + R"(,"type":)" + json(type).dump() + "}\n");
}

json bookmark(const ResourceType& type, const std::string& version, std::uint64_t rv) {
  return {{"kind", type.kind},
          {"apiVersion", type.group_version(version)},
          {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
}

}  // namespace

// What a WATCH asks for, from its query parameters.
struct ApiServer::WatchRequest {
  Selectors filter;
  std::string rv_text;
  bool bookmarks = false;
  bool initial_events_end = false;  // sendInitialEvents: a bookmark ends the initial events
  bool send_initial = false;        // replay the current objects as ADDED first
  std::optional<std::uint64_t> from_rv;
  MonoTime deadline = MonoTime::max();
};

void ApiServer::list(const Call& call, http::ServerResponse& response) {
  auto selectors = Selectors::parse(call.param("labelSelector"), call.param("fieldSelector"),
                                    call.type->extra_field_labels);
  if (auto* error = std::get_if<ApiError>(&selectors)) return send_error(response, *error);
  std::size_t limit = 0;
  if (const std::string text = call.param("limit"); !text.empty()) {
    auto parsed = parse_rv(text);
    if (parsed) limit = static_cast<std::size_t>(*parsed);
  }
  std::variant<ListPage, ApiError> read;
  {
    std::lock_guard lock(mutex_);
    read = read_page(store_, call.type->id(), call.ns, std::get<Selectors>(selectors), limit,
                     call.param("continue"));
  }
  if (auto* error = std::get_if<ApiError>(&read)) return send_error(response, *error);
  const ListPage& page = std::get<ListPage>(read);
  const std::string rv = std::to_string(page.resource_version);
  if (call.wants_table) {
    std::vector<json> items;
    items.reserve(page.items.size());
    for (const auto& object : page.items) items.push_back(present(call, *object));
    return send_json(response, 200,
                     make_table(*call.type, call.version, items, rv, page.continue_token,
                                include_object_of(call.param("includeObject")), clock_.now()));
  }
  json metadata = {{"resourceVersion", rv}};
  if (!page.continue_token.empty()) metadata["continue"] = page.continue_token;
  if (page.remaining) metadata["remainingItemCount"] = *page.remaining;
  // The items are written one by one as text: a list of every object is not worth a copy of them.
  std::string text =
      R"({"apiVersion":)" + json(call.type->group_version(call.version)).dump() + R"(,"items":[)";
  json relabelled;
  for (std::size_t i = 0; i < page.items.size(); ++i) {
    if (i > 0) text += ',';
    text += to_text(shown(call, *page.items[i], relabelled));
  }
  text += R"(],"kind":)" + json(call.type->list_kind).dump() + R"(,"metadata":)" + metadata.dump() + "}";
  send_json_text(response, 200, std::move(text));
}

std::variant<ApiServer::WatchRequest, ApiError> ApiServer::watch_request(const Call& call) const {
  auto selectors = Selectors::parse(call.param("labelSelector"), call.param("fieldSelector"),
                                    call.type->extra_field_labels);
  if (auto* error = std::get_if<ApiError>(&selectors)) return *error;
  WatchRequest wanted;
  wanted.filter = std::move(std::get<Selectors>(selectors));
  wanted.rv_text = call.param("resourceVersion");
  wanted.bookmarks = call.flag("allowWatchBookmarks");
  wanted.initial_events_end = call.flag("sendInitialEvents");
  wanted.send_initial = wanted.rv_text.empty() || wanted.rv_text == "0" || wanted.initial_events_end;
  if (!wanted.send_initial) {
    wanted.from_rv = parse_rv(wanted.rv_text);
    if (!wanted.from_rv) return bad_request("invalid resource version: " + wanted.rv_text);
  }
  if (const std::string t = call.param("timeoutSeconds"); !t.empty()) {
    if (auto seconds = parse_rv(t)) wanted.deadline = clock_.monotonic() + std::chrono::seconds(*seconds);
  }
  return wanted;
}

void ApiServer::watch(const Call& call, http::ServerResponse& response) {
  auto request = watch_request(call);
  if (auto* error = std::get_if<ApiError>(&request)) return send_error(response, *error);
  const WatchRequest& wanted = std::get<WatchRequest>(request);
  if (shutting_down_) return send_error(response, service_unavailable("the server is shutting down"));

  std::shared_ptr<WatchStream> stream;
  std::vector<ObjectPtr> initial;
  std::uint64_t start_rv = 0;
  std::uint64_t floor = 0;
  {
    std::lock_guard lock(mutex_);
    if (wanted.send_initial) {
      initial = store_.list(call.type->id(), call.ns);
      stream = store_.watch_from_now(call.type->id());
    } else if (*wanted.from_rv > store_.current_rv()) {
      // A version from the future (e.g. remembered from before a server restart): the real
      // server refuses it rather than silently waiting, so clients re-list.
      return send_error(response, too_large_resource_version(*wanted.from_rv, store_.current_rv()));
    } else {
      stream = store_.watch(call.type->id(), *wanted.from_rv);
    }
    start_rv = store_.current_rv();
    floor = store_.history_floor();
  }
  http::Headers headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-cache, private"}};
  if (!stream) {
    // Too old: the real server answers 200 and sends a single ERROR event.
    if (!response.begin_chunked(200, headers)) return;
    const ApiError gone =
        expired("too old resource version: " + wanted.rv_text + " (" + std::to_string(floor) + ")");
    write_watch_event(response, "ERROR", gone.body());
    return response.end_chunked();
  }
  auto release = [&] {
    std::lock_guard lock(mutex_);
    store_.unwatch(stream);
  };
  if (!response.begin_chunked(200, headers)) return release();
  bool alive = true;
  for (const auto& object : initial) {
    if (!wanted.filter.matches(*object)) continue;
    if (!(alive = send_watched(response, call, "ADDED", *object))) break;
  }
  if (alive && wanted.initial_events_end && wanted.bookmarks) {
    json end = bookmark(*call.type, call.version, start_rv);
    end["metadata"]["annotations"] = {{"k8s.io/initial-events-end", "true"}};
    alive = write_watch_event(response, "BOOKMARK", end);
  }
  if (alive) alive = stream_events(call, wanted, *stream, response);
  release();
  if (alive && !response.closing()) response.end_chunked();
}

bool ApiServer::stream_events(const Call& call, const WatchRequest& wanted, WatchStream& stream,
                              http::ServerResponse& response) {
  auto next_bookmark = clock_.monotonic() + options_.bookmark_interval;
  bool alive = true;
  while (alive) {
    const auto now = clock_.monotonic();
    if (now >= wanted.deadline || response.closing()) break;
    // Wake at least every 100 ms to notice a closed peer.
    auto until = std::min({wanted.deadline, now + std::chrono::milliseconds(100),
                           wanted.bookmarks ? next_bookmark : wanted.deadline});
    EventPtr event;
    const auto next = stream.next(clock_, event, until);
    if (next == WatchStream::Next::kClosed) break;
    if (next == WatchStream::Next::kIdle) {
      if (wanted.bookmarks && clock_.monotonic() >= next_bookmark) {
        alive =
            write_watch_event(response, "BOOKMARK", bookmark(*call.type, call.version, stream.progress()));
        next_bookmark = clock_.monotonic() + options_.bookmark_interval;
      }
      continue;
    }
    if (!call.ns.empty() && event->ns != call.ns) continue;
    if (auto seen = seen_as(*event, wanted.filter)) {
      alive = send_watched(response, call, seen->first, *seen->second);
    }
  }
  return alive;
}

bool ApiServer::send_watched(http::ServerResponse& response, const Call& call, const std::string& type,
                             const json& object) const {
  json relabelled;
  const json& at_version = shown(call, object, relabelled);
  if (!call.wants_table) return write_watch_event(response, type, at_version);
  return write_watch_event(response, type,
                           make_table(*call.type, call.version, {at_version}, "", "",
                                      include_object_of(call.param("includeObject")), clock_.now()));
}

}  // namespace eslease::kubeemu
