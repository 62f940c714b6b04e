// An Api decorator that reports every request it sends (verb, HTTP status, duration) and
// holds the caller to a client-side rate limit, as client-go's default limiter does: a busy
// controller must not flood the API server. It knows nothing of Prometheus; the caller
// passes a callback (metrics::Metrics::kube_request_observer() in the controller).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string_view>

#include "common/clock.h"
#include "kube/api.h"

namespace eslease::kube {

// verb: get, list, create, update (update_status too), patch, delete or watch. status: the
// HTTP status, 200 on success, 0 when no answer came. duration: the call itself, without
// the time spent waiting for the rate limiter.
using RequestObserver =
    std::function<void(std::string_view verb, int status, std::chrono::milliseconds duration)>;

// client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter): `burst` tokens,
// refilled at `qps` per second; each request takes one and waits while none is left.
// Tokens are reserved in call order, so waiters are served first come, first served; a
// wait that is abandoned (stop) gives its token back. Thread-safe.
class TokenBucket {
 public:
  // qps <= 0 turns limiting off. burst < 1 counts as 1.
  TokenBucket(double qps, int burst, Clock& clock);

  // Takes a token, waiting for it on the clock. kTooManyRequests (at once, taking nothing)
  // when the wait would exceed `max_wait`; kCancelled when `stop` is requested meanwhile.
  Status take(Millis max_wait, std::stop_token stop);
  // For a write that can wait: takes a token only while more than the reserve is free, and
  // never waits; false, taking nothing, otherwise. Half the burst is kept for the writes that
  // cannot wait, so the first moments of a burst of hand-overs are theirs.
  bool take_unless_busy();

 private:
  // Adds the tokens earned since the last refill. Needs mutex_.
  void refill_locked();

  const double qps_;
  const double burst_;
  const double reserve_;  // tokens a write that can wait leaves in the bucket
  Clock& clock_;
  std::mutex mutex_;
  double tokens_;  // negative: tokens already promised to waiters
  MonoTime refilled_;
};

struct InstrumentedApiOptions {
  double qps = 200;
  int burst = 400;
  RequestObserver observer;  // may be empty
  // A requested stop ends every wait for a token at once (kCancelled): shutdown is never
  // held up by the limiter. Pass the process's stop token.
  std::stop_token stop;
  // The longest a call without a timeout of its own waits for a token (a call with
  // CallOptions::timeout waits at most that long). A longer wait fails at once with
  // kTooManyRequests, so an overloaded controller sheds load instead of queueing forever.
  Millis max_wait{std::chrono::seconds(30)};
};

// Writes that can wait (patch_unless_busy, create_unless_busy) yield twice: they leave half
// the burst in the bucket for every other call (TokenBucket::take_unless_busy), and they are
// left for later while a hand-over (CallOptions::hands_over) is waiting for its token or in
// flight, so in a burst of
// deaths the API server, not only the limiter, serves the successors first. (Only hand-overs:
// in a cold start, where every write is needed before the claims have settled, bookkeeping
// and grants share the server.)
class InstrumentedApi final : public Api {
 public:
  // `inner` and `clock` must outlive this object.
  InstrumentedApi(Api& inner, InstrumentedApiOptions options, Clock& clock);

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
  Result<std::optional<json>> create_unless_busy(const Resource& r, const std::string& ns,
                                                 const json& object) override;
  Result<std::optional<json>> patch_unless_busy(const Resource& r, const std::string& ns,
                                                const std::string& name, PatchType type, const json& patch,
                                                bool status_subresource = false,
                                                const CallOptions& call = {}) override;
  // Only starting a watch takes a token; its events are never limited. The watch is
  // reported once: when its first event arrives (200, the time to get there), or, if none
  // came, when it ends (its status). A watch ended by `stop` before any event is not a
  // request the server answered and is not reported.
  Status watch(const Resource& r, const std::string& ns, const WatchOptions& options,
               const WatchHandler& on_event, std::stop_token stop) override;

 private:
  Status wait_for_token(const CallOptions& call, std::stop_token stop);
  void report(std::string_view verb, int status, MonoTime started);
  template <typename T>
  T observed(std::string_view verb, const CallOptions& call, const std::function<T()>& send);
  // Sends a write that can wait, unless the client is busy (nullopt: not sent).
  Result<std::optional<json>> unless_busy(std::string_view verb, const std::function<Result<json>()>& send);

  Api& inner_;
  InstrumentedApiOptions options_;
  Clock& clock_;
  TokenBucket bucket_;
  std::atomic<int> hand_overs_{0};  // hand-overs waiting for a token or in flight
};

}  // namespace eslease::kube
