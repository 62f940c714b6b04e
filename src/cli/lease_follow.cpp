#include "cli/lease_follow.h"

#include "common/backoff.h"

namespace eslease::cli {

bool is_permanent(const Error& error) {
  switch (error.code) {
    case ErrorCode::kUnauthorized:
    case ErrorCode::kForbidden:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kInvalid:
      return true;
    default:
      return error.http_status == 400;
  }
}

Status follow_object(kube::Api& api, Clock& clock, const kube::Resource& resource, const std::string& ns,
                     const std::string& name, const FollowOptions& options, const ObjectObserver& observe,
                     const FollowErrorObserver& on_error, std::stop_token stop) {
  Backoff retry(BackoffPolicy{options.retry_initial, options.retry_max, 2.0});
  std::string resource_version = options.resource_version;
  const auto failed = [&](const Error& error) -> std::optional<Status> {
    if (stop.stop_requested()) return Status(make_error(ErrorCode::kCancelled, "stopped"));
    if (is_permanent(error)) return Status(error);
    if (on_error) on_error(error);
    if (!clock.sleep_for(retry.next(), stop)) return Status(make_error(ErrorCode::kCancelled, "stopped"));
    return std::nullopt;
  };

  while (!stop.stop_requested()) {
    if (resource_version.empty()) {
      auto current = api.get(resource, ns, name);
      if (!current.ok() && current.error().code != ErrorCode::kNotFound) {
        if (auto end = failed(current.error())) return *end;
        continue;
      }
      if (!current.ok()) {
        if (observe(std::nullopt)) return {};
        // Nothing to watch from: wait and read again (run waits so for a namespace's first
        // session).
        if (!clock.sleep_for(retry.next(), stop)) break;
        continue;
      }
      if (observe(*current)) return {};
      resource_version = kube::meta_string(*current, "resourceVersion");
    }

    kube::WatchOptions watch;
    watch.resource_version = resource_version;
    watch.field_selector = "metadata.name=" + name;
    watch.allow_bookmarks = true;
    watch.idle_timeout = options.idle_timeout;
    bool done = false;
    bool restart = false;  // read the Lease again before watching on
    bool any_event = false;
    std::optional<Error> stream_error;
    Status ended = api.watch(
        resource, ns, watch,
        [&](const kube::WatchEvent& event) {
          using Type = kube::WatchEvent::Type;
          any_event = true;
          switch (event.type) {
            case Type::kBookmark:
              if (auto rv = kube::meta_string(event.object, "resourceVersion"); !rv.empty())
                resource_version = rv;
              return true;
            case Type::kError: {
              // 410 Expired or another server-side end: read the current state again.
              const auto code = event.object.is_object() ? event.object.value("code", 0) : 0;
              if (code != 410) {
                stream_error = make_error(ErrorCode::kUnavailable,
                                          "the watch of " + name + " ended with an error event: " +
                                              event.object.value("message", std::string("no message")),
                                          code);
              }
              restart = true;
              return false;
            }
            case Type::kDeleted:
              done = observe(std::nullopt);
              restart = true;
              return false;
            case Type::kAdded:
            case Type::kModified:
              if (kube::meta_string(event.object, "name") != name) return true;
              if (auto rv = kube::meta_string(event.object, "resourceVersion"); !rv.empty())
                resource_version = rv;
              done = observe(event.object);
              if (!done) retry.reset();
              return !done;
          }
          return true;
        },
        stop);
    if (done) return {};
    if (stop.stop_requested()) break;
    if (!ended.ok() && ended.error().code == ErrorCode::kGone) {
      resource_version.clear();
      continue;
    }
    if (!ended.ok()) stream_error = ended.error();
    if (stream_error) {
      resource_version.clear();
      if (auto end = failed(*stream_error)) return *end;
      continue;
    }
    if (restart) resource_version.clear();
    // A stream the server ended cleanly (its timeout) continues from where it was; one that
    // ends at once, again and again, must not turn into a busy loop.
    if (!any_event && !clock.sleep_for(retry.next(), stop)) break;
  }
  return make_error(ErrorCode::kCancelled, "stopped");
}

}  // namespace eslease::cli
