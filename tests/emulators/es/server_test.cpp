// The emulator over real sockets, driven by the production HTTP transport.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/text.h"
#include "emulators/es/es_emulator.h"
#include "http/transport.h"
#include "support/wait.h"

namespace eslease::esemu {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

class EsEmulatorServer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(emulator_.start().ok());
    transport_ = http::make_transport();
  }
  void TearDown() override { emulator_.stop(); }

  Result<http::Response> send(const std::string& method, const std::string& target,
                              const std::string& body = "", http::Headers headers = {}) {
    http::Request request;
    request.method = method;
    request.url = emulator_.url() + target;
    request.body = body;
    request.headers = std::move(headers);
    if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
    return transport_->send(request);
  }

  EsEmulator emulator_;
  std::unique_ptr<http::Transport> transport_;
};

TEST_F(EsEmulatorServer, ServesTheDocumentApiWithProductHeader) {
  EXPECT_EQ(emulator_.url().rfind("http://127.0.0.1:", 0), 0u);
  auto info = send("GET", "/");
  ASSERT_TRUE(info.ok()) << info.error().describe();
  EXPECT_EQ(info->status, 200);
  EXPECT_EQ(info->header("X-elastic-product"), "Elasticsearch");
  EXPECT_EQ(json::parse(info->body)["tagline"], "You Know, for Search");

  const std::string id = percent_encode("batch/../_cluster/settings?x=1#y");
  auto created = send("PUT", "/locks/_create/" + id + "?refresh=true", R"({"holder":"a"})");
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->status, 201);
  EXPECT_EQ(json::parse(created->body)["_id"], "batch/../_cluster/settings?x=1#y");
  auto conflict = send("PUT", "/locks/_create/" + id, R"({"holder":"b"})");
  ASSERT_TRUE(conflict.ok());
  EXPECT_EQ(conflict->status, 409);
  auto head = send("HEAD", "/locks/_doc/" + id);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
}

TEST_F(EsEmulatorServer, ConcurrentCreatesHaveExactlyOneWinner) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 20;
  std::atomic<int> winners{0}, conflicts{0}, failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto transport = http::make_transport();
      for (int round = 0; round < kRounds; ++round) {
        http::Request request;
        request.method = "PUT";
        request.url = emulator_.url() + "/locks/_create/lock-" + std::to_string(round);
        request.headers.emplace_back("Content-Type", "application/json");
        request.body = R"({"holder":"x"})";
        auto r = transport->send(request);
        const int status = r.ok() ? r->status : 0;
        if (status == 201) {
          ++winners;
        } else if (status == 409) {
          ++conflicts;
        } else {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(winners.load(), kRounds);
  EXPECT_EQ(conflicts.load(), kRounds * (kThreads - 1));
  auto next = send("PUT", "/locks/_doc/after", R"({})");
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(json::parse(next->body)["_seq_no"], kRounds) << "only successful writes took sequence numbers";
}

TEST_F(EsEmulatorServer, DroppedConnectionsAreTransportErrors) {
  auto rule = send("POST", "/_emulator/faults", R"({"op":"update","drop":true,"count":-1})");
  ASSERT_TRUE(rule.ok());
  ASSERT_EQ(rule->status, 200);
  ASSERT_EQ(send("PUT", "/locks/_doc/1", R"({"a":1})")->status, 201);
  // A fresh connection, so the drop cannot be taken for a stale keep-alive connection.
  auto fresh = http::make_transport();
  http::Request request;
  request.method = "POST";
  request.url = emulator_.url() + "/locks/_update/1";
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = R"({"doc":{"a":2}})";
  auto dropped = fresh->send(request);
  EXPECT_FALSE(dropped.ok());
  ASSERT_EQ(send("DELETE", "/_emulator/faults")->status, 200);
  auto after = send("GET", "/locks/_doc/1");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(json::parse(after->body)["_source"]["a"], 1) << "a dropped update is not applied";
  auto stats = send("GET", "/_emulator/stats");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(json::parse(stats->body)["requests"]["update"].get<int>(), 1);
}

TEST_F(EsEmulatorServer, StopEndsAnInjectedLatencyInFlight) {
  ASSERT_TRUE(send("POST", "/_emulator/faults", R"({"op":"info","latency_ms":600000})").ok());
  std::thread client([&] { (void)send("GET", "/"); });
  // Once the request is being delayed, stop() must end the delay instead of waiting it out.
  ASSERT_TRUE(testing::wait_until([&] {
    auto stats = send("GET", "/_emulator/stats");
    return stats.ok() && json::parse(stats->body)["total"] == 1;
  }));
  emulator_.stop();
  client.join();
}

long long applied_unanswered(const Result<http::Response>& stats) {
  return stats.ok() ? json::parse(stats->body)["es_write_applied_unanswered"].get<long long>() : -1;
}

TEST_F(EsEmulatorServer, AWriteWhoseConnectionDropsAfterItIsAppliedIsThere) {
  ASSERT_EQ(send("POST", "/_emulator/faults", R"({"op":"create","phase":"after_apply","drop":true})")->status,
            200);
  http::Request request;
  request.method = "PUT";
  request.url = emulator_.url() + "/locks/_create/lock-1";
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = R"({"holder":"a"})";
  auto lost = http::make_transport()->send(request);
  EXPECT_FALSE(lost.ok()) << "the client saw no answer";
  auto got = send("GET", "/locks/_doc/lock-1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->status, 200) << "yet the write was applied";
  EXPECT_EQ(json::parse(got->body)["_source"]["holder"], "a");
  EXPECT_EQ(applied_unanswered(send("GET", "/_emulator/stats")), 1);
  auto retried = send("PUT", "/locks/_create/lock-1", R"({"holder":"a"})");
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->status, 409) << "a blind retry meets its own write";
}

TEST_F(EsEmulatorServer, ABulkAnsweredPastTheClientTimeoutAppliedAllItsItems) {
  ASSERT_EQ(
      send("POST", "/_emulator/faults", R"({"op":"bulk","phase":"after_apply","latency_ms":600000})")->status,
      200);
  http::Request request;
  request.method = "POST";
  request.url = emulator_.url() + "/_bulk";
  request.headers.emplace_back("Content-Type", "application/x-ndjson");
  request.body =
      "{\"create\":{\"_index\":\"locks\",\"_id\":\"a\"}}\n{\"v\":1}\n"
      "{\"create\":{\"_index\":\"locks\",\"_id\":\"b\"}}\n{\"v\":2}\n";
  request.timeout = std::chrono::milliseconds(300);
  auto timed_out = http::make_transport()->send(request);
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.error().code, ErrorCode::kTimeout);
  for (const char* id : {"a", "b"}) {
    auto got = send("GET", std::string("/locks/_doc/") + id);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->status, 200) << id;
  }
  // Counted once the server sees that the client has gone.
  EXPECT_TRUE(testing::wait_until([&] { return applied_unanswered(send("GET", "/_emulator/stats")) == 1; }));
}

