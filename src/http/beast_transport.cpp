// Transport on Boost.Beast. A request runs on the calling thread: each pooled connection
// owns an io_context, and the caller runs it until the answer, the deadline or a stop
// request, so no request is handed between threads. Deadlines end the connection: a
// connection given up on is closed, never reused.
#include <poll.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "http/target.h"
#include "http/transport.h"

namespace eslease::http {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadPieceBytes = 64 * 1024;
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
constexpr std::size_t kMaxIdlePerServer = 32;
// Boost 1.74 compares a Content-Length with an unset limit as "over it", so "no limit" is
// spelled as the largest one.
constexpr std::uint64_t kNoBodyLimit = std::numeric_limits<std::uint64_t>::max();

// Loads the configured TLS material into `context`; throws on bad material.
void configure_tls(ssl::context& context, const TlsOptions& tls) {
  context.set_default_verify_paths();
  if (!tls.ca_file.empty()) context.load_verify_file(tls.ca_file);
  if (!tls.ca_pem.empty()) context.add_certificate_authority(net::buffer(tls.ca_pem));
  if (!tls.client_cert_file.empty()) context.use_certificate_chain_file(tls.client_cert_file);
  if (!tls.client_cert_pem.empty()) context.use_certificate_chain(net::buffer(tls.client_cert_pem));
  if (!tls.client_key_file.empty()) context.use_private_key_file(tls.client_key_file, ssl::context::pem);
  if (!tls.client_key_pem.empty())
    context.use_private_key(net::buffer(tls.client_key_pem), ssl::context::pem);
  context.set_verify_mode(tls.verify ? ssl::verify_peer : ssl::verify_none);
}

// One connection to one server, used by one request at a time.
class Connection {
 public:
  Connection(const Target& target, ssl::context* tls) {
    if (target.https) {
      tls_.emplace(io_, *tls);
    } else {
      plain_.emplace(io_);
    }
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  tcp::socket& socket() { return tls_ ? tls_->next_layer() : *plain_; }
  boost::beast::flat_buffer& buffer() { return buffer_; }
  bool reused() const { return reused_; }
  void mark_reused() { reused_ = true; }

  // Runs `start(handler)` to completion; false when the deadline came first (the
  // connection is then closed, and `cancel` run for work that is not on the socket). The
  // handler may be called with any arguments after the error code.
  template <typename Start>
  bool await(Start&& start, Clock::time_point deadline, error_code& ec,
             const std::function<void()>& cancel = {}) {
    bool done = false;
    start([&done, &ec](error_code result, auto&&...) {
      ec = result;
      done = true;
    });
    io_.restart();
    while (!done) {
      if (io_.run_one_until(deadline) == 0 && !done && (Clock::now() >= deadline || io_.stopped())) break;
    }
    if (done) return true;
    close();
    if (cancel) cancel();
    io_.restart();
    io_.run();  // the cancelled operation's handler refers to this frame: let it finish here
    return false;
  }

  // Calls `use(stream)` with the plain or the TLS stream.
  template <typename Use>
  auto with_stream(Use&& use) {
    return tls_ ? use(*tls_) : use(*plain_);
  }

  void close() {
    error_code ignored;
    socket().shutdown(tcp::socket::shutdown_both, ignored);
    socket().close(ignored);
  }

  // Asks the thread running this connection to close it; safe from any thread.
  void close_from_elsewhere() {
    net::post(io_, [this] { close(); });
  }

  // Whether the server closed this idle connection (or sent something unasked, which an
  // idle HTTP/1.1 connection never should): then it must not carry a request.
  bool stale() {
    if (!socket().is_open()) return true;
    pollfd probe{.fd = socket().native_handle(), .events = POLLIN | POLLRDHUP, .revents = 0};
    return ::poll(&probe, 1, 0) != 0;
  }

  ssl::stream<tcp::socket>* tls() { return tls_ ? &*tls_ : nullptr; }
  net::io_context& io() { return io_; }

 private:
  net::io_context io_{1};
  std::optional<tcp::socket> plain_;
  std::optional<ssl::stream<tcp::socket>> tls_;
  boost::beast::flat_buffer buffer_;
  bool reused_ = false;
};

// Why a request got no answer, before it is worded for the caller.
struct Failure {
  ErrorCode code;
  std::string message;
  bool nothing_received = false;  // the server may not have seen the request at all
};

class BeastTransport final : public Transport {
 public:
  explicit BeastTransport(TransportOptions options) : options_(std::move(options)) {
    const TlsOptions& tls = options_.tls;
    const bool has_cert = !tls.client_cert_file.empty() || !tls.client_cert_pem.empty();
    const bool has_key = !tls.client_key_file.empty() || !tls.client_key_pem.empty();
    if (has_cert != has_key) tls_problem_ = "a client certificate needs both a certificate and a key";
  }

