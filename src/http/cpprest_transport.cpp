// Transport on cpprestsdk's asio client. Deadlines are enforced here rather than by
// cpprest: every wait on a cpprest task is bounded by a deadline and the caller's stop
// token, and giving up cancels the request, which makes cpprest close the connection.
// cpprest's own per-client timeout (an idle timer reset on every read) is set to
// max_timeout as a backstop only.
#include <cpprest/http_client.h>
#include <cpprest/producerconsumerstream.h>
#include <pplx/threadpool.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>

#include "http/transport.h"

namespace eslease::http {
namespace {

using Clock = std::chrono::steady_clock;
namespace client = web::http::client;

constexpr std::size_t kReadPieceBytes = 64 * 1024;

// The outcome of a cpprest task, published by a continuation so that the waiting thread
// can give up on a deadline or stop request without blocking on the task.
template <typename T>
struct Pending {
  std::mutex mutex;
  std::condition_variable_any ready;
  bool done = false;
  std::optional<T> value;
  std::exception_ptr error;
};

enum class WaitOutcome { kDone, kDeadline, kStopped };

// Continuations that have not run yet. A request given up on (deadline, stop) is cancelled
// and its continuation runs shortly after; the transport waits for them on destruction so
// no async work outlives it. Shared, because a continuation may still hold it if that wait
// runs out.
class InFlight {
 public:
  void add() {
    std::lock_guard lock(mutex_);
    ++count_;
  }
  void done() {
    std::lock_guard lock(mutex_);
    if (--count_ == 0) idle_.notify_all();
  }
  void wait_idle(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, limit, [&] { return count_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  int count_ = 0;
};

// `keep_alive` is held until the task finishes (e.g. a buffer the task writes into).
template <typename T>
std::shared_ptr<Pending<T>> observe(const std::shared_ptr<InFlight>& in_flight, pplx::task<T> task,
                                    std::shared_ptr<void> keep_alive = {}) {
  auto pending = std::make_shared<Pending<T>>();
  in_flight->add();
  task.then([pending, keep_alive = std::move(keep_alive), in_flight](pplx::task<T> finished) {
    std::optional<T> value;
    std::exception_ptr error;
    try {
      value.emplace(finished.get());
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(pending->mutex);
    pending->value = std::move(value);
    pending->error = error;
    pending->done = true;
    pending->ready.notify_all();
    in_flight->done();
  });
  return pending;
}

template <typename T>
WaitOutcome wait(Pending<T>& pending, Clock::time_point deadline, std::stop_token stop) {
  std::unique_lock lock(pending.mutex);
  if (pending.ready.wait_until(lock, stop, deadline, [&] { return pending.done; })) return WaitOutcome::kDone;
  return stop.stop_requested() ? WaitOutcome::kStopped : WaitOutcome::kDeadline;
}

struct Target {
  std::string authority;  // scheme://host:port, the connection pool key
  std::string resource;   // path?query, still encoded
  std::string display;    // scheme://host:port/path for messages (no query: it may carry secrets)
  bool https = false;
};

Result<Target> parse_target(const std::string& url) {
  try {
    web::uri uri(url);
    const std::string& scheme = uri.scheme();
    if (scheme != "http" && scheme != "https") {
      return make_error(ErrorCode::kInvalidArgument, "unsupported URL scheme in " + url);
    }
    if (uri.host().empty()) return make_error(ErrorCode::kInvalidArgument, "URL has no host: " + url);
    Target target;
    target.https = scheme == "https";
    const int port = uri.port() > 0 ? uri.port() : (target.https ? 443 : 80);
    const std::string host = uri.host().find(':') != std::string::npos ? "[" + uri.host() + "]" : uri.host();
    target.authority = scheme + "://" + host + ":" + std::to_string(port);
    target.resource = uri.resource().to_string();
    if (target.resource.empty()) target.resource = "/";
    target.display = target.authority + (uri.path().empty() ? "/" : uri.path());
    return target;
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "invalid URL: " + std::string(e.what()));
  }
}

// Headers cpprest writes itself from the body and the pool; passing them through would
// duplicate or contradict them.
bool is_framing_header(const std::string& lower_name) {
  return lower_name == "content-length" || lower_name == "transfer-encoding" || lower_name == "connection" ||
         lower_name == "host";
}

web::http::http_request build_request(const Request& request, const Target& target) {
  web::http::http_request message(request.method);
  message.set_request_uri(web::uri(target.resource));
  std::string content_type = "application/octet-stream";
  for (const auto& [name, value] : request.headers) {
    std::string lower = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (is_framing_header(lower)) continue;
    if (lower == "content-type") content_type = value;
    message.headers().add(name, value);
  }
  if (!request.body.empty()) {
    // The stream overload sends the bytes untouched (the string overloads add a charset).
    // The stream cannot be rewound, and that is deliberate: when a pooled connection dies
    // before the answer, cpprest silently resends requests whose body it can rewind, which
    // could apply a write twice. A request with a body fails with kUnavailable instead and
    // the caller, which knows whether the write is conditional, decides about retrying.
    concurrency::streams::producer_consumer_buffer<std::uint8_t> body;
    body.putn_nocopy(reinterpret_cast<const std::uint8_t*>(request.body.data()), request.body.size()).get();
    body.close(std::ios_base::out).get();
    message.set_body(body.create_istream(), request.body.size(), content_type);
  }
  return message;
}

Response convert_head(const web::http::http_response& response) {
  Response out;
  out.status = response.status_code();
  for (const auto& [name, value] : response.headers()) {
    std::string lower = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers.emplace_back(std::move(lower), value);
  }
  return out;
}

Error describe_failure(const std::exception_ptr& failure, const Request& request, const Target& target) {
  const std::string what = request.method + " " + target.display + ": ";
  try {
    std::rethrow_exception(failure);
  } catch (const web::http::http_exception& e) {
    if (e.error_code().value() == static_cast<int>(std::errc::timed_out)) {
      return make_error(ErrorCode::kTimeout, what + "timed out (" + e.what() + ")");
    }
    std::string message = e.what();
    if (message.find("cannot rewind") != std::string::npos) {
      message =
          "the connection closed before an answer arrived; the request may or may not have been processed "
          "and was not resent";
    } else if (message.find("SSL handshake") != std::string::npos) {
      message =
          "TLS handshake failed; the server certificate may not be trusted for this host (check the CA "
          "settings) or TLS is misconfigured (" +
          message + ")";
    }
    return make_error(ErrorCode::kUnavailable, what + message);
  } catch (const pplx::task_canceled&) {
    return make_error(ErrorCode::kCancelled, what + "request cancelled");
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kUnavailable, what + e.what());
  } catch (...) {
    return make_error(ErrorCode::kUnavailable, what + "unknown failure");
  }
}

// Loads the configured TLS material into `context`; throws on bad material.
void configure_tls(boost::asio::ssl::context& context, const TlsOptions& tls) {
  if (!tls.ca_file.empty()) context.load_verify_file(tls.ca_file);
  if (!tls.ca_pem.empty()) context.add_certificate_authority(boost::asio::buffer(tls.ca_pem));
  if (!tls.client_cert_file.empty()) context.use_certificate_chain_file(tls.client_cert_file);
  if (!tls.client_cert_pem.empty()) context.use_certificate_chain(boost::asio::buffer(tls.client_cert_pem));
  if (!tls.client_key_file.empty()) {
    context.use_private_key_file(tls.client_key_file, boost::asio::ssl::context::pem);
  }
  if (!tls.client_key_pem.empty()) {
    context.use_private_key(boost::asio::buffer(tls.client_key_pem), boost::asio::ssl::context::pem);
  }
}

// Checks the TLS settings once, so that a bad file or PEM is reported clearly on every
// request instead of surfacing as an obscure connection failure.
std::optional<std::string> validate_tls(const TlsOptions& tls) {
  const bool has_cert = !tls.client_cert_file.empty() || !tls.client_cert_pem.empty();
  const bool has_key = !tls.client_key_file.empty() || !tls.client_key_pem.empty();
  if (has_cert != has_key) return "a client certificate needs both a certificate and a key";
  try {
    boost::asio::ssl::context context(boost::asio::ssl::context::tls_client);
    configure_tls(context, tls);
  } catch (const std::exception& e) {
    return std::string("cannot load TLS material: ") + e.what();
  }
  return std::nullopt;
}

class CpprestTransport final : public Transport {
 public:
  explicit CpprestTransport(TransportOptions options)
      : options_(std::move(options)), tls_problem_(validate_tls(options_.tls)) {}
  ~CpprestTransport() override { in_flight_->wait_idle(std::chrono::seconds(5)); }

