// An Api decorator that reports every call (verb, HTTP status, duration) and holds the
// caller to a client-side rate limit (a token bucket of qps and burst, as client-go's
// default limiter): a busy controller must not flood the API server.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string_view>

#include "common/clock.h"
#include "kube/api.h"

namespace eslease::kube {

using RequestObserver =
    std::function<void(std::string_view verb, int status, std::chrono::milliseconds duration)>;

class InstrumentedApi final : public Api {
 public:
  InstrumentedApi(Api& inner, double qps, int burst, RequestObserver observer, Clock& clock);

  Result<json> get(const Resource& r, const std::string& ns, const std::string& name,
                   const CallOptions& call = {}) override;
  Result<ListPage> list(const Resource& r, const std::string& ns, const ListOptions& options = {}) override;
  Result<json> create(const Resource& r, const std::string& ns, const json& object,
                      const CallOptions& call = {}) override;
  Result<json> update(const Resource& r, const json& object, const CallOptions& call = {}) override;
  Result<json> update_status(const Resource& r, const json& object, const CallOptions& call = {}) override;
  Result<json> patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
                     const json& patch, bool status_subresource = false,
                     const CallOptions& call = {}) override;
  Status remove(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {}) override;
  Status watch(const Resource& r, const std::string& ns, const WatchOptions& options,
               const WatchHandler& on_event, std::stop_token stop) override;

 private:
  void take_token();
  template <typename T>
  T observed(std::string_view verb, const std::function<T()>& call);

  Api& inner_;
  double qps_;
  double burst_;
  RequestObserver observer_;
  Clock& clock_;
  std::mutex mutex_;
  double tokens_;
  MonoTime refilled_;
};

}  // namespace eslease::kube