  Result<Response> send(const Request& request) override {
    auto target = checked_target(request);
    if (!target) return target.error();
    const auto timeout = effective_timeout(request);
    const auto deadline = Clock::now() + timeout;
    for (int attempt = 0;; ++attempt) {
      auto connection = open(*target, deadline);
      if (!connection) return connection.error();
      Response response;
      bool reusable = false;
      const auto failed = exchange(**connection, request, *target, deadline, response, reusable);
      if (!failed) {
        if (reusable) give_back(*target, std::move(*connection));
        return response;
      }
      const Failure& failure = *failed;
      // A request without a body is safe to send again when a pooled connection turned out
      // to be closed before the server saw it; one with a body is never resent, since the
      // server may have applied it.
      const bool stale_pooled = (*connection)->reused() && failure.nothing_received;
      if (stale_pooled && request.body.empty() && attempt == 0 && Clock::now() < deadline) continue;
      if (failure.code == ErrorCode::kTimeout) {
        return make_error(ErrorCode::kTimeout, request.method + " " + target->display +
                                                   ": no complete answer within " +
                                                   std::to_string(timeout.count()) + "ms");
      }
      if (stale_pooled) {
        return make_error(ErrorCode::kUnavailable,
                          request.method + " " + target->display +
                              ": the connection closed before an answer arrived; the request may or may not "
                              "have been processed and was not resent");
      }
      return make_error(failure.code, request.method + " " + target->display + ": " + failure.message);
    }
  }

  Result<Response> stream(const Request& request, const ChunkHandler& on_chunk,
                          std::stop_token stop) override {
    auto target = checked_target(request);
    if (!target) return target.error();
    const auto idle = effective_timeout(request);
    const std::string what = request.method + " " + target->display + ": ";
    auto connection = open(*target, Clock::now() + idle);
    if (!connection) return connection.error();
    Connection& conn = **connection;
    auto failed = [&](const Failure& failure) -> Error {
      if (stop.stop_requested()) return make_error(ErrorCode::kCancelled, what + "stream cancelled");
      if (failure.code == ErrorCode::kTimeout) {
        return make_error(ErrorCode::kTimeout, what + "no data for " + std::to_string(idle.count()) + "ms");
      }
      return make_error(failure.code, what + failure.message);
    };
    Response out;
    bool reusable = false;
    {
      std::stop_callback on_stop(stop, [&conn] { conn.close_from_elsewhere(); });
      if (auto unsent = write_request(conn, request, *target, Clock::now() + idle)) return failed(*unsent);
      bhttp::response_parser<bhttp::buffer_body> parser;
      parser.body_limit(kNoBodyLimit);
      parser.header_limit(kMaxHeaderBytes);
      if (auto no_head = on_stream(
              conn, [&](auto& s, auto h) { bhttp::async_read_header(s, conn.buffer(), parser, h); },
              Clock::now() + idle)) {
        return failed(*no_head);
      }
      out = convert_head(parser.get());
      const bool success = out.status >= 200 && out.status < 300;
      std::vector<char> piece(kReadPieceBytes);
      bool wanted = true;
      while (!parser.is_done()) {
        if (stop.stop_requested()) return failed({ErrorCode::kCancelled, ""});
        parser.get().body().data = piece.data();
        parser.get().body().size = piece.size();
        if (auto unread = on_stream(
                conn, [&](auto& s, auto h) { bhttp::async_read_some(s, conn.buffer(), parser, h); },
                Clock::now() + idle)) {
          return failed(*unread);
        }
        const std::string_view chunk(piece.data(), piece.size() - parser.get().body().size);
        if (chunk.empty()) continue;
        if (!success) {
          out.body.append(chunk);
        } else if (!on_chunk(chunk)) {
          wanted = false;  // the rest of the body is unwanted; the connection cannot be reused
          break;
        }
      }
      if (stop.stop_requested()) return failed({ErrorCode::kCancelled, ""});
      reusable = wanted && parser.is_done() && parser.get().keep_alive();
    }
    // The stop callback is gone and never ran (checked above), so nothing is left queued to
    // close this connection behind a later request.
    if (reusable && !stop.stop_requested()) give_back(*target, std::move(*connection));
    return out;
  }