  Result<Response> send(const Request& request) override {
    auto target = parse_target(request.url);
    if (!target) return target.error();
    if (tls_problem_ && target->https) return make_error(ErrorCode::kInvalidArgument, *tls_problem_);
    const auto deadline = Clock::now() + effective_timeout(request);
    pplx::cancellation_token_source cancel;
    try {
      auto& http = client_for(*target);
      auto task = http.request(build_request(request, *target), cancel.get_token())
                      .then([](web::http::http_response response) {
                        return response.extract_vector().then([response](std::vector<unsigned char> body) {
                          Response out = convert_head(response);
                          out.body.assign(body.begin(), body.end());
                          return out;
                        });
                      });
      auto pending = observe(in_flight_, std::move(task));
      if (wait(*pending, deadline, {}) != WaitOutcome::kDone) {
        cancel.cancel();
        return make_error(ErrorCode::kTimeout, request.method + " " + target->display +
                                                   ": no complete answer within " +
                                                   std::to_string(effective_timeout(request).count()) + "ms");
      }
      if (pending->error) return describe_failure(pending->error, request, *target);
      return std::move(*pending->value);
    } catch (...) {
      cancel.cancel();
      return describe_failure(std::current_exception(), request, *target);
    }
  }

  Result<Response> stream(const Request& request, const ChunkHandler& on_chunk,
                          std::stop_token stop) override {
    auto target = parse_target(request.url);
    if (!target) return target.error();
    if (tls_problem_ && target->https) return make_error(ErrorCode::kInvalidArgument, *tls_problem_);
    const auto idle = effective_timeout(request);
    pplx::cancellation_token_source cancel;
    auto give_up = [&](WaitOutcome outcome) {
      cancel.cancel();
      if (outcome == WaitOutcome::kStopped) {
        return make_error(ErrorCode::kCancelled,
                          request.method + " " + target->display + ": stream cancelled");
      }
      return make_error(ErrorCode::kTimeout, request.method + " " + target->display + ": no data for " +
                                                 std::to_string(idle.count()) + "ms");
    };
    try {
      auto& http = client_for(*target);
      auto head = observe(in_flight_, http.request(build_request(request, *target), cancel.get_token()));
      if (auto outcome = wait(*head, Clock::now() + idle, stop); outcome != WaitOutcome::kDone) {
        return give_up(outcome);
      }
      if (head->error) return describe_failure(head->error, request, *target);
      const web::http::http_response& response = *head->value;
      Response out = convert_head(response);
      const bool success = out.status >= 200 && out.status < 300;

      auto body = response.body().streambuf();
      auto piece = std::make_shared<std::vector<std::uint8_t>>(kReadPieceBytes);
      while (true) {
        // Asking for one byte completes as soon as anything arrives; the rest of what is
        // already buffered is then taken without waiting.
        auto first = observe(in_flight_, body.getn(piece->data(), 1), piece);
        if (auto outcome = wait(*first, Clock::now() + idle, stop); outcome != WaitOutcome::kDone) {
          return give_up(outcome);
        }
        if (first->error) return describe_failure(first->error, request, *target);
        if (*first->value == 0) break;  // end of body
        std::size_t size = 1;
        const std::size_t available = body.in_avail();
        if (available > 0) {
          // Satisfiable from the buffer, so this task is already complete.
          size += body.getn(piece->data() + 1, std::min(available, piece->size() - 1)).get();
        }
        const std::string_view chunk(reinterpret_cast<const char*>(piece->data()), size);
        if (!success) {
          out.body.append(chunk);
        } else if (!on_chunk(chunk)) {
          cancel.cancel();  // the rest of the body is unwanted; the connection cannot be reused
          break;
        }
        if (stop.stop_requested()) return give_up(WaitOutcome::kStopped);
      }
      return out;
    } catch (...) {
      cancel.cancel();
      return describe_failure(std::current_exception(), request, *target);
    }
  }

