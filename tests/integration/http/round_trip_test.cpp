// Plain request/response exchanges between the transport and the embedded server.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "common/text.h"
#include "http/transport.h"
#include "integration/http/loopback.h"

namespace eslease::http {
namespace {

std::string all_byte_values() {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  return bytes;
}

TEST(HttpRoundTrip, StatusHeadersAndBinaryBody) {
  std::mutex mutex;
  ServerRequest seen;
  auto server = start_server([&](const ServerRequest& request, ServerResponse& response) {
    {
      std::lock_guard lock(mutex);
      seen = request;
    }
    response.send(201, {{"Content-Type", "application/octet-stream"}, {"X-Elastic-Product", "Elasticsearch"}},
                  request.body + "|echo");
  });
  auto transport = make_transport();

  Request request;
  request.method = "PUT";
  request.url = url_for(*server, "/locks/_doc/a%2Fb?refresh=true&if_seq_no=3");
  request.headers = {{"Content-Type", "application/x-ndjson"}, {"Authorization", "ApiKey c2VjcmV0"}};
  request.body = all_byte_values();
  auto response = transport->send(request);

  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->header("x-elastic-product"), "Elasticsearch");
  EXPECT_EQ(response->header("Content-Type"), "application/octet-stream");
  EXPECT_EQ(response->body, all_byte_values() + "|echo");
  for (const auto& [name, value] : response->headers) EXPECT_EQ(name, to_lower(name));

  std::lock_guard lock(mutex);
  EXPECT_EQ(seen.method, "PUT");
  EXPECT_EQ(seen.target, "/locks/_doc/a%2Fb?refresh=true&if_seq_no=3");
  EXPECT_EQ(seen.path, "/locks/_doc/a%2Fb");
  EXPECT_EQ(seen.query, "refresh=true&if_seq_no=3");
  EXPECT_EQ(seen.header("content-type"), "application/x-ndjson");
  EXPECT_EQ(seen.header("authorization"), "ApiKey c2VjcmV0");
  EXPECT_EQ(seen.body, all_byte_values());
  EXPECT_EQ(seen.remote.rfind("127.0.0.1:", 0), 0u) << seen.remote;
}

TEST(HttpRoundTrip, LargeBodiesBothWays) {
  auto server = start_server([](const ServerRequest& request, ServerResponse& response) {
    std::string reversed(request.body.rbegin(), request.body.rend());
    response.send(200, {{"Content-Type", "text/plain"}}, std::move(reversed));
  });
  auto transport = make_transport();
  std::string body;
  for (int i = 0; body.size() < 6 * 1024 * 1024; ++i) body += std::to_string(i) + ",";

  Request request;
  request.method = "POST";
  request.url = url_for(*server, "/big");
  request.headers = {{"Content-Type", "text/plain"}};
  request.body = body;
  auto response = transport->send(request);

  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->body, std::string(body.rbegin(), body.rend()));
  EXPECT_EQ(response->header("content-length"), std::to_string(body.size()));
}

TEST(HttpRoundTrip, EmptyBodiesAndHead) {
  auto server = start_server([](const ServerRequest& request, ServerResponse& response) {
    if (request.path == "/empty") {
      response.send(204, {}, "");
    } else {
      response.send(200, {{"Content-Type", "application/json"}}, R"({"exists":true})");
    }
  });
  auto transport = make_transport();

  auto empty = transport->send({.method = "DELETE", .url = url_for(*server, "/empty")});
  ASSERT_TRUE(empty.ok()) << empty.error().describe();
  EXPECT_EQ(empty->status, 204);
  EXPECT_EQ(empty->body, "");

  auto head = transport->send({.method = "HEAD", .url = url_for(*server, "/index")});
  ASSERT_TRUE(head.ok()) << head.error().describe();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->body, "");

  // The connection stays usable after a HEAD answer without a body.
  auto after = transport->send({.url = url_for(*server, "/index")});
  ASSERT_TRUE(after.ok()) << after.error().describe();
  EXPECT_EQ(after->body, R"({"exists":true})");
}

