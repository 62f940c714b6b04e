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

namespace {

Status stopped() {
  return make_error(ErrorCode::kCancelled, "stopped");
}

// One follow_object call: where it watches from, and the backoff between attempts.
class Follower {
 public:
  Follower(kube::Api& api, Clock& clock, const kube::Resource& resource, const std::string& ns,
           const std::string& name, const FollowOptions& options, const ObjectObserver& observe,
           const FollowErrorObserver& on_error, std::stop_token stop)
      : api_(api),
        clock_(clock),
        resource_(resource),
        ns_(ns),
        name_(name),
        options_(options),
        observe_(observe),
        on_error_(on_error),
        stop_(std::move(stop)),
        retry_(BackoffPolicy{Millis(200), Millis(2000), 2.0}),
        resource_version_(options.resource_version) {}

  Status run() {
    while (!stop_.stop_requested()) {
      if (resource_version_.empty()) {
        const Step read = read_current();
        if (read == Step::kEnd) return end_;
        if (read == Step::kAgain) continue;
      }
      if (watch_once() == Step::kEnd) return end_;
    }
    return stopped();
  }

 private:
  enum class Step { kGoOn, kAgain, kEnd };  // kEnd: return end_

  Step end(Status status) {
    end_ = std::move(status);
    return Step::kEnd;
  }

  // A read or a stream failed: the end when retrying cannot help, else after a backoff again.
  Step failed(const Error& error) {
    if (stop_.stop_requested()) return end(stopped());
    if (is_permanent(error)) return end(error);
    if (on_error_) on_error_(error);
    if (!clock_.sleep_for(retry_.next(), stop_)) return end(stopped());
    return Step::kAgain;
  }

  // GET: shows the object to the observer and watches on from its version.
  Step read_current() {
    auto current = api_.get(resource_, ns_, name_);
    if (!current.ok() && current.error().code != ErrorCode::kNotFound) return failed(current.error());
    if (!current.ok()) {
      if (observe_(std::nullopt)) return end({});
      // Missing (a namespace's first session is created just after its first grant): watched
      // from now, which the server starts with the object's current state, so its creation
      // is seen the moment it happens and nothing between the read and the watch is missed.
      return Step::kGoOn;
    }
    if (observe_(*current)) return end({});
    resource_version_ = kube::meta_string(*current, "resourceVersion");
    return Step::kGoOn;
  }

  // WATCH from resource_version_ until the stream ends; then how to go on.
  Step watch_once() {
    kube::WatchOptions watch;
    watch.resource_version = resource_version_;
    watch.field_selector = "metadata.name=" + name_;
    watch.allow_bookmarks = true;
    watch.idle_timeout = options_.idle_timeout;
    round_ = Round{};
    Status ended = api_.watch(
        resource_, ns_, watch, [this](const kube::WatchEvent& event) { return on_event(event); }, stop_);
    if (round_.done) return end({});
    if (stop_.stop_requested()) return end(stopped());
    if (!ended.ok() && ended.error().code == ErrorCode::kGone) {
      resource_version_.clear();
      return Step::kGoOn;
    }
    if (!ended.ok()) round_.stream_error = ended.error();
    if (round_.stream_error) {
      resource_version_.clear();
      return failed(*round_.stream_error);
    }
    if (round_.restart) resource_version_.clear();
    // A stream the server ended cleanly (its timeout) continues from where it was; one that
    // ends at once, again and again, must not turn into a busy loop.
    if (!round_.any_event && !clock_.sleep_for(retry_.next(), stop_)) return end(stopped());
    return Step::kGoOn;
  }

  // One event of the stream; false ends it.
  bool on_event(const kube::WatchEvent& event) {
    using Type = kube::WatchEvent::Type;
    round_.any_event = true;
    switch (event.type) {
      case Type::kBookmark:
        if (auto rv = kube::meta_string(event.object, "resourceVersion"); !rv.empty()) resource_version_ = rv;
        return true;
      case Type::kError: {
        // 410 Expired or another server-side end: read the current state again.
        const auto code = event.object.is_object() ? event.object.value("code", 0) : 0;
        if (code != 410) {
          round_.stream_error = make_error(ErrorCode::kUnavailable,
                                           "the watch of " + name_ + " ended with an error event: " +
                                               event.object.value("message", std::string("no message")),
                                           code);
        }
        round_.restart = true;
        return false;
      }
      case Type::kDeleted:
        round_.done = observe_(std::nullopt);
        round_.restart = true;
        return false;
      case Type::kAdded:
      case Type::kModified:
        if (kube::meta_string(event.object, "name") != name_) return true;
        if (auto rv = kube::meta_string(event.object, "resourceVersion"); !rv.empty()) resource_version_ = rv;
        round_.done = observe_(event.object);
        if (!round_.done) retry_.reset();
        return !round_.done;
    }
    return true;
  }

  // What the current stream brought.
  struct Round {
    bool done = false;     // the observer asked to stop
    bool restart = false;  // read the object again before watching on
    bool any_event = false;
    std::optional<Error> stream_error;
  };

  kube::Api& api_;
  Clock& clock_;
  const kube::Resource& resource_;
  const std::string& ns_;
  const std::string& name_;
  const FollowOptions& options_;
  const ObjectObserver& observe_;
  const FollowErrorObserver& on_error_;
  std::stop_token stop_;
  Backoff retry_;
  std::string resource_version_;
  Round round_;
  Status end_;
};

}  // namespace

Status follow_object(kube::Api& api, Clock& clock, const kube::Resource& resource, const std::string& ns,
                     const std::string& name, const FollowOptions& options, const ObjectObserver& observe,
                     const FollowErrorObserver& on_error, std::stop_token stop) {
  return Follower(api, clock, resource, ns, name, options, observe, on_error, std::move(stop)).run();
}

}  // namespace eslease::cli