TEST_F(EsEmulatorServer, StopEndsADelayedAnswerAndOtherRequestsAreServedMeanwhile) {
  ASSERT_TRUE(
      send("POST", "/_emulator/faults", R"({"op":"index","phase":"after_apply","latency_ms":600000})").ok());
  std::atomic<bool> answered{false};
  std::thread client([&] {
    http::Request request;
    request.method = "PUT";
    request.url = emulator_.url() + "/locks/_doc/held";
    request.headers.emplace_back("Content-Type", "application/json");
    request.body = R"({"holder":"a"})";
    request.timeout = std::chrono::minutes(5);
    answered = http::make_transport()->send(request).ok();
  });
  // The write is visible while its answer is held back, so other requests are being served.
  EXPECT_TRUE(testing::wait_until([&] {
    auto got = send("GET", "/locks/_doc/held");
    return got.ok() && got->status == 200;
  }));
  auto stopped = std::async(std::launch::async, [&] { emulator_.stop(); });
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  client.join();
  EXPECT_FALSE(answered.load()) << "the held answer was never sent";
}

TEST(EsEmulatorTls, ServesHttpsWithAuth) {
  const fs::path dir = fs::temp_directory_path() / ("es-emulator-tls-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string script = "cd '" + dir.string() +
                             "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                             "-keyout key.pem -out cert.pem -days 2 -subj /CN=127.0.0.1 "
                             "-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1";
  ASSERT_EQ(std::system(script.c_str()), 0) << "openssl could not make a test certificate";
  EsEmulatorOptions options;
  options.tls_cert_file = (dir / "cert.pem").string();
  options.tls_key_file = (dir / "key.pem").string();
  options.basic_auth = std::make_pair(std::string("elastic"), std::string("changeme"));
  EsEmulator emulator(options);
  ASSERT_TRUE(emulator.start().ok());
  EXPECT_EQ(emulator.url().rfind("https://127.0.0.1:", 0), 0u);
  http::TransportOptions transport_options;
  transport_options.tls.ca_file = (dir / "cert.pem").string();
  auto transport = http::make_transport(transport_options);
  http::Request request;
  request.url = emulator.url() + "/";
  auto denied = transport->send(request);
  ASSERT_TRUE(denied.ok()) << denied.error().describe();
  EXPECT_EQ(denied->status, 401);
  EXPECT_TRUE(denied->header("WWW-Authenticate").has_value());
  request.headers.emplace_back("Authorization", "Basic ZWxhc3RpYzpjaGFuZ2VtZQ==");
  auto allowed = transport->send(request);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->status, 200);
  emulator.stop();
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

}  // namespace
}  // namespace eslease::esemu
