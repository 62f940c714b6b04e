// Chunked responses: watch-style streams, their cancellation, idle timeout and shutdown.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <vector>

#include "http/transport.h"
#include "integration/http/loopback.h"

namespace eslease::http {
namespace {

// Runs transport->stream on a thread so the test can act while it is blocked.
class BackgroundStream {
 public:
  BackgroundStream(Transport& transport, Request request) {
    result_ = std::async(std::launch::async, [this, &transport, request = std::move(request)] {
      return transport.stream(
          request,
          [this](std::string_view chunk) {
            std::lock_guard lock(mutex_);
            chunks_.emplace_back(chunk);
            return true;
          },
          stop_.get_token());
    });
  }
  ~BackgroundStream() {
    stop_.request_stop();
    if (result_.valid()) result_.wait();
  }
  void stop() { stop_.request_stop(); }
  bool finished_within(std::chrono::milliseconds deadline) {
    return result_.wait_for(deadline) == std::future_status::ready;
  }
  Result<Response> result() { return result_.get(); }
  std::string received() {
    std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& chunk : chunks_) all += chunk;
    return all;
  }

 private:
  std::stop_source stop_;
  std::mutex mutex_;
  std::vector<std::string> chunks_;
  std::future<Result<Response>> result_;
};

TEST(HttpStreaming, PiecesArriveInOrderWhileTheServerIsStillWriting) {
  Flag first_seen_by_client;
  Flag server_finished;
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    ASSERT_TRUE(response.begin_chunked(200, {{"Content-Type", "application/json"}}));
    ASSERT_TRUE(response.write_chunk("{\"type\":\"ADDED\"}\n"));
    // The next piece is only written once the client has seen the first one.
    if (!first_seen_by_client.wait_in_handler(response)) return;
    response.write_chunk("{\"type\":\"MODIFIED\"}\n");
    response.write_chunk("{\"type\":\"DELETED\"}\n");
    server_finished.set();
    response.end_chunked();
  });
  auto transport = make_transport();

  std::string received;
  bool first_arrived_before_server_finished = false;
  auto result = transport->stream({.url = url_for(*server, "/watch?watch=true")},
                                  [&](std::string_view chunk) {
                                    if (received.empty()) {
                                      first_arrived_before_server_finished = !server_finished.is_set();
                                      first_seen_by_client.set();
                                    }
                                    received += chunk;
                                    return true;
                                  },
                                  {});

  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->header("content-type"), "application/json");
  EXPECT_EQ(result->body, "");
  EXPECT_TRUE(first_arrived_before_server_finished);
  EXPECT_EQ(received, "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n{\"type\":\"DELETED\"}\n");
}

TEST(HttpStreaming, NonSuccessAnswerComesBackWhole) {
  auto server = start_server([](const ServerRequest&, ServerResponse& response) {
    response.send(410, {{"Content-Type", "application/json"}},
                  R"({"kind":"Status","code":410,"reason":"Expired"})");
  });
  auto transport = make_transport();
  int pieces = 0;
  auto result = transport->stream({.url = url_for(*server, "/watch")},
                                  [&](std::string_view) { return ++pieces, true; }, {});
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result->status, 410);
  EXPECT_EQ(result->body, R"({"kind":"Status","code":410,"reason":"Expired"})");
  EXPECT_EQ(pieces, 0);
}

TEST(HttpStreaming, StopWhileTheServerIsSilentCancelsPromptly) {
  Flag handler_started;
  Flag handler_saw_close;
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    response.begin_chunked(200, {{"Content-Type", "application/json"}});
    handler_started.set();
    testing::wait_until([&] { return response.closing(); }, std::chrono::seconds(30));
    if (response.closing()) handler_saw_close.set();
  });
  auto transport = make_transport();
  BackgroundStream stream(*transport,
                          {.url = url_for(*server, "/watch"), .timeout = std::chrono::minutes(5)});
  ASSERT_TRUE(handler_started.wait());

  stream.stop();
  ASSERT_TRUE(stream.finished_within(std::chrono::seconds(5)));
  auto result = stream.result();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kCancelled) << result.error().describe();
  // Cancelling closes the connection, which the server notices.
  EXPECT_TRUE(handler_saw_close.wait());
}

