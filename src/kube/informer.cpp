#include "kube/informer.h"

#include "common/backoff.h"
#include "common/log.h"
#include "common/thread_name.h"
#include "kube/status.h"

namespace eslease::kube {
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

Informer::Informer(Api& api, Clock& clock, Resource resource, InformerOptions options, InformerStore& store)
    : api_(api), resource_(std::move(resource)), options_(std::move(options)), store_(store), clock_(clock) {}

Informer::~Informer() {
  stop();
}

void Informer::start() {
  // "watch:pods", "watch:leases.eslease.io" (cut to 15 bytes): which informer a thread is.
  std::string name = "watch:" + resource_.plural + (resource_.group.empty() ? "" : "." + resource_.group);
  thread_ = std::jthread([this, name = std::move(name)](std::stop_token stop) {
    name_this_thread(name);
    run(stop);
  });
}

void Informer::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

bool Informer::wait_for_sync(Millis timeout, std::stop_token stop) const {
  std::unique_lock lock(mutex_);
  const MonoTime deadline = timeout == Millis::max() ? MonoTime::max() : clock_.monotonic() + timeout;
  return clock_.wait_until(lock, sync_cv_, deadline, stop, [this] { return synced_.load(); });
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

namespace {

// The pause before trying again: the backoff's, or longer when the server asked for it.
Millis retry_delay(Backoff& backoff, const Error& error) {
  Millis delay = backoff.next();
  if (error.retry_after) delay = std::max(delay, *error.retry_after);
  return delay;
}

// Why a watch that failed is started again, logged.
RestartReason failed_watch_reason(const Error& error, const std::string& resource) {
  if (error.code == ErrorCode::kTimeout && error.http_status == 0) {  // silence, not a 504
    log::info("informer watch silent past idle timeout, reconnecting", {{"resource", resource}});
    return RestartReason::kIdle;
  }
  log::warn("informer watch failed", {{"resource", resource}, {"error", error.describe()}});
  return RestartReason::kError;
}

}  // namespace

void Informer::log_list_failure(const Error& error) const {
  if (error.code == ErrorCode::kNotFound && !resource_.group.empty() &&
      !resource_.group.ends_with("k8s.io")) {
    // The API server does not serve the resource: its CustomResourceDefinition is not
    // installed (yet). Said in words; the list is tried again until it is.
    log::warn("the API server does not serve this resource; is its CustomResourceDefinition installed?",
              {{"resource", resource_.plural + "." + resource_.group},
               {"apiVersion", resource_.api_version()},
               {"hint", "kubectl apply -f crds/ (the Helm chart installs it)"}});
    return;
  }
  log::warn("informer list failed", {{"resource", resource_.plural}, {"error", error.describe()}});
}

void Informer::run(std::stop_token stop) {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      Status listed = relist(stop);
      if (!listed.ok()) {
        if (stop.stop_requested()) break;
        log_list_failure(listed.error());
        count_restart(listed.error().code == ErrorCode::kGone ? RestartReason::kExpired
                                                              : RestartReason::kError);
        clock_.sleep_for(retry_delay(backoff, listed.error()), stop);
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
    count_restart(failed_watch_reason(error, resource_.plural));
    // A watch that could not even start may face a different server (restarted, restored)
    // whose history does not contain our resourceVersion: start over from a list.
    if (outcome.events == 0) need_list = true;
    clock_.sleep_for(retry_delay(backoff, error), stop);
  }
}

Status Informer::relist(std::stop_token stop) {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  // Each object is decoded into the store as its page arrives: only one page of JSON is in
  // memory at a time.
  store_.begin_relist();
  auto version = list_each(api_, resource_, options_.ns, list_options,
                           [&](const json& object) { store_.stage(object); });
  if (!version.ok()) return version.error();
  if (stop.stop_requested()) return make_error(ErrorCode::kCancelled, "informer stopped");
  set_resource_version(*version);
  store_.commit_relist();

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
  watch_options.timeout_seconds =
      static_cast<int>(static_cast<double>(options_.min_watch_timeout.count()) * jitter(1.0, 2.0));
  outcome.status = api_.watch(
      resource_, options_.ns, watch_options,
      [&](const WatchEvent& event) {
        if (event.type == WatchEvent::Type::kError) {
          // Not progress: a watch that only ever ends in an error keeps backing off.
          outcome.error_event = event.object;
          return false;
        }
        ++outcome.events;
        apply(event);
        return !stop.stop_requested();
      },
      stop);
  return outcome;
}

void Informer::apply(const WatchEvent& event) {
  set_resource_version(meta_string(event.object, "resourceVersion"));
  if (event.type == WatchEvent::Type::kBookmark) return;
  if (event.type == WatchEvent::Type::kDeleted) {
    store_.remove(event.object);
  } else {
    store_.upsert(event.object);
  }
}

}  // namespace eslease::kube
