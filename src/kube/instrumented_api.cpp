#include "kube/instrumented_api.h"

#include <algorithm>

namespace eslease::kube {
namespace {

int status_of(const Status& s) {
  return s.ok() ? 200 : s.error().http_status;
}
template <typename T>
int status_of(const Result<T>& r) {
  return r.ok() ? 200 : r.error().http_status;
}

}  // namespace

InstrumentedApi::InstrumentedApi(Api& inner, double qps, int burst, RequestObserver observer, Clock& clock)
    : inner_(inner),
      qps_(qps),
      burst_(std::max(1, burst)),
      observer_(std::move(observer)),
      clock_(clock),
      tokens_(burst_),
      refilled_(clock.monotonic()) {}

void InstrumentedApi::take_token() {
  Millis wait{0};
  {
    std::lock_guard lock(mutex_);
    const MonoTime now = clock_.monotonic();
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - refilled_).count() * qps_);
    refilled_ = now;
    tokens_ -= 1;  // reserve now; a negative balance is the wait owed
    if (tokens_ < 0) wait = Millis(static_cast<Millis::rep>(-tokens_ / qps_ * 1000.0) + 1);
  }
  if (wait > Millis(0)) clock_.sleep_for(wait, std::stop_token());
}

template <typename T>
T InstrumentedApi::observed(std::string_view verb, const std::function<T()>& call) {
  take_token();
  const MonoTime started = clock_.monotonic();
  T result = call();
  if (observer_)
    observer_(verb, status_of(result), std::chrono::duration_cast<Millis>(clock_.monotonic() - started));
  return result;
}

Result<json> InstrumentedApi::get(const Resource& r, const std::string& ns, const std::string& name,
                                  const CallOptions& call) {
  return observed<Result<json>>("get", [&] { return inner_.get(r, ns, name, call); });
}
Result<ListPage> InstrumentedApi::list(const Resource& r, const std::string& ns, const ListOptions& options) {
  return observed<Result<ListPage>>("list", [&] { return inner_.list(r, ns, options); });
}
Result<json> InstrumentedApi::create(const Resource& r, const std::string& ns, const json& object,
                                     const CallOptions& call) {
  return observed<Result<json>>("create", [&] { return inner_.create(r, ns, object, call); });
}
Result<json> InstrumentedApi::update(const Resource& r, const json& object, const CallOptions& call) {
  return observed<Result<json>>("update", [&] { return inner_.update(r, object, call); });
}
Result<json> InstrumentedApi::update_status(const Resource& r, const json& object, const CallOptions& call) {
  return observed<Result<json>>("update", [&] { return inner_.update_status(r, object, call); });
}
Result<json> InstrumentedApi::patch(const Resource& r, const std::string& ns, const std::string& name,
                                    PatchType type, const json& patch, bool status_subresource,
                                    const CallOptions& call) {
  return observed<Result<json>>(
      "patch", [&] { return inner_.patch(r, ns, name, type, patch, status_subresource, call); });
}
Status InstrumentedApi::remove(const Resource& r, const std::string& ns, const std::string& name,
                               const DeleteOptions& options) {
  return observed<Status>("delete", [&] { return inner_.remove(r, ns, name, options); });
}
Status InstrumentedApi::watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                              const WatchHandler& on_event, std::stop_token stop) {
  // Only starting a watch costs a token; the stream itself is not rate-limited.
  return observed<Status>("watch", [&] { return inner_.watch(r, ns, options, on_event, stop); });
}

}  // namespace eslease::kube
