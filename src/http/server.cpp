// The embedded server: a blocking accept loop, one thread per connection, synchronous
// Beast I/O. Blocking calls are interrupted by shutdown(2) on the socket, which wakes a
// thread blocked in accept/read/write on Linux; the owning thread alone closes the fd.
#include "http/server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include "common/log.h"
#include "common/thread_name.h"

namespace eslease::http {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using boost::beast::error_code;

// The OS side of one accepted connection, shared between its thread and stop().
class ConnectionSlot {
 public:
  explicit ConnectionSlot(int fd) : fd_(fd) {}

  // Wakes any blocking I/O on the socket; safe from any thread.
  void interrupt() {
    std::lock_guard lock(mutex_);
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }
  // Called by the owning thread right before it closes the socket, so that interrupt()
  // can never touch a recycled descriptor.
  void release() {
    std::lock_guard lock(mutex_);
    fd_ = -1;
  }
  // Non-blocking check whether the peer has closed its side. POLLRDHUP reports the
  // peer's FIN even when unread bytes (a pipelined request, a TLS alert) are pending.
  bool peer_closed() {
    std::lock_guard lock(mutex_);
    if (fd_ < 0) return true;
    pollfd probe{.fd = fd_, .events = POLLRDHUP, .revents = 0};
    if (::poll(&probe, 1, 0) <= 0) return false;
    return (probe.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
  }

  // Blocks until the peer closes, interrupt() shuts the socket down, or `timeout` passes.
  // Without the mutex, so that interrupt() can run meanwhile: only the owning thread waits
  // here, inside its handler, and it alone closes the descriptor.
  void wait_peer_closed(std::chrono::milliseconds timeout) {
    pollfd probe{.fd = fd_, .events = POLLRDHUP, .revents = 0};
    if (probe.fd >= 0) ::poll(&probe, 1, static_cast<int>(std::min<std::int64_t>(timeout.count(), 60'000)));
  }

  std::thread thread;
  std::atomic<bool> finished{false};

 private:
  std::mutex mutex_;
  int fd_;
};

std::string format_endpoint(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

bool is_parse_error(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

// Header names a handler may not set because the server owns message framing.
bool is_framing_header(std::string_view name) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string n = lower(name);
  return n == "content-length" || n == "transfer-encoding" || n == "connection";
}

bool has_line_break(std::string_view text) {
  return text.find_first_of("\r\n") != std::string_view::npos;
}

template <typename Body>
void apply_headers(bhttp::response<Body>& response, const Headers& headers) {
  for (const auto& [name, value] : headers) {
    // A line break would let a hostile value forge headers or a second response.
    if (!is_framing_header(name) && !name.empty() && !has_line_break(name) && !has_line_break(value)) {
      response.insert(name, value);
    }
  }
}

// Status codes outside the three-digit range cannot be written on a status line.
bhttp::status checked_status(int status) {
  return static_cast<bhttp::status>(status >= 100 && status <= 999 ? status : 500);
}

// Answers one request on a connection. Writes are serialised so a handler may write
// chunks from another thread while the connection thread waits.
template <typename Stream>
class ResponseWriter final : public ServerResponse {
 public:
  ResponseWriter(Stream& stream, ConnectionSlot& slot, const std::atomic<bool>& stopping, unsigned version,
                 bool keep_alive, bool head_request)
      : stream_(stream),
        slot_(slot),
        stopping_(stopping),
        version_(version),
        keep_alive_(keep_alive),
        head_request_(head_request) {}

  void send(int status, Headers headers, std::string body) override {
    std::lock_guard lock(mutex_);
    send_locked(status, headers, std::move(body));
  }

  bool begin_chunked(int status, Headers headers) override {
    std::lock_guard lock(mutex_);
    if (state_ != State::kNone) return false;
    state_ = State::kChunked;
    bhttp::response<bhttp::empty_body> response{checked_status(status), version_};
    apply_headers(response, headers);
    response.keep_alive(keep_alive_ && !stopping_);
    response.chunked(true);
    bhttp::response_serializer<bhttp::empty_body> serializer{response};
    error_code ec;
    bhttp::write_header(stream_, serializer, ec);
    if (ec) broken_ = true;
    return !broken_;
  }

  bool write_chunk(std::string_view data) override {
    std::lock_guard lock(mutex_);
    if (state_ != State::kChunked || broken_) return false;
    if (data.empty() || head_request_) return true;  // an empty chunk would end the body
    char size_line[24];
    const int size_length = std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
    const std::array<net::const_buffer, 3> buffers{
        net::buffer(size_line, static_cast<std::size_t>(size_length)), net::buffer(data.data(), data.size()),
        net::buffer("\r\n", 2)};
    error_code ec;
    net::write(stream_, buffers, ec);
    if (ec) broken_ = true;
    return !broken_;
  }

  void end_chunked() override {
    std::lock_guard lock(mutex_);
    end_chunked_locked();
  }

  void drop_connection() override {
    std::lock_guard lock(mutex_);
    state_ = State::kDropped;
    slot_.interrupt();
  }

  bool closing() const override {
    if (stopping_ || broken_) return true;
    return slot_.peer_closed();
  }

  bool wait_closing(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // stop() sets stopping_ before it shuts the socket down, which ends the wait.
    while (!closing()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      slot_.wait_peer_closed(left);
    }
    return true;
  }

  // Completes the exchange after the handler returned or threw.
  void finish(const std::string* failure) {
    std::lock_guard lock(mutex_);
    if (state_ == State::kNone) {
      send_locked(
          500, {{"Content-Type", "text/plain; charset=utf-8"}},
          failure ? "internal server error: " + *failure + "\n" : "internal server error: no response\n");
    } else if (state_ == State::kChunked) {
      if (failure) {
        // The status is already on the wire; cutting the body tells the client it is incomplete.
        state_ = State::kDropped;
      } else {
        end_chunked_locked();
      }
    }
  }

  // Whether the connection can carry another request.
  bool reusable() const {
    std::lock_guard lock(mutex_);
    return keep_alive_ && !broken_ && !stopping_ && (state_ == State::kSent || state_ == State::kChunkEnded);
  }

 private:
  enum class State { kNone, kSent, kChunked, kChunkEnded, kDropped };

  void send_locked(int status, const Headers& headers, std::string body) {
    if (state_ != State::kNone) return;
    state_ = State::kSent;
    bhttp::response<bhttp::string_body> response{checked_status(status), version_};
    apply_headers(response, headers);
    response.keep_alive(keep_alive_ && !stopping_);
    const bool may_have_body = status >= 200 && status != 204 && status != 304;
    if (may_have_body) {
      response.content_length(body.size());
      response.body() = std::move(body);
    }
    error_code ec;
    if (head_request_ || !may_have_body) {
      bhttp::response_serializer<bhttp::string_body> serializer{response};
      bhttp::write_header(stream_, serializer, ec);
    } else {
      bhttp::write(stream_, response, ec);
    }
    if (ec) broken_ = true;
  }

  void end_chunked_locked() {
    if (state_ != State::kChunked) return;
    state_ = State::kChunkEnded;
    if (broken_ || head_request_) return;
    error_code ec;
    net::write(stream_, net::buffer("0\r\n\r\n", 5), ec);
    if (ec) broken_ = true;
  }

  Stream& stream_;
  ConnectionSlot& slot_;
  const std::atomic<bool>& stopping_;
  const unsigned version_;
  const bool keep_alive_;
  const bool head_request_;
  mutable std::mutex mutex_;
  State state_ = State::kNone;
  std::atomic<bool> broken_{false};
};

class BeastServer final : public Server {
 public:
  BeastServer(ServerOptions options, Handler handler)
      : options_(std::move(options)), handler_(std::move(handler)) {}
  ~BeastServer() override { stop(); }

  Status start() override {
    std::lock_guard lock(lifecycle_mutex_);
    if (started_) return make_error(ErrorCode::kInvalidArgument, "server already started");
    if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
      if (auto status = load_tls(); !status) return status;
    }
    error_code ec;
    tcp::endpoint endpoint;
    if (auto address = net::ip::make_address(options_.host, ec); !ec) {
      endpoint = tcp::endpoint(address, options_.port);
    } else {
      tcp::resolver resolver(io_);
      auto results = resolver.resolve(options_.host, std::to_string(options_.port), ec);
      if (ec || results.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "cannot resolve listen host " + options_.host);
      }
      endpoint = results.begin()->endpoint();
    }
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      error_code ignored;
      acceptor_.close(ignored);
      return make_error(ErrorCode::kUnavailable,
                        "cannot listen on " + format_endpoint(endpoint) + ": " + ec.message());
    }
    port_ = acceptor_.local_endpoint(ec).port();
    started_ = true;
    accept_thread_ = std::thread([this] { accept_loop(); });
    return {};
  }

  void stop() override {
    std::lock_guard lock(lifecycle_mutex_);
    if (!started_ || stopped_) return;
    stopped_ = true;
    stopping_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    accept_thread_.join();
    error_code ignored;
    acceptor_.close(ignored);
    std::list<std::unique_ptr<ConnectionSlot>> slots;
    {
      std::lock_guard slots_lock(slots_mutex_);
      slots.swap(slots_);
    }
    for (auto& slot : slots) slot->interrupt();
    for (auto& slot : slots) slot->thread.join();
  }

  std::uint16_t port() const override { return port_; }

 private:
  Status load_tls() {
    if (options_.tls_cert_file.empty() || options_.tls_key_file.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "TLS needs both a certificate and a key file");
    }
    try {
      tls_.emplace(ssl::context::tls_server);
      tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                        ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
      tls_->use_certificate_chain_file(options_.tls_cert_file);
      tls_->use_private_key_file(options_.tls_key_file, ssl::context::pem);
      if (!options_.tls_client_ca_file.empty()) {
        tls_->load_verify_file(options_.tls_client_ca_file);
        tls_->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
      }
    } catch (const std::exception& e) {
      tls_.reset();
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("cannot load TLS certificate/key: ") + e.what());
    }
    return {};
  }

