#include "kube/informer.h"

#include <random>
#include <unordered_map>

#include "common/log.h"
#include "kube/status.h"

namespace eslease::kube {
namespace {

bool same_version(const json& a, const json& b) {
  return meta_string(a, "uid") == meta_string(b, "uid") &&
         meta_string(a, "resourceVersion") == meta_string(b, "resourceVersion");
}

}  // namespace

const char* to_string(RestartReason reason) {
  switch (reason) {
    case RestartReason::kExpired:
      return "expired";
    case RestartReason::kClosed:
      return "closed";
    case RestartReason::kIdle:
      return "idle";
    case RestartReason::kError:
      return "error";
  }
  return "unknown";
}

Informer::Informer(Api& api, Resource resource, InformerOptions options, InformerHandlers handlers)
    : api_(api),
      resource_(std::move(resource)),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      clock_(options_.clock ? *options_.clock : SystemClock::instance()) {}

Informer::~Informer() {
  stop();
}

void Informer::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Informer::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return sync_cv_.wait_for(lock, timeout, [this] { return synced_.load(); });
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

void Informer::set_resource_version(std::string rv) {
  if (rv.empty()) return;
  std::lock_guard lock(mutex_);
  resource_version_ = std::move(rv);
}

void Informer::count_restart(RestartReason reason) {
  restarts_[static_cast<int>(reason)].fetch_add(1);
  if (options_.on_restart) options_.on_restart(reason);
}

json Informer::prepare(json object) const {
  return options_.transform ? options_.transform(std::move(object)) : object;
}

void Informer::run(std::stop_token stop) {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      Status listed = relist(stop);
      if (!listed.ok()) {
        if (stop.stop_requested()) break;
        log::warn("informer list failed",
                  {{"resource", resource_.plural}, {"error", listed.error().describe()}});
        count_restart(listed.error().code == ErrorCode::kGone ? RestartReason::kExpired
                                                              : RestartReason::kError);
        Millis delay = backoff.next();
        if (listed.error().retry_after) delay = std::max(delay, *listed.error().retry_after);
        clock_.sleep_for(delay, stop);
        continue;
      }
      need_list = false;
    }
    const MonoTime started = clock_.monotonic();
    WatchOutcome outcome = watch_once(stop);
    if (stop.stop_requested()) break;
    if (outcome.events > 0) backoff.reset();

    if (outcome.error_event) {
      auto status = status_from_json(*outcome.error_event);
      if (status && status->code == 410) {
        count_restart(RestartReason::kExpired);
        need_list = true;
        continue;
      }
      log::warn("informer watch error event", {{"resource", resource_.plural},
                                               {"message", status ? status->message : "unparseable status"}});
      count_restart(RestartReason::kError);
      clock_.sleep_for(backoff.next(), stop);
      continue;
    }
    if (outcome.status.ok()) {
      // The server ended the watch (timeoutSeconds) or closed it. Reconnect at once, unless
      // it ends watches as soon as they start.
      count_restart(RestartReason::kClosed);
      if (outcome.events == 0 && clock_.monotonic() - started < std::chrono::seconds(1)) {
        clock_.sleep_for(backoff.next(), stop);
      }
      continue;
    }
    const Error& error = outcome.status.error();
    if (error.code == ErrorCode::kGone) {
      count_restart(RestartReason::kExpired);
      need_list = true;
      continue;
    }
    if (error.code == ErrorCode::kTimeout && error.http_status == 0) {  // silence, not a 504
      log::info("informer watch silent past idle timeout, reconnecting", {{"resource", resource_.plural}});
      count_restart(RestartReason::kIdle);
    } else {
      log::warn("informer watch failed", {{"resource", resource_.plural}, {"error", error.describe()}});
      count_restart(RestartReason::kError);
    }
    // A watch that could not even start may face a different server (restarted, restored)
    // whose history does not contain our resourceVersion: start over from a list.
    if (outcome.events == 0) need_list = true;
    Millis delay = backoff.next();
    if (error.retry_after) delay = std::max(delay, *error.retry_after);
    clock_.sleep_for(delay, stop);
  }
}

