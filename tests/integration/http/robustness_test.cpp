// The server facing hostile or broken clients, and its lifecycle.
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "http/transport.h"
#include "integration/http/loopback.h"

namespace eslease::http {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// Sends raw bytes on a fresh connection and returns everything the server answers
// until it closes the connection.
std::string exchange_raw(const Server& server, const std::string& bytes) {
  net::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server.port()));
  net::write(socket, net::buffer(bytes));
  std::string answer;
  boost::system::error_code ec;
  net::read(socket, net::dynamic_buffer(answer), ec);  // until EOF
  return answer;
}

Handler ok_handler() {
  return [](const ServerRequest&, ServerResponse& response) {
    response.send(200, {{"Content-Type", "text/plain"}}, "fine");
  };
}

void expect_still_serving(const Server& server) {
  auto response = make_transport()->send({.url = url_for(server, "/")});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->body, "fine");
}

TEST(HttpServerRobustness, GarbageGets400AndTheServerKeepsServing) {
  auto server = start_server(ok_handler());
  for (const std::string& garbage :
       {std::string("\x01\x02\x03 garbage\r\n\r\n"), std::string("GET / HTTP/9\r\n\r\n"),
        std::string("GET / HTTP/1.1\r\nBad Header Line\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nContent-Length: banana\r\n\r\n"),
        std::string("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")}) {
    const std::string answer = exchange_raw(*server, garbage);
    EXPECT_EQ(answer.rfind("HTTP/1.1 400", 0), 0u) << "for " << garbage << " got " << answer;
    EXPECT_NE(answer.find("Content-Length:"), std::string::npos) << answer;
  }
  expect_still_serving(*server);
}

TEST(HttpServerRobustness, ClientsVanishingMidRequestAreHarmless) {
  auto server = start_server(ok_handler());
  for (const std::string& partial : {std::string(""), std::string("GET /x HT"),
                                     std::string("PUT / HTTP/1.1\r\nContent-Length: 100\r\n\r\nshort")}) {
    net::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server->port()));
    if (!partial.empty()) net::write(socket, net::buffer(partial));
    socket.close();
  }
  expect_still_serving(*server);
}

TEST(HttpServerRobustness, HandlerValuesCannotForgeHeadersOrStatusLines) {
  auto server = start_server([](const ServerRequest& request, ServerResponse& response) {
    response.send(request.path == "/odd-status" ? 42 : 200,
                  {{"X-Echo", "a\r\nSet-Cookie: stolen=1"}, {"X-Fine", "yes"}, {"Content-Length", "999"}},
                  "body");
  });
  const std::string answer = exchange_raw(*server, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  EXPECT_EQ(answer.find("Set-Cookie"), std::string::npos) << answer;
  EXPECT_NE(answer.find("X-Fine: yes"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Content-Length: 4\r\n"), std::string::npos) << answer;
  const std::string odd =
      exchange_raw(*server, "GET /odd-status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(odd.rfind("HTTP/1.1 500", 0), 0u) << odd;
}

TEST(HttpServerRobustness, OversizedBodyIs413) {
  ServerOptions options;
  options.max_body_bytes = 1024;
  auto server = start_server(ok_handler(), options);
  auto response = make_transport()->send({.method = "POST",
                                          .url = url_for(*server, "/"),
                                          .headers = {{"Content-Type", "text/plain"}},
                                          .body = std::string(4096, 'x')});
  // The server may close before the client finished writing; either way nothing is accepted.
  if (response.ok()) {
    EXPECT_EQ(response->status, 413);
  } else {
    EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << response.error().describe();
  }
  const std::string answer =
      exchange_raw(*server, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  auto small = make_transport()->send({.method = "POST", .url = url_for(*server, "/"), .body = "tiny"});
  ASSERT_TRUE(small.ok()) << small.error().describe();
  EXPECT_EQ(small->status, 200);
}

TEST(HttpServerRobustness, PipelinedRequestsAreAnsweredInOrder) {
  auto server = start_server(
      [](const ServerRequest& request, ServerResponse& response) { response.send(200, {}, request.path); });
  const std::string answer = exchange_raw(
      *server,
      "GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const auto one = answer.find("/one");
  const auto two = answer.find("/two");
  ASSERT_NE(one, std::string::npos) << answer;
  ASSERT_NE(two, std::string::npos) << answer;
  EXPECT_LT(one, two);
}

TEST(HttpServerRobustness, ManyShortConnections) {
  auto server = start_server(ok_handler());
  for (int i = 0; i < 200; ++i) {
    const std::string answer =
        exchange_raw(*server, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    ASSERT_EQ(answer.rfind("HTTP/1.1 200", 0), 0u) << answer;
  }
  expect_still_serving(*server);
}

TEST(HttpServerLifecycle, PortInUseIsAnError) {
  auto first = start_server(ok_handler());
  ServerOptions options;
  options.port = first->port();
  auto second = make_server(options, ok_handler());
  auto started = second->start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code, ErrorCode::kUnavailable) << started.error().describe();
  second->stop();
  expect_still_serving(*first);
}

TEST(HttpServerLifecycle, BadTlsFilesAreAnError) {
  ServerOptions options;
  options.tls_cert_file = "/nonexistent/cert.pem";
  options.tls_key_file = "/nonexistent/key.pem";
  auto server = make_server(options, ok_handler());
  auto started = server->start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().code, ErrorCode::kInvalidArgument) << started.error().describe();
}

TEST(HttpServerLifecycle, StopIsIdempotentAndClosesIdleConnections) {
  auto server = start_server(ok_handler());
  net::io_context io;
  tcp::socket idle(io);
  idle.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server->port()));
  expect_still_serving(*server);
  server->stop();
  server->stop();
  // The idle keep-alive connection was closed by the server.
  char byte;
  boost::system::error_code ec;
  idle.read_some(net::buffer(&byte, 1), ec);
  EXPECT_TRUE(ec) << "expected the connection to be closed";
}

}  // namespace
}  // namespace eslease::http
