// A small embedded HTTP/1.1 server on Boost.Beast: one thread per connection, keep-alive,
// chunked streaming responses, optional TLS. It serves the two emulators and the
// controller's /metrics, /healthz and /readyz endpoints.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/result.h"
#include "http/transport.h"

namespace eslease::http {

struct ServerRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // raw request target, e.g. "/idx/_doc/a%2Fb?refresh=true"
  std::string path;    // target before '?', still percent-encoded
  std::string query;   // target after '?', still percent-encoded
  Headers headers;
  std::string body;
  std::string remote;  // "127.0.0.1:54321"
  std::optional<std::string> header(std::string_view name) const { return find_header(headers, name); }
};

// What a handler uses to answer. Exactly one of send(), the chunked sequence, or
// drop_connection() should be used per request; if the handler returns without any of
// them the server answers 500.
class ServerResponse {
 public:
  virtual ~ServerResponse() = default;
  virtual void send(int status, Headers headers, std::string body) = 0;
  // Starts a chunked response. Returns false when the client has gone away.
  virtual bool begin_chunked(int status, Headers headers) = 0;
  // Writes one chunk and flushes it. Returns false when the client has gone away.
  virtual bool write_chunk(std::string_view data) = 0;
  virtual void end_chunked() = 0;
  // Closes the connection at once without (further) response bytes: fault injection.
  virtual void drop_connection() = 0;
  // True once the server is stopping or the peer closed; long-running handlers poll it.
  virtual bool closing() const = 0;
  // Waits until closing() or until `timeout` has passed, and returns closing(). A handler
  // that answers late waits here, so that the server's stop or the client's leaving ends
  // the wait at once. The server's own responses wait on the socket; this fallback, for
  // responses without one (test doubles), looks every few milliseconds.
  virtual bool wait_closing(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!closing() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return closing();
  }
};

using Handler = std::function<void(const ServerRequest&, ServerResponse&)>;

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;     // 0 = pick a free port
  std::string tls_cert_file;  // both set = HTTPS
  std::string tls_key_file;
  // Set (with TLS): clients must present a certificate signed by this CA (mutual TLS).
  std::string tls_client_ca_file;
  std::size_t max_body_bytes = 100 * 1024 * 1024;
};

class Server {
 public:
  virtual ~Server() = default;
  // Binds and starts accepting in background threads.
  virtual Status start() = 0;
  // Stops accepting, closes every connection, joins all threads. Idempotent.
  virtual void stop() = 0;
  // The bound port (valid after start()).
  virtual std::uint16_t port() const = 0;
};

std::unique_ptr<Server> make_server(ServerOptions options, Handler handler);

// Parses "a=1&b=x%2Fy" into decoded pairs, in order. Malformed escapes are kept raw.
std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query);

// Splits a "host:port" listen address; port 0 allowed. Error on anything else.
Result<std::pair<std::string, std::uint16_t>> parse_listen_address(std::string_view address);

}  // namespace eslease::http