 private:
  using Owned = std::unique_ptr<Connection>;

  std::chrono::milliseconds effective_timeout(const Request& request) const {
    if (request.timeout <= std::chrono::milliseconds::zero()) return options_.max_timeout;
    return std::min(request.timeout, options_.max_timeout);
  }

  Result<Target> checked_target(const Request& request) {
    auto target = parse_target(request.url);
    if (!target) return target.error();
    if (target->https && !tls_context()) return make_error(ErrorCode::kInvalidArgument, *tls_problem_);
    return target;
  }

  // The TLS context, made for the first https request: loading the system's certificate
  // authorities costs about a megabyte of memory per transport, which a transport that only
  // speaks plain HTTP (an Elasticsearch without TLS) never needs. nullptr, with tls_problem_
  // saying why, when the material cannot be loaded.
  ssl::context* tls_context() {
    std::call_once(tls_loaded_, [this] {
      if (tls_problem_) return;
      try {
        tls_context_.emplace(ssl::context::tls_client);
        configure_tls(*tls_context_, options_.tls);
      } catch (const std::exception& e) {
        tls_problem_ = std::string("cannot load TLS material: ") + e.what();
        tls_context_.reset();
      }
    });
    return tls_context_ ? &*tls_context_ : nullptr;
  }

  // A pooled connection to the server when one is idle and still open, else a new one.
  Result<Owned> open(const Target& target, Clock::time_point deadline) {
    {
      std::lock_guard lock(pool_mutex_);
      auto& idle = idle_[target.authority];
      while (!idle.empty()) {
        Owned connection = std::move(idle.back());
        idle.pop_back();
        if (!connection->stale()) return connection;
      }
    }
    auto connection = std::make_unique<Connection>(target, target.https ? tls_context() : nullptr);
    if (auto unconnected = connect(*connection, target, deadline)) {
      return make_error(unconnected->code, "connect to " + target.display + ": " + unconnected->message);
    }
    return connection;
  }

  void give_back(const Target& target, Owned connection) {
    connection->mark_reused();
    std::lock_guard lock(pool_mutex_);
    auto& idle = idle_[target.authority];
    if (idle.size() < kMaxIdlePerServer) idle.push_back(std::move(connection));
  }

  static std::optional<Failure> connect(Connection& conn, const Target& target, Clock::time_point deadline) {
    error_code ec;
    tcp::resolver resolver(conn.io());
    tcp::resolver::results_type endpoints;
    const bool resolved = conn.await(
        [&](auto handler) {
          resolver.async_resolve(target.host, target.port,
                                 [&endpoints, handler](error_code e, auto results) mutable {
                                   endpoints = std::move(results);
                                   handler(e);
                                 });
        },
        deadline, ec, [&resolver] { resolver.cancel(); });
    if (!resolved) {
      return Failure{ErrorCode::kTimeout, "timed out resolving the host"};
    }
    if (ec) return Failure{ErrorCode::kUnavailable, "cannot resolve the host (" + ec.message() + ")"};
    if (!conn.await([&](auto handler) { net::async_connect(conn.socket(), endpoints, handler); }, deadline,
                    ec)) {
      return Failure{ErrorCode::kTimeout, "timed out connecting"};
    }
    if (ec) return Failure{ErrorCode::kUnavailable, "cannot connect (" + ec.message() + ")"};
    conn.socket().set_option(tcp::no_delay(true), ec);
    if (auto* tls = conn.tls()) {
      if (auto unchecked = expect_identity(*tls, target)) return unchecked;
      if (!conn.await([&](auto handler) { tls->async_handshake(ssl::stream_base::client, handler); },
                      deadline, ec)) {
        return Failure{ErrorCode::kTimeout, "timed out in the TLS handshake"};
      }
      if (ec) {
        return Failure{ErrorCode::kUnavailable,
                       "TLS handshake failed; the server certificate may not be trusted for this host (check "
                       "the CA settings) or TLS is misconfigured (" +
                           ec.message() + ")"};
      }
    }
    return std::nullopt;
  }

