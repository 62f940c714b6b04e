// Shared pieces of the HTTP integration tests: a server on 127.0.0.1:0 and a flag that
// handlers and clients use to wait for each other with a deadline.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "http/server.h"
#include "support/wait.h"

namespace eslease::http {

inline std::unique_ptr<Server> start_server(Handler handler, ServerOptions options = {}) {
  options.host = "127.0.0.1";
  options.port = 0;
  auto server = make_server(std::move(options), std::move(handler));
  auto started = server->start();
  EXPECT_TRUE(started.ok()) << started.error().describe();
  return server;
}

inline std::string url_for(const Server& server, const std::string& path,
                           const std::string& scheme = "http") {
  return scheme + "://127.0.0.1:" + std::to_string(server.port()) + path;
}

class Flag {
 public:
  void set() { value_ = true; }
  bool is_set() const { return value_; }
  // Waits for the flag on the test thread.
  bool wait(std::chrono::milliseconds deadline = std::chrono::seconds(10)) const {
    return testing::wait_until([this] { return value_.load(); }, deadline);
  }
  // Waits inside a handler; also gives up when the server or the peer is closing.
  bool wait_in_handler(const ServerResponse& response,
                       std::chrono::milliseconds deadline = std::chrono::seconds(10)) const {
    return testing::wait_until([&] { return value_.load() || response.closing(); }, deadline) && value_;
  }

 private:
  std::atomic<bool> value_{false};
};

}  // namespace eslease::http