Status Informer::relist(std::stop_token stop) {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  auto listed = list_all(api_, resource_, options_.ns, list_options, options_.transform);
  if (!listed.ok()) return listed.error();
  if (stop.stop_requested()) return make_error(ErrorCode::kCancelled, "informer stopped");

  std::unordered_map<std::string, json> fresh;
  fresh.reserve(listed->items.size());
  for (auto& item : listed->items) {
    std::string key = object_key(item);
    if (key.empty()) continue;
    fresh.insert_or_assign(std::move(key), std::move(item));  // transformed page by page
  }
  listed->items.clear();
  listed->items.shrink_to_fit();

  // Decide what changed before swapping, then tell handlers outside the cache lock.
  std::vector<std::pair<std::string, const json*>> added;
  std::vector<std::pair<json, const json*>> updated;
  std::vector<json> deleted;
  std::unordered_map<std::string, json> old = cache_.replace(std::move(fresh));
  // `fresh` now lives in the cache; the informer thread is its only writer, so reading it
  // through for_each below is safe.
  cache_.for_each([&](const std::string& key, const json& object) {
    auto previous = old.find(key);
    if (previous == old.end()) {
      added.emplace_back(key, &object);
    } else if (meta_string(previous->second, "uid") != meta_string(object, "uid")) {
      deleted.push_back(std::move(previous->second));  // replaced under the same name
      added.emplace_back(key, &object);
      old.erase(previous);
    } else if (!same_version(previous->second, object)) {
      updated.emplace_back(std::move(previous->second), &object);
      old.erase(previous);
    } else {
      old.erase(previous);
    }
  });
  for (auto& [key, object] : old) deleted.push_back(std::move(object));
  set_resource_version(listed->resource_version);

  if (handlers_.on_delete)
    for (const auto& object : deleted) handlers_.on_delete(object);
  if (handlers_.on_update)
    for (const auto& [before, after] : updated) handlers_.on_update(before, *after);
  if (handlers_.on_add)
    for (const auto& [key, object] : added) handlers_.on_add(*object);

  if (!synced_.exchange(true)) {
    std::lock_guard lock(mutex_);
    sync_cv_.notify_all();
  }
  return {};
}

Informer::WatchOutcome Informer::watch_once(std::stop_token stop) {
  WatchOutcome outcome;
  WatchOptions watch_options;
  watch_options.resource_version = resource_version();
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.allow_bookmarks = true;
  watch_options.idle_timeout = options_.idle_timeout;
  {
    thread_local std::mt19937 rng{std::random_device{}()};
    std::uniform_real_distribution<double> factor(1.0, 2.0);
    watch_options.timeout_seconds =
        static_cast<int>(static_cast<double>(options_.min_watch_timeout.count()) * factor(rng));
  }
  outcome.status = api_.watch(
      resource_, options_.ns, watch_options,
      [&](const WatchEvent& event) {
        ++outcome.events;
        if (event.type == WatchEvent::Type::kError) {
          outcome.error_event = event.object;
          return false;
        }
        apply(event);
        return !stop.stop_requested();
      },
      stop);
  return outcome;
}

void Informer::apply(const WatchEvent& event) {
  set_resource_version(meta_string(event.object, "resourceVersion"));
  if (event.type == WatchEvent::Type::kBookmark) return;
  std::string key = object_key(event.object);
  if (key.empty()) return;
  json object = prepare(event.object);
  if (event.type == WatchEvent::Type::kDeleted) {
    if (cache_.erase(key) && handlers_.on_delete) handlers_.on_delete(object);
    return;
  }
  auto previous = cache_.put(key, object);
  if (previous && same_version(*previous, object)) return;  // already seen (e.g. via a re-list)
  if (!previous) {
    if (handlers_.on_add) handlers_.on_add(object);
  } else if (meta_string(*previous, "uid") != meta_string(object, "uid")) {
    if (handlers_.on_delete) handlers_.on_delete(*previous);
    if (handlers_.on_add) handlers_.on_add(object);
  } else if (handlers_.on_update) {
    handlers_.on_update(*previous, object);
  }
}

}  // namespace eslease::kube