  // The name or address the server's certificate must be for; SNI for names.
  static std::optional<Failure> expect_identity(ssl::stream<tcp::socket>& tls, const Target& target) {
    SSL* handle = tls.native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(handle);
    error_code parse_error;
    net::ip::make_address(target.host, parse_error);
    const bool is_address = !parse_error;
    int ok = 1;
    if (is_address) {
      ok = X509_VERIFY_PARAM_set1_ip_asc(param, target.host.c_str());
    } else {
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      ok = X509_VERIFY_PARAM_set1_host(param, target.host.c_str(), 0) &&
           SSL_set_tlsext_host_name(handle, target.host.c_str());
    }
    if (ok != 1) return Failure{ErrorCode::kInvalidArgument, "cannot check the server's name " + target.host};
    return std::nullopt;
  }

  // Runs one read or write on the connection's stream with `deadline`.
  template <typename Start>
  static std::optional<Failure> on_stream(Connection& conn, Start&& start, Clock::time_point deadline) {
    error_code ec;
    const bool finished = conn.await(
        [&](auto handler) { conn.with_stream([&](auto& stream) { start(stream, handler); }); }, deadline, ec);
    if (!finished) return Failure{ErrorCode::kTimeout, "timed out"};
    if (ec && ec != bhttp::error::need_buffer) return Failure{ErrorCode::kUnavailable, ec.message()};
    return std::nullopt;
  }

  static std::optional<Failure> write_request(Connection& conn, const Request& request, const Target& target,
                                              Clock::time_point deadline) {
    bhttp::request<bhttp::string_body> message;
    message.version(11);
    message.method_string(request.method);
    message.target(target.resource);
    message.set(bhttp::field::host, target.host_header);
    bool has_content_type = false;
    for (const auto& [name, value] : request.headers) {
      if (is_framing_header(name)) continue;
      has_content_type = has_content_type || boost::beast::iequals(name, "content-type");
      message.insert(name, value);
    }
    if (!request.body.empty() && !has_content_type)
      message.set(bhttp::field::content_type, "application/octet-stream");
    message.body() = request.body;
    message.prepare_payload();
    auto unwritten = on_stream(
        conn, [&](auto& s, auto h) { bhttp::async_write(s, message, h); }, deadline);
    if (unwritten) unwritten->nothing_received = true;
    return unwritten;
  }

  // Sends the request and reads the whole answer; `reusable` says whether the connection
  // may carry another request.
  static std::optional<Failure> exchange(Connection& conn, const Request& request, const Target& target,
                                         Clock::time_point deadline, Response& out, bool& reusable) {
    if (auto unsent = write_request(conn, request, target, deadline)) return unsent;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(kNoBodyLimit);
    parser.header_limit(kMaxHeaderBytes);
    if (request.method == "HEAD") parser.skip(true);
    auto unread = on_stream(
        conn, [&](auto& s, auto h) { bhttp::async_read(s, conn.buffer(), parser, h); }, deadline);
    if (unread) {
      unread->nothing_received = !parser.got_some();
      return unread;
    }
    out = convert_head(parser.get());
    out.body = std::move(parser.get().body());
    reusable = parser.get().keep_alive();
    return std::nullopt;
  }

  template <typename Message>
  static Response convert_head(const Message& message) {
    Response out;
    out.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers.emplace_back(std::move(name), std::string(field.value()));
    }
    return out;
  }

  const TransportOptions options_;
  std::once_flag tls_loaded_;
  std::optional<std::string> tls_problem_;  // written before tls_loaded_ is done, read after
  std::optional<ssl::context> tls_context_;
  std::mutex pool_mutex_;
  std::map<std::string, std::vector<Owned>> idle_;
};

}  // namespace

std::unique_ptr<Transport> make_transport(TransportOptions options) {
  return std::make_unique<BeastTransport>(std::move(options));
}

}  // namespace eslease::http
