#include "kube/instrumented_api.h"

#include <algorithm>
#include <atomic>
#include <cmath>

namespace eslease::kube {
namespace {

int status_of(const Status& s) {
  return s.ok() ? 200 : s.error().http_status;
}
template <typename T>
int status_of(const Result<T>& r) {
  return r.ok() ? 200 : r.error().http_status;
}

// A stop token that fires when either of two does: the process's stop and a watch's own.
class EitherStop {
 public:
  EitherStop(std::stop_token a, std::stop_token b)
      : a_(std::move(a), [this] { source_.request_stop(); }),
        b_(std::move(b), [this] { source_.request_stop(); }) {}
  std::stop_token token() const { return source_.get_token(); }

 private:
  std::stop_source source_;
  std::stop_callback<std::function<void()>> a_;
  std::stop_callback<std::function<void()>> b_;
};

// Counts one call in `count` (when given) for as long as it lives.
class CountedWhileAlive {
 public:
  explicit CountedWhileAlive(std::atomic<int>* count) : count_(count) {
    if (count_) count_->fetch_add(1);
  }
  ~CountedWhileAlive() {
    if (count_) count_->fetch_sub(1);
  }
  CountedWhileAlive(const CountedWhileAlive&) = delete;
  CountedWhileAlive& operator=(const CountedWhileAlive&) = delete;