TEST(HttpRoundTrip, ResponseBodiesArePassedThroughUntouched) {
  // Bytes labelled as gzip that are not gzip: a decoding client would fail or alter them.
  const std::string not_really_gzip = "\x1f\x8b not gzip at all";
  auto server = start_server([&](const ServerRequest& request, ServerResponse& response) {
    response.send(200, {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}}, not_really_gzip);
  });
  auto transport = make_transport();
  auto response = transport->send({.url = url_for(*server, "/")});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->header("content-encoding"), "gzip");
  EXPECT_EQ(response->body, not_really_gzip);
}

TEST(HttpRoundTrip, KeepAliveReusesOneConnection) {
  std::mutex mutex;
  std::set<std::string> remotes;
  auto server = start_server([&](const ServerRequest& request, ServerResponse& response) {
    {
      std::lock_guard lock(mutex);
      remotes.insert(request.remote);
    }
    response.send(200, {{"Content-Type", "text/plain"}}, "ok");
  });
  auto transport = make_transport();
  for (int i = 0; i < 100; ++i) {
    auto response = transport->send({.url = url_for(*server, "/ping")});
    ASSERT_TRUE(response.ok()) << response.error().describe();
    EXPECT_EQ(response->body, "ok");
  }
  std::lock_guard lock(mutex);
  // One after another, every request goes out on the first connection.
  EXPECT_EQ(remotes.size(), 1u);
}

TEST(HttpRoundTrip, ErrorStatusesAreSuccessfulResults) {
  auto server = start_server([](const ServerRequest& request, ServerResponse& response) {
    if (request.path == "/missing") {
      response.send(404, {{"Content-Type", "application/json"}}, R"({"found":false})");
    } else if (request.path == "/throws") {
      throw std::runtime_error("handler exploded");
    }
    // Anything else: no answer at all.
  });
  auto transport = make_transport();

  auto missing = transport->send({.url = url_for(*server, "/missing")});
  ASSERT_TRUE(missing.ok()) << missing.error().describe();
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, R"({"found":false})");

  auto throws = transport->send({.url = url_for(*server, "/throws")});
  ASSERT_TRUE(throws.ok()) << throws.error().describe();
  EXPECT_EQ(throws->status, 500);
  EXPECT_NE(throws->body.find("handler exploded"), std::string::npos) << throws->body;

  auto silent = transport->send({.url = url_for(*server, "/silent")});
  ASSERT_TRUE(silent.ok()) << silent.error().describe();
  EXPECT_EQ(silent->status, 500);

  // The server is still serving after the failures.
  auto again = transport->send({.url = url_for(*server, "/missing")});
  ASSERT_TRUE(again.ok()) << again.error().describe();
  EXPECT_EQ(again->status, 404);
}

TEST(HttpRoundTrip, ConnectionRefusedIsUnavailable) {
  std::uint16_t port = 0;
  {
    auto server =
        start_server([](const ServerRequest&, ServerResponse& response) { response.send(200, {}, ""); });
    port = server->port();
  }  // stopped and closed: nothing listens on the port now
  auto transport = make_transport();
  auto response = transport->send(
      {.url = "http://127.0.0.1:" + std::to_string(port) + "/", .timeout = std::chrono::seconds(5)});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << response.error().describe();
}

TEST(HttpRoundTrip, SlowHandlerTimesOut) {
  Flag release;
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    release.wait_in_handler(response);
    response.send(200, {}, "late");
  });
  auto transport = make_transport();
  auto response =
      transport->send({.url = url_for(*server, "/slow"), .timeout = std::chrono::milliseconds(200)});
  release.set();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout) << response.error().describe();

  // A later request with time to spare succeeds on a fresh connection.
  auto next = transport->send({.url = url_for(*server, "/slow")});
  ASSERT_TRUE(next.ok()) << next.error().describe();
  EXPECT_EQ(next->body, "late");
}

