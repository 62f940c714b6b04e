#include "kube/event_recorder.h"

#include <cstdio>

#include "common/log.h"
#include "common/text.h"
#include "common/thread_name.h"

namespace eslease::kube {
namespace {

constexpr std::size_t kMaxMessageBytes = 1024;  // what the API server accepts for a note

std::string truncate_utf8(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text;
}

std::string correlation_key(const ObjectReference& o, EventType type, const std::string& reason,
                            const std::string& message) {
  std::string key;
  for (const std::string* part : {&o.api_version, &o.kind, &o.ns, &o.name, &o.uid, &reason, &message}) {
    key += *part;
    key.push_back('\x1f');
  }
  key += type == EventType::kNormal ? "Normal" : "Warning";
  return key;
}

// An Event's involvedObject: the object it is about.
json involved_object(const ObjectReference& o) {
  return {{"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name},
          {"namespace", o.ns},           {"uid", o.uid},   {"resourceVersion", o.resource_version}};
}

}  // namespace

ObjectReference reference_to(const json& object) {
  ObjectReference ref;
  if (object.is_object()) {
    ref.api_version = object.value("apiVersion", "");
    ref.kind = object.value("kind", "");
  }
  ref.ns = meta_string(object, "namespace");
  ref.name = meta_string(object, "name");
  ref.uid = meta_string(object, "uid");
  ref.resource_version = meta_string(object, "resourceVersion");
  return ref;
}

EventRecorder::EventRecorder(Api& api, Clock& clock, EventRecorderOptions options)
    : api_(api), options_(std::move(options)), clock_(clock) {
  thread_ = std::jthread([this](std::stop_token stop) {
    name_this_thread("events");
    loop(stop);
  });
}

EventRecorder::~EventRecorder() {
  stop();
}

void EventRecorder::record(const ObjectReference& object, EventType type, std::string reason,
                           std::string message) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= options_.queue_capacity) {
      dropped_.fetch_add(1);
      return;
    }
    queue_.push_back(
        {object, type, std::move(reason), truncate_utf8(std::move(message), kMaxMessageBytes), clock_.now()});
  }
  cv_.notify_all();
}

bool EventRecorder::flush(Millis timeout) {
  std::unique_lock lock(mutex_);
  return clock_.wait_until(lock, cv_, clock_.monotonic() + timeout, {},
                           [this] { return queue_.empty() && !busy_; });
}

void EventRecorder::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  cv_.notify_all();
  thread_.join();
}

void EventRecorder::loop(std::stop_token stop) {
  while (true) {
    Pending next;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, stop, [this] { return !queue_.empty(); });
      if (queue_.empty()) return;  // stopped with nothing left to write
      next = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    // On the way out an event no longer waits for the rate limit to be free.
    while (!write(next, /*may_wait=*/!stop.stop_requested())) clock_.sleep_for(kBusyLimiterPoll, stop);
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

bool EventRecorder::write(const Pending& event, bool may_wait) {
  const std::string key = correlation_key(event.object, event.type, event.reason, event.message);
  const MonoTime now = clock_.monotonic();
  const std::string timestamp = format_rfc3339_seconds(event.time);
  auto found = correlated_.find(key);
  if (found != correlated_.end() && now - found->second.last_seen < options_.correlation_window) {
    Correlated& seen = found->second;
    json patch = {{"count", seen.count + 1}, {"lastTimestamp", timestamp}};
    auto patched =
        may_wait ? api_.patch_unless_busy(resources::events(), seen.ns, seen.name, PatchType::kMerge, patch)
                 : as_sent(api_.patch(resources::events(), seen.ns, seen.name, PatchType::kMerge, patch));
    if (patched.ok() && !*patched) return false;  // left for later
    if (patched.ok()) {
      seen.count += 1;
      seen.last_seen = now;
      return true;
    }
    if (patched.error().code != ErrorCode::kNotFound) {
      log::warn("event update failed", {{"reason", event.reason}, {"error", patched.error().describe()}});
      return true;
    }
    correlated_.erase(found);  // the Event expired on the server: start a new one
  }

  const std::string ns = event.object.ns.empty() ? "default" : event.object.ns;
  char suffix[32];
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(event.time.time_since_epoch()).count();
  std::snprintf(suffix, sizeof suffix, ".%llx", static_cast<unsigned long long>(nanos) + sequence_++);
  const std::string name = event.object.name + suffix;
  json body = {
      {"apiVersion", resources::events().api_version()},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"involvedObject", involved_object(event.object)},
      {"reason", event.reason},
      {"message", event.message},
      {"type", event.type == EventType::kNormal ? "Normal" : "Warning"},
      {"source", {{"component", options_.component}, {"host", options_.host}}},
      {"reportingComponent", options_.component},
      {"reportingInstance", options_.host},
      {"firstTimestamp", timestamp},
      {"lastTimestamp", timestamp},
      {"count", 1},
  };
  auto created = may_wait ? api_.create_unless_busy(resources::events(), ns, body)
                          : as_sent(api_.create(resources::events(), ns, body));
  if (created.ok() && !*created) return false;  // left for later
  if (!created.ok()) {
    log::warn("event create failed", {{"reason", event.reason}, {"error", created.error().describe()}});
    return true;
  }
  if (correlated_.size() >= options_.max_correlated) {
    for (auto it = correlated_.begin(); it != correlated_.end();) {
      it = now - it->second.last_seen >= options_.correlation_window ? correlated_.erase(it) : std::next(it);
    }
    if (correlated_.size() >= options_.max_correlated) correlated_.clear();
  }
  correlated_[key] = Correlated{ns, name, 1, now};
  return true;
}

}  // namespace eslease::kube