 private:
  std::chrono::milliseconds effective_timeout(const Request& request) const {
    if (request.timeout <= std::chrono::milliseconds::zero()) return options_.max_timeout;
    return std::min(request.timeout, options_.max_timeout);
  }

  client::http_client& client_for(const Target& target) {
    std::lock_guard lock(clients_mutex_);
    auto& slot = clients_[target.authority];
    if (!slot) {
      client::http_client_config config;
      config.set_timeout(options_.max_timeout);
      config.set_max_redirects(0);
      if (target.https) {
        config.set_validate_certificates(options_.tls.verify);
        const TlsOptions tls = options_.tls;
        config.set_ssl_context_callback(
            [tls](boost::asio::ssl::context& context) { configure_tls(context, tls); });
      }
      slot = std::make_unique<client::http_client>(web::uri(target.authority), config);
    }
    return *slot;
  }

  const TransportOptions options_;
  const std::optional<std::string> tls_problem_;
  std::mutex clients_mutex_;
  std::map<std::string, std::unique_ptr<client::http_client>> clients_;
  std::shared_ptr<InFlight> in_flight_ = std::make_shared<InFlight>();
};

}  // namespace

std::unique_ptr<Transport> make_cpprest_transport(TransportOptions options) {
  return std::make_unique<CpprestTransport>(std::move(options));
}

void set_cpprest_threads(std::size_t threads) {
  crossplat::threadpool::initialize_with_threads(threads);
}

}  // namespace eslease::http
