// Injected faults of the kube-emulator whose write is applied while its answer is lost or
// late: in memory through the handler, and over real HTTP with the production transport.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "emulators/kube/kube_emulator.h"
#include "emulators/kube/tests/api_test_support.h"
#include "http/transport.h"
#include "support/wait.h"

namespace eslease::kubeemu {
namespace {

using nlohmann::json;
using testing::call;

const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const std::string kWidgets = "/apis/example.io/v1/namespaces/default/widgets";
const std::string kCrds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

std::uint64_t applied_unanswered(ApiServer& api) {
  return call(api, "GET", "/_emulator/stats").body["kube_write_applied_unanswered"].get<std::uint64_t>();
}

json after_apply(const std::string& verb, const std::string& resource, const json& extra) {
  json rule = {{"verb", verb}, {"resource", resource}, {"phase", "after_apply"}, {"count", 1}};
  rule.update(extra);
  return rule;
}

TEST(KubeFaults, RulesAfterApplyAreForWritesAndLoseAnswersOnly) {
  ApiServer api{ApiServerOptions{}};
  auto add = [&](const json& rule) { return call(api, "POST", "/_emulator/faults", rule); };
  EXPECT_EQ(add({{"verb", "create"}, {"phase", "later"}, {"drop", true}}).status, 400);
  auto read = add({{"verb", "get"}, {"phase", "after_apply"}, {"drop", true}});
  EXPECT_EQ(read.status, 400);
  EXPECT_EQ(read.body["message"],
            "phase after_apply is for writes: verb must be create, update, patch, delete or *");
  EXPECT_EQ(add({{"verb", "create"}, {"phase", "after_apply"}, {"status", 500}}).status, 400);
  EXPECT_EQ(add({{"verb", "create"}, {"phase", "after_apply"}}).status, 400) << "a fault that does nothing";
  EXPECT_EQ(applied_unanswered(api), 0u);
}

TEST(KubeFaults, AResourceNamesEveryGroupsPluralOrOneGroupsWithItsGroup) {
  ApiServer api{ApiServerOptions{}};
  const json lease = {
      {"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}, {"metadata", {{"name", "a"}}}};
  ASSERT_EQ(call(api, "POST", "/_emulator/faults",
                 json{{"verb", "create"}, {"resource", "leases.example.io"}, {"status", 500}})
                .status,
            200);
  EXPECT_EQ(call(api, "POST", kLeases, lease).status, 201) << "another group's leases are not struck";
  ASSERT_EQ(call(api, "POST", "/_emulator/faults",
                 json{{"verb", "create"}, {"resource", "leases.coordination.k8s.io"}, {"status", 500}})
                .status,
            200);
  EXPECT_EQ(call(api, "POST", kLeases, lease).status, 500);
  ASSERT_EQ(call(api, "DELETE", "/_emulator/faults").status, 200);
  ASSERT_EQ(call(api, "POST", "/_emulator/faults",
                 json{{"verb", "create"}, {"resource", "leases"}, {"status", 500}})
                .status,
            200);
  EXPECT_EQ(call(api, "POST", kLeases, lease).status, 500) << "a bare plural strikes every group";
}

TEST(KubeFaults, EachWriteVerbIsAppliedWhileItsAnswerIsDropped) {
  ApiServer api{ApiServerOptions{}};
  ASSERT_EQ(call(api, "POST", kCrds, testing::widget_crd()).status, 201);
  ASSERT_EQ(call(api, "POST", kWidgets, testing::widget("w", 1)).status, 201);
  for (const char* verb : {"create", "update", "patch", "delete"}) {
    ASSERT_EQ(call(api, "POST", "/_emulator/faults", after_apply(verb, "widgets", {{"drop", true}})).status,
              200);
  }
  auto created = call(api, "POST", kWidgets, testing::widget("v", 2));
  EXPECT_TRUE(created.response->dropped());
  EXPECT_EQ(created.status, 0) << "no answer was sent";
  EXPECT_EQ(call(api, "GET", kWidgets + "/v").body["spec"]["size"], 2);

  json current = call(api, "GET", kWidgets + "/w").body;
  current["spec"]["size"] = 5;
  EXPECT_TRUE(call(api, "PUT", kWidgets + "/w", current).response->dropped());
  EXPECT_EQ(call(api, "GET", kWidgets + "/w").body["spec"]["size"], 5);

  auto patched = call(api, "PATCH", kWidgets + "/w/status", {{"status", {{"phase", "Ready"}}}},
                      {{"Content-Type", "application/merge-patch+json"}});
  EXPECT_TRUE(patched.response->dropped());
  EXPECT_EQ(call(api, "GET", kWidgets + "/w").body["status"]["phase"], "Ready");

  EXPECT_TRUE(call(api, "DELETE", kWidgets + "/v").response->dropped());
  EXPECT_EQ(call(api, "GET", kWidgets + "/v").status, 404);
  EXPECT_EQ(applied_unanswered(api), 4u);

  EXPECT_EQ(call(api, "DELETE", kWidgets + "/w").status, 200) << "each rule had one use";
  EXPECT_EQ(applied_unanswered(api), 4u);
}

TEST(KubeFaults, AWriteThatFailsIsAnsweredAndLeavesTheRule) {
  ApiServer api{ApiServerOptions{}};
  ASSERT_EQ(call(api, "POST", kLeases, testing::lease("a")).status, 201);
  call(api, "POST", "/_emulator/faults", after_apply("*", "leases", {{"drop", true}}));
  EXPECT_EQ(call(api, "POST", kLeases, testing::lease("a")).status, 409);
  EXPECT_EQ(call(api, "DELETE", kLeases + "/missing").status, 404);
  EXPECT_EQ(call(api, "GET", kLeases + "/a").status, 200) << "reads are not writes";
  EXPECT_EQ(applied_unanswered(api), 0u);
  EXPECT_TRUE(call(api, "POST", kLeases, testing::lease("b")).response->dropped());
  EXPECT_EQ(applied_unanswered(api), 1u);
}

TEST(KubeFaults, ALateAnswerIsLostWhenTheClientLeavesAndSentWhenItWaits) {
  ApiServer api{ApiServerOptions{}};
  call(api, "POST", "/_emulator/faults", after_apply("create", "leases", {{"latency_ms", 600000}}));
  auto response = std::make_shared<testing::RecordingResponse>();
  const auto request = testing::make_request("POST", kLeases, testing::lease("late").dump());
  std::thread writer([&] { api.handle(request, *response); });
  // The write is applied, and other requests are served, while its answer waits.
  EXPECT_TRUE(
      eslease::testing::wait_until([&] { return call(api, "GET", kLeases + "/late").status == 200; }));
  response->close_from_client();
  writer.join();
  EXPECT_TRUE(response->dropped());
  EXPECT_EQ(response->status(), 0);
  EXPECT_EQ(applied_unanswered(api), 1u);

  call(api, "POST", "/_emulator/faults", after_apply("create", "leases", {{"latency_ms", 20}}));
  auto waited = call(api, "POST", kLeases, testing::lease("waited"));
  EXPECT_EQ(waited.status, 201) << "a client still there gets the late answer";
  EXPECT_FALSE(waited.response->dropped());
  EXPECT_EQ(applied_unanswered(api), 1u);
}

class KubeFaultsOverHttp : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(emulator_.start().ok()); }
  void TearDown() override { emulator_.stop(); }

  Result<http::Response> send(const std::string& method, const std::string& path, const json& body = nullptr,
                              std::chrono::milliseconds timeout = std::chrono::seconds(10),
                              const std::string& content_type = "application/json") {
    http::Request request;
    request.method = method;
    request.url = emulator_.url() + path;
    request.timeout = timeout;
    if (!body.is_null()) {
      request.body = body.dump();
      request.headers.emplace_back("Content-Type", content_type);
    }
    // A fresh connection each time, so that a dropped one is never taken for a stale one.
    return http::make_transport()->send(request);
  }
  int status_of(const std::string& path) {
    auto reply = send("GET", path);
    return reply.ok() ? reply->status : 0;
  }
  std::uint64_t applied_unanswered() {
    auto stats = send("GET", "/_emulator/stats");
    return stats.ok() ? json::parse(stats->body)["kube_write_applied_unanswered"].get<std::uint64_t>() : 0;
  }

  KubeEmulator emulator_;
};

TEST_F(KubeFaultsOverHttp, ACreateWhoseConnectionDropsAfterItIsAppliedIsThere) {
  ASSERT_EQ(send("POST", "/_emulator/faults", after_apply("create", "leases", {{"drop", true}}))->status,
            200);
  auto lost = send("POST", kLeases, testing::lease("a"));
  EXPECT_FALSE(lost.ok()) << "the client saw no answer";
  EXPECT_EQ(status_of(kLeases + "/a"), 200) << "yet the Lease was created";
  EXPECT_EQ(applied_unanswered(), 1u);
  auto retried = send("POST", kLeases, testing::lease("a"));
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->status, 409) << "a blind retry meets its own write";
}

TEST_F(KubeFaultsOverHttp, AStatusPatchAnsweredPastTheClientTimeoutWasApplied) {
  ASSERT_EQ(send("POST", kCrds, testing::widget_crd())->status, 201);
  ASSERT_EQ(send("POST", kWidgets, testing::widget("w"))->status, 201);
  ASSERT_EQ(
      send("POST", "/_emulator/faults", after_apply("patch", "widgets", {{"latency_ms", 600000}}))->status,
      200);
  auto timed_out = send("PATCH", kWidgets + "/w/status", {{"status", {{"phase", "Ready"}}}},
                        std::chrono::milliseconds(300), "application/merge-patch+json");
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.error().code, ErrorCode::kTimeout);
  auto got = send("GET", kWidgets + "/w");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(json::parse(got->body)["status"]["phase"], "Ready");
  // Counted once the server sees that the client has gone.
  EXPECT_TRUE(eslease::testing::wait_until([&] { return applied_unanswered() == 1u; }));
}

TEST_F(KubeFaultsOverHttp, StopEndsADelayedAnswer) {
  ASSERT_EQ(send("POST", kLeases, testing::lease("a"))->status, 201);
  ASSERT_EQ(
      send("POST", "/_emulator/faults", after_apply("delete", "leases", {{"latency_ms", 600000}}))->status,
      200);
  std::atomic<bool> answered{false};
  std::thread client(
      [&] { answered = send("DELETE", kLeases + "/a", nullptr, std::chrono::minutes(5)).ok(); });
  EXPECT_TRUE(eslease::testing::wait_until([&] { return status_of(kLeases + "/a") == 404; }));
  auto stopped = std::async(std::launch::async, [&] { emulator_.stop(); });
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  client.join();
  EXPECT_FALSE(answered.load()) << "the held answer was never sent";
}

}  // namespace
}  // namespace eslease::kubeemu
