// The emulator's request handling, independent of sockets: one EsApi answers one
// request at a time from any thread. The HTTP server (es_emulator.h) only moves bytes.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "emulators/es/faults.h"
#include "emulators/es/store.h"

namespace eslease::esemu {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct ApiRequest {
  std::string method = "GET";
  std::string path = "/";  // still percent-encoded
  std::string query;       // after '?', still percent-encoded
  HeaderList headers;
  std::string body;
  std::optional<std::string> header(std::string_view name) const;
};

struct ApiResponse {
  int status = 200;
  HeaderList headers;
  std::string body;
  bool drop = false;  // close the connection without answering (fault injection)
  std::optional<std::string> header(std::string_view name) const;
};

// A real engine's answer to a request, or nullopt when it gave none (refused, reset, timed out).
using Upstream = std::function<std::optional<ApiResponse>(const ApiRequest&)>;

struct ApiOptions {
  std::optional<std::pair<std::string, std::string>> basic_auth;  // user, password
  std::optional<std::string> api_key;                             // "id:key"
  // When set, the fault proxy: every request is answered by this real engine instead of the
  // emulator's store, under the same fault rules and counters (auth is the engine's then).
  Upstream upstream;
};

class EsApi {
 public:
  // What an injected delay holds back. kRequest: a slow node, which gets to the request
  // whether or not its client still waits. kAnswer: the answer of an applied write, given
  // up as soon as its client has left.
  enum class Hold { kRequest, kAnswer };
  // Waits out an injected delay, less when the server stops (or, for kAnswer, when the
  // client leaves). Returns whether the client is still there to be answered.
  using Sleeper = std::function<bool(std::chrono::milliseconds, Hold)>;
  // Every reading of time (timestamps, the refresh schedule, gc_deletes, `took`) asks `clock`.
  explicit EsApi(ApiOptions options = {}, Clock& clock = SystemClock::instance());

  // Answers one request. Injected latency is waited through `sleep`; by default it sleeps
  // on the clock.
  ApiResponse handle(const ApiRequest& request, const Sleeper& sleep = {});

  Store& store() { return store_; }

 private:
  ApiResponse handle_admin(const ApiRequest& request, const std::string& path);
  // The emulator's own answer to a routed request.
  ApiResponse emulate(const ApiRequest& request, const Sleeper& sleep);
  // The real engine's answer, as the fault proxy passes it on.
  ApiResponse forward(const ApiRequest& request, const Sleeper& sleep);
  // Counts a request of `op`, lets the fault rules strike before it, has `perform` answer it,
  // and lets them strike again after a write it applied.
  ApiResponse under_faults(const std::string& op, const std::string& index, const Sleeper& sleep,
                           const std::function<ApiResponse()>& perform);
  std::optional<ApiResponse> check_auth(const ApiRequest& request);
  // The answer of a write that succeeded: lost when its client left during an injected
  // delay or when an after_apply rule strikes, and then counted.
  ApiResponse answer_applied_write(const std::string& op, ApiResponse answer, bool client_left,
                                   const Sleeper& sleep);
  // Waits out an injected delay through `sleep`, or on the clock; false when the client left.
  bool wait_out(const Sleeper& sleep, int delay_ms, Hold hold);
  long long now_millis() const;

  ApiOptions options_;
  Clock& clock_;
  Store store_;
  Faults faults_;
  Stats stats_;
};

}  // namespace eslease::esemu