TEST(HttpStreaming, SilenceLongerThanTheTimeoutIsATimeout) {
  auto server = start_server([](const ServerRequest&, ServerResponse& response) {
    response.begin_chunked(200, {});
    response.write_chunk("first");
    testing::wait_until([&] { return response.closing(); }, std::chrono::seconds(30));
  });
  auto transport = make_transport();
  std::string received;
  auto result =
      transport->stream({.url = url_for(*server, "/watch"), .timeout = std::chrono::milliseconds(300)},
                        [&](std::string_view chunk) { return received += chunk, true; }, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kTimeout) << result.error().describe();
  EXPECT_EQ(received, "first");
}

TEST(HttpStreaming, SteadyTrafficOutlivesTheIdleTimeout) {
  // Each gap is shorter than the idle timeout, so the stream survives although the
  // whole exchange takes far longer than the timeout.
  auto server = start_server([](const ServerRequest&, ServerResponse& response) {
    response.begin_chunked(200, {});
    // 40 gaps of 15 ms: the exchange outlasts the 400 ms idle timeout, while each gap stays
    // far below it even on a loaded machine.
    for (int i = 0; i < 40; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      response.write_chunk(std::to_string(i));
    }
    response.end_chunked();
  });
  auto transport = make_transport();
  std::string received;
  auto result =
      transport->stream({.url = url_for(*server, "/watch"), .timeout = std::chrono::milliseconds(400)},
                        [&](std::string_view chunk) { return received += chunk, true; }, {});
  ASSERT_TRUE(result.ok()) << result.error().describe();
  std::string expected;
  for (int i = 0; i < 40; ++i) expected += std::to_string(i);
  EXPECT_EQ(received, expected);
}

TEST(HttpStreaming, HandlerReturningFalseEndsTheStream) {
  Flag handler_saw_close;
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    response.begin_chunked(200, {});
    while (response.write_chunk("event\n")) {
      if (testing::wait_until([&] { return response.closing(); }, std::chrono::milliseconds(20))) break;
    }
    handler_saw_close.set();
  });
  auto transport = make_transport();
  int pieces = 0;
  auto result = transport->stream({.url = url_for(*server, "/watch")},
                                  [&](std::string_view) { return ++pieces < 2; }, {});
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(pieces, 2);
  EXPECT_TRUE(handler_saw_close.wait());
}

TEST(HttpStreaming, ServerStopEndsBlockedChunkedHandlers) {
  Flag handler_started;
  Flag handler_exited;
  auto server = start_server([&](const ServerRequest&, ServerResponse& response) {
    response.begin_chunked(200, {});
    response.write_chunk("hello");
    handler_started.set();
    testing::wait_until([&] { return response.closing(); }, std::chrono::minutes(5));
    handler_exited.set();
  });
  auto transport = make_transport();
  BackgroundStream stream(*transport,
                          {.url = url_for(*server, "/watch"), .timeout = std::chrono::minutes(5)});
  ASSERT_TRUE(handler_started.wait());

  auto stopping = std::async(std::launch::async, [&] { server->stop(); });
  ASSERT_EQ(stopping.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_TRUE(handler_exited.is_set());
  server->stop();  // idempotent

  // The client learns that the stream broke instead of hanging.
  ASSERT_TRUE(stream.finished_within(std::chrono::seconds(5)));
  auto result = stream.result();
  if (result.ok()) {
    EXPECT_EQ(result->status, 200);
  } else {
    EXPECT_EQ(result.error().code, ErrorCode::kUnavailable) << result.error().describe();
  }
  EXPECT_EQ(stream.received(), "hello");
}

TEST(HttpStreaming, DroppedStreamIsReported) {
  auto server = start_server([](const ServerRequest&, ServerResponse& response) {
    response.begin_chunked(200, {});
    response.write_chunk("partial");
    response.drop_connection();
  });
  auto transport = make_transport();
  std::string received;
  auto result = transport->stream({.url = url_for(*server, "/watch")},
                                  [&](std::string_view chunk) { return received += chunk, true; }, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kUnavailable) << result.error().describe();
}

}  // namespace
}  // namespace eslease::http