  void accept_loop() {
    name_this_thread("http-accept");
    while (!stopping_) {
      tcp::socket socket(io_);
      error_code ec;
      acceptor_.accept(socket, ec);
      if (stopping_) break;
      if (ec) {
        // Typically out of file descriptors: back off instead of spinning.
        log::warn("http accept failed", {{"error", ec.message()}});
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      reap_finished();
      auto slot = std::make_unique<ConnectionSlot>(socket.native_handle());
      ConnectionSlot* raw = slot.get();
      std::lock_guard lock(slots_mutex_);
      raw->thread = std::thread([this, raw, socket = std::move(socket)]() mutable {
        serve(*raw, std::move(socket));
        raw->finished = true;
      });
      slots_.push_back(std::move(slot));
    }
  }

  // Joins connection threads that have ended, so long runs do not accumulate them.
  void reap_finished() {
    std::list<std::unique_ptr<ConnectionSlot>> done;
    {
      std::lock_guard lock(slots_mutex_);
      for (auto it = slots_.begin(); it != slots_.end();) {
        if ((*it)->finished) {
          done.push_back(std::move(*it));
          it = slots_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& slot : done) slot->thread.join();
  }

  void serve(ConnectionSlot& slot, tcp::socket socket) {
    name_this_thread("http-serve");
    error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    const auto remote_endpoint = socket.remote_endpoint(ec);
    const std::string remote = ec ? std::string("unknown") : format_endpoint(remote_endpoint);
    try {
      if (tls_) {
        ssl::stream<tcp::socket> stream(std::move(socket), *tls_);
        stream.handshake(ssl::stream_base::server, ec);
        if (!ec) session(stream, slot, remote);
        slot.release();
        stream.lowest_layer().close(ec);
      } else {
        session(socket, slot, remote);
        slot.release();
        socket.close(ec);
      }
    } catch (const std::exception& e) {
      // Not expected (all I/O uses error codes), but a connection must never take the process down.
      log::warn("http connection failed", {{"remote", remote}, {"error", e.what()}});
      slot.release();
    }
  }

  template <typename Stream>
  void session(Stream& stream, ConnectionSlot& slot, const std::string& remote) {
    boost::beast::flat_buffer buffer;
    while (!stopping_) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.header_limit(64 * 1024);
      parser.body_limit(options_.max_body_bytes);
      error_code ec;
      bhttp::read_header(stream, buffer, parser, ec);
      if (!ec && parser.get()[bhttp::field::expect] == "100-continue") {
        net::write(stream, net::buffer("HTTP/1.1 100 Continue\r\n\r\n", 25), ec);
      }
      if (!ec) bhttp::read(stream, buffer, parser, ec);
      if (ec) {
        if (ec == bhttp::error::body_limit) {
          write_plain_error(stream, bhttp::status::payload_too_large, "request body too large\n");
        } else if (ec == bhttp::error::header_limit) {
          write_plain_error(stream, bhttp::status::request_header_fields_too_large,
                            "request header too large\n");
        } else if (is_parse_error(ec)) {
          write_plain_error(stream, bhttp::status::bad_request, "malformed request: " + ec.message() + "\n");
        }
        return;
      }
      auto message = parser.release();
      ServerRequest request;
      request.method = std::string(message.method_string());
      request.target = std::string(message.target());
      const std::size_t question = request.target.find('?');
      request.path = request.target.substr(0, question);
      if (question != std::string::npos) request.query = request.target.substr(question + 1);
      for (const auto& field : message) {
        request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
      }
      request.body = std::move(message.body());
      request.remote = remote;

      ResponseWriter<Stream> writer(stream, slot, stopping_, message.version(), message.keep_alive(),
                                    message.method() == bhttp::verb::head);
      std::optional<std::string> failure;
      try {
        handler_(request, writer);
      } catch (const std::exception& e) {
        failure = e.what();
      } catch (...) {
        failure = "unknown exception";
      }
      if (failure)
        log::warn("http handler failed",
                  {{"method", request.method}, {"path", request.path}, {"error", *failure}});
      writer.finish(failure ? &*failure : nullptr);
      if (!writer.reusable()) return;
    }
  }

  template <typename Stream>
  void write_plain_error(Stream& stream, bhttp::status status, std::string body) {
    bhttp::response<bhttp::string_body> response{status, 11};
    response.set(bhttp::field::content_type, "text/plain; charset=utf-8");
    response.keep_alive(false);
    response.body() = std::move(body);
    response.prepare_payload();
    error_code ec;
    bhttp::write(stream, response, ec);
  }

  const ServerOptions options_;
  const Handler handler_;
  net::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::optional<ssl::context> tls_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};

  std::mutex lifecycle_mutex_;
  bool started_ = false;
  bool stopped_ = false;
  std::thread accept_thread_;

  std::mutex slots_mutex_;
  std::list<std::unique_ptr<ConnectionSlot>> slots_;
};

}  // namespace

std::unique_ptr<Server> make_server(ServerOptions options, Handler handler) {
  return std::make_unique<BeastServer>(std::move(options), std::move(handler));
}

}  // namespace eslease::http