// A handler that answers late waits in wait_closing(): it returns false once the time is
// up with the client still there, true as soon as the client leaves or the server stops.
TEST(HttpRoundTrip, LateAnswerReachesAClientThatWaits) {
  auto server = start_server([](const ServerRequest&, ServerResponse& response) {
    if (!response.wait_closing(std::chrono::milliseconds(20))) response.send(200, {}, "late");
  });
  auto response = make_transport()->send({.url = url_for(*server, "/late")});
  ASSERT_TRUE(response.ok()) << response.error().describe();
  EXPECT_EQ(response->body, "late");
}

TEST(HttpRoundTrip, LateAnswerWaitEndsWhenTheClientLeaves) {
  Flag ended;
  std::atomic<bool> client_left{false};
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    client_left = response.wait_closing(std::chrono::minutes(10));
    ended.set();
  });
  auto response =
      make_transport()->send({.url = url_for(*server, "/late"), .timeout = std::chrono::milliseconds(200)});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kTimeout);
  ASSERT_TRUE(ended.wait());
  EXPECT_TRUE(client_left.load());
}

TEST(HttpRoundTrip, LateAnswerWaitEndsWhenTheServerStops) {
  Flag waiting;
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    waiting.set();
    response.wait_closing(std::chrono::minutes(10));
  });
  std::thread client([&] {
    (void)make_transport()->send({.url = url_for(*server, "/late"), .timeout = std::chrono::minutes(5)});
  });
  ASSERT_TRUE(waiting.wait());
  auto stopped = std::async(std::launch::async, [&] { server->stop(); });
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  client.join();
}

TEST(HttpRoundTrip, DroppedConnectionIsUnavailable) {
  auto server =
      start_server([](const ServerRequest&, ServerResponse& response) { response.drop_connection(); });
  auto transport = make_transport();
  auto response = transport->send({.method = "POST", .url = url_for(*server, "/drop"), .body = "{}"});
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << response.error().describe();
}

TEST(HttpRoundTrip, WriteOnDroppedPooledConnectionIsNotResent) {
  std::mutex mutex;
  std::set<std::string> answered_from;
  std::vector<std::string> dropped_from;
  auto server = start_server([&](const ServerRequest& request, ServerResponse& response) {
    std::lock_guard lock(mutex);
    if (request.path == "/drop") {
      dropped_from.push_back(request.remote);
      response.drop_connection();
    } else {
      answered_from.insert(request.remote);
      response.send(200, {}, "ok");
    }
  });
  auto transport = make_transport();
  // Repeat until the write went out on a connection from the pool (usually at once).
  bool dropped_on_pooled_connection = false;
  for (int attempt = 1; attempt <= 20 && !dropped_on_pooled_connection; ++attempt) {
    ASSERT_TRUE(transport->send({.url = url_for(*server, "/ok")}).ok());
    auto response = transport->send({.method = "PUT", .url = url_for(*server, "/drop"), .body = "{}"});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().code, ErrorCode::kUnavailable) << response.error().describe();
    std::lock_guard lock(mutex);
    ASSERT_EQ(dropped_from.size(), static_cast<std::size_t>(attempt)) << "the write reached the server twice";
    dropped_on_pooled_connection = answered_from.count(dropped_from.back()) > 0;
  }
  EXPECT_TRUE(dropped_on_pooled_connection);
}

TEST(HttpRoundTrip, InvalidUrlIsInvalidArgument) {
  auto transport = make_transport();
  for (const char* url : {"not a url", "ftp://127.0.0.1/x", "http:///nohost"}) {
    auto response = transport->send({.url = url});
    ASSERT_FALSE(response.ok()) << url;
    EXPECT_EQ(response.error().code, ErrorCode::kInvalidArgument)
        << url << ": " << response.error().describe();
  }
}

}  // namespace
}  // namespace eslease::http