 private:
  std::atomic<int>* count_;
};

}  // namespace

// ---------------------------------------------------------------------------------------

TokenBucket::TokenBucket(double qps, int burst, Clock& clock)
    : qps_(qps),
      burst_(static_cast<double>(std::max(1, burst))),
      reserve_(std::floor(burst_ / 2)),
      clock_(clock),
      tokens_(burst_),
      refilled_(clock.monotonic()) {}

void TokenBucket::refill_locked() {
  const MonoTime now = clock_.monotonic();
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  tokens_ = std::min(burst_, tokens_ + std::max(0.0, elapsed) * qps_);
  refilled_ = now;
}

bool TokenBucket::take_unless_busy() {
  if (qps_ <= 0) return true;
  std::lock_guard lock(mutex_);
  refill_locked();
  if (tokens_ < 1 + reserve_) return false;
  tokens_ -= 1;
  return true;
}

Status TokenBucket::take(Millis max_wait, std::stop_token stop) {
  if (qps_ <= 0) return {};
  Millis wait{0};
  {
    std::lock_guard lock(mutex_);
    refill_locked();
    if (tokens_ < 1) {
      // The time until this caller's token exists, counting the tokens promised to the
      // callers already waiting.
      wait = Millis(static_cast<Millis::rep>(std::ceil((1 - tokens_) / qps_ * 1000.0)));
      if (wait > max_wait)
        return make_error(ErrorCode::kTooManyRequests, "client-side rate limit: a token would take " +
                                                           std::to_string(wait.count()) +
                                                           " ms, longer than the call may wait (" +
                                                           std::to_string(max_wait.count()) + " ms)");
    }
    tokens_ -= 1;  // reserved now, so later callers queue behind this one
  }
  if (wait > Millis(0) && !clock_.sleep_for(wait, stop)) {
    std::lock_guard lock(mutex_);
    tokens_ = std::min(burst_, tokens_ + 1);  // give the unused reservation back
    return make_error(ErrorCode::kCancelled, "stopped while waiting for the client-side rate limit");
  }
  return {};
}

// ---------------------------------------------------------------------------------------

InstrumentedApi::InstrumentedApi(Api& inner, InstrumentedApiOptions options, Clock& clock)
    : inner_(inner),
      options_(std::move(options)),
      clock_(clock),
      bucket_(options_.qps, options_.burst, clock) {}

Status InstrumentedApi::wait_for_token(const CallOptions& call, std::stop_token stop) {
  Millis max_wait = options_.max_wait;
  if (call.timeout && *call.timeout > Millis(0)) max_wait = std::min(max_wait, *call.timeout);
  return bucket_.take(max_wait, std::move(stop));
}

void InstrumentedApi::report(std::string_view verb, int status, MonoTime started) {
  if (options_.observer)
    options_.observer(verb, status, std::chrono::duration_cast<Millis>(clock_.monotonic() - started));
}

template <typename T>
T InstrumentedApi::observed(std::string_view verb, const CallOptions& call, const std::function<T()>& send) {
  const CountedWhileAlive hand_over(call.hands_over ? &hand_overs_ : nullptr);
  if (auto waited = wait_for_token(call, options_.stop); !waited.ok()) return waited.error();
  const MonoTime started = clock_.monotonic();
  T result = send();
  report(verb, status_of(result), started);
  return result;
}

Result<json> InstrumentedApi::get(const Resource& r, const std::string& ns, const std::string& name,
                                  const CallOptions& call) {
  return observed<Result<json>>("get", call, [&] { return inner_.get(r, ns, name, call); });
}

Result<ListPage> InstrumentedApi::list(const Resource& r, const std::string& ns, const ListOptions& options) {
  return observed<Result<ListPage>>("list", options.call, [&] { return inner_.list(r, ns, options); });
}

Result<json> InstrumentedApi::create(const Resource& r, const std::string& ns, const json& object,
                                     const CallOptions& call) {
  return observed<Result<json>>("create", call, [&] { return inner_.create(r, ns, object, call); });
}

Result<json> InstrumentedApi::update(const Resource& r, const json& object, const CallOptions& call) {
  return observed<Result<json>>("update", call, [&] { return inner_.update(r, object, call); });
}

Result<json> InstrumentedApi::update_status(const Resource& r, const json& object, const CallOptions& call) {
  return observed<Result<json>>("update", call, [&] { return inner_.update_status(r, object, call); });
}

Result<json> InstrumentedApi::patch(const Resource& r, const std::string& ns, const std::string& name,
                                    PatchType type, const json& patch, bool status_subresource,
                                    const CallOptions& call) {
  return observed<Result<json>>(
      "patch", call, [&] { return inner_.patch(r, ns, name, type, patch, status_subresource, call); });
}

Status InstrumentedApi::remove(const Resource& r, const std::string& ns, const std::string& name,
                               const DeleteOptions& options) {
  return observed<Status>("delete", options.call, [&] { return inner_.remove(r, ns, name, options); });
}

Result<std::optional<json>> InstrumentedApi::unless_busy(std::string_view verb,
                                                         const std::function<Result<json>()>& send) {
  // A hand-over under way goes first; so does every write that cannot wait.
  if (hand_overs_.load() > 0 || !bucket_.take_unless_busy()) return std::optional<json>();
  const MonoTime started = clock_.monotonic();
  Result<json> result = send();
  report(verb, status_of(result), started);
  return as_sent(std::move(result));
}

Result<std::optional<json>> InstrumentedApi::create_unless_busy(const Resource& r, const std::string& ns,
                                                                const json& object) {
  return unless_busy("create", [&] { return inner_.create(r, ns, object); });
}

Result<std::optional<json>> InstrumentedApi::patch_unless_busy(const Resource& r, const std::string& ns,
                                                               const std::string& name, PatchType type,
                                                               const json& patch, bool status_subresource,
                                                               const CallOptions& call) {
  return unless_busy("patch",
                     [&] { return inner_.patch(r, ns, name, type, patch, status_subresource, call); });
}

Status InstrumentedApi::watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                              const WatchHandler& on_event, std::stop_token stop) {
  {
    EitherStop either(options_.stop, stop);
    if (auto waited = wait_for_token(CallOptions{}, either.token()); !waited.ok()) return waited.error();
  }
  const MonoTime started = clock_.monotonic();
  std::atomic<bool> reported{false};
  const WatchHandler first_event_reports = [&](const WatchEvent& event) {
    if (!reported.exchange(true)) report("watch", 200, started);
    return on_event(event);
  };
  Status result = inner_.watch(r, ns, options, first_event_reports, stop);
  const bool stopped = !result.ok() && result.error().code == ErrorCode::kCancelled && stop.stop_requested();
  if (!reported.load() && !stopped) report("watch", status_of(result), started);
  return result;
}

}  // namespace eslease::kube
