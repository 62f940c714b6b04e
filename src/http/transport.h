// The HTTP client seam. Everything that talks to Elasticsearch or Kubernetes goes through
// Transport, so protocol logic is tested with a fake and the HTTP library can be replaced by
// touching one file.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace eslease::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive header lookup.
std::optional<std::string> find_header(const Headers& headers, std::string_view name);

struct Request {
  std::string method = "GET";
  // Absolute URL: scheme://host:port/path?query. Path segments and query values must
  // already be percent-encoded by the caller (see common/text.h).
  std::string url;
  Headers headers;
  std::string body;
  // Whole-request deadline for send(); for stream() the longest silence tolerated
  // between two pieces of the body (an idle timeout). Capped by
  // TransportOptions::max_timeout; zero or negative means max_timeout.
  std::chrono::milliseconds timeout{10000};
};

struct Response {
  int status = 0;
  Headers headers;
  std::string body;
  std::optional<std::string> header(std::string_view name) const { return find_header(headers, name); }
};

struct TlsOptions {
  bool verify = true;            // verification is on unless explicitly turned off
  std::string ca_file;           // PEM bundle; empty = system trust store
  std::string ca_pem;            // PEM data (kubeconfig certificate-authority-data)
  std::string client_cert_file;  // PEM, for mutual TLS
  std::string client_key_file;
  std::string client_cert_pem;  // PEM data alternatives to the files above
  std::string client_key_pem;
};

// Called with each piece of a streamed body as it arrives. Return false to stop reading.
using ChunkHandler = std::function<bool(std::string_view chunk)>;

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends one request and reads the whole answer. Any HTTP status is a successful
  // Result; failures to get an answer are Errors: kUnavailable (refused, reset, DNS),
  // kTimeout (no complete answer within request.timeout: the outcome is unknown),
  // kCancelled.
  virtual Result<Response> send(const Request& request) = 0;

  // Sends one request and hands the body to `on_chunk` as it arrives (watch streams).
  // Returns the status and headers (with an empty body) once the body ends, `on_chunk`
  // returns false, or `stop` is requested (kCancelled). A non-2xx answer's body is
  // returned whole in Response::body instead of being streamed.
  virtual Result<Response> stream(const Request& request, const ChunkHandler& on_chunk,
                                  std::stop_token stop) = 0;
};

struct TransportOptions {
  TlsOptions tls;
  // Upper bound for a request whose Request::timeout is larger.
  std::chrono::milliseconds max_timeout{std::chrono::minutes(10)};
};

// The production transport (Boost.Beast). A request runs on the calling thread; idle
// connections are kept per scheme://host:port and reused. A request with a body is never
// resent by the transport: if its connection dies before the answer, the result is
// kUnavailable and the outcome is unknown. Requests without a body may be resent once when a
// pooled connection turns out to be closed. TLS checks the server's certificate against the
// system's and the configured authorities and its name (or IP address) against the URL's host.
std::unique_ptr<Transport> make_transport(TransportOptions options = {});

}  // namespace eslease::http
