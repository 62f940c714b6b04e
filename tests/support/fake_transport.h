// A scripted Transport: tests queue answers (or errors) and inspect the requests made.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "http/transport.h"

namespace eslease::testing {

class FakeTransport final : public http::Transport {
 public:
  using Responder = std::function<Result<http::Response>(const http::Request&)>;

  // Answers the next request with `status` and `body` (JSON content type).
  void push(int status, std::string body, http::Headers headers = {}) {
    std::lock_guard lock(mutex_);
    http::Response r;
    r.status = status;
    r.body = std::move(body);
    r.headers = std::move(headers);
    r.headers.emplace_back("content-type", "application/json");
    queue_.emplace_back(std::move(r));
  }
  // Fails the next request with a transport error.
  void push_error(ErrorCode code, std::string message = "injected") {
    std::lock_guard lock(mutex_);
    queue_.emplace_back(make_error(code, std::move(message)));
  }
  // Answers every request not covered by the queue.
  void set_responder(Responder responder) {
    std::lock_guard lock(mutex_);
    responder_ = std::move(responder);
  }

  Result<http::Response> send(const http::Request& request) override {
    std::lock_guard lock(mutex_);
    requests_.push_back(request);
    if (!queue_.empty()) {
      auto next = std::move(queue_.front());
      queue_.pop_front();
      return next;
    }
    if (responder_) return responder_(request);
    return make_error(ErrorCode::kUnavailable,
                      "FakeTransport: no scripted answer for " + request.method + " " + request.url);
  }

  // Streams the next scripted answer's body in one chunk.
  Result<http::Response> stream(const http::Request& request, const http::ChunkHandler& on_chunk,
                                std::stop_token stop) override {
    auto result = send(request);
    if (!result.ok()) return result;
    http::Response head = *result;
    if (head.status / 100 == 2) {
      if (!head.body.empty()) on_chunk(head.body);
      head.body.clear();
    }
    return head;
  }

  std::vector<http::Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::size_t request_count() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Result<http::Response>> queue_;
  Responder responder_;
  std::vector<http::Request> requests_;
};

}  // namespace eslease::testing
