// /metrics, /healthz and /readyz over real HTTP on 127.0.0.1 (port 0), fetched with the
// project's own transport; and the live /metrics output checked by promtool.
#include "metrics/endpoints.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include "http/transport.h"
#include "kube/informer.h"
#include "metrics/metrics.h"

namespace eslease::metrics {
namespace {

Result<http::Response> send(const http::Request& request) {
  return http::make_transport()->send(request);
}

http::Response fetch(const BoundEndpoint& server, const std::string& path,
                     const std::string& method = "GET") {
  http::Request request;
  request.method = method;
  request.url = "http://127.0.0.1:" + std::to_string(server.port) + path;
  request.timeout = std::chrono::seconds(10);
  auto response = send(request);
  EXPECT_TRUE(response.ok()) << request.url << ": " << response.error().describe();
  return response.ok() ? *response : http::Response{};
}

EndpointOptions loopback() {
  EndpointOptions options;
  options.metrics_address = "127.0.0.1:0";
  options.health_address = "127.0.0.1:0";
  return options;
}

std::unique_ptr<Endpoints> start(EndpointOptions options) {
  auto endpoints = Endpoints::start(std::move(options));
  EXPECT_TRUE(endpoints.ok()) << endpoints.error().describe();
  return endpoints.ok() ? std::move(*endpoints) : nullptr;
}

// A port that was free a moment ago, for the tests that need a fixed port.
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t size = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

TEST(Endpoints, TwoServersOnTheirOwnPorts) {
  EndpointOptions options = loopback();
  options.metrics_text = [] { return std::string("eslease_up 1\n"); };
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  const auto& bound = endpoints->bound();
  ASSERT_EQ(bound.size(), 2u);
  const BoundEndpoint& metrics = bound[0];
  const BoundEndpoint& health = bound[1];
  EXPECT_EQ(metrics.endpoint, "metrics");
  EXPECT_EQ(health.endpoint, "health");
  EXPECT_NE(metrics.port, 0);
  EXPECT_NE(health.port, 0);
  EXPECT_NE(metrics.port, health.port);
  EXPECT_EQ(metrics.address, "127.0.0.1:" + std::to_string(metrics.port));
  EXPECT_EQ(metrics.paths, std::vector<std::string>{"/metrics"});
  EXPECT_EQ(health.paths, (std::vector<std::string>{"/healthz", "/readyz"}));

  auto scraped = fetch(metrics, "/metrics");
  EXPECT_EQ(scraped.status, 200);
  EXPECT_EQ(scraped.body, "eslease_up 1\n");
  EXPECT_EQ(scraped.header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(fetch(metrics, "/metrics?name%5B%5D=x").status, 200);
  EXPECT_EQ(fetch(metrics, "/healthz").status, 404);
  EXPECT_EQ(fetch(health, "/metrics").status, 404);
  auto healthz = fetch(health, "/healthz");
  EXPECT_EQ(healthz.status, 200);
  EXPECT_EQ(healthz.body, "ok\n");
  EXPECT_EQ(fetch(health, "/readyz").status, 200);
  EXPECT_EQ(fetch(health, "/").status, 404);
  EXPECT_EQ(fetch(health, "/readyz/extra").status, 404);
}

TEST(Endpoints, ReadinessAndLivenessAnswer503WithTheReason) {
  std::atomic<bool> synced{false};
  std::atomic<bool> wedged{false};
  EndpointOptions options = loopback();
  options.metrics_address = "0";
  options.not_ready_reason = [&]() -> std::string { return synced ? "" : "caches are not synced"; };
  options.not_live_reason = [&]() -> std::string { return wedged ? "the work queue is stuck" : ""; };
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  ASSERT_EQ(endpoints->bound().size(), 1u);
  const BoundEndpoint& health = endpoints->bound()[0];

  auto not_ready = fetch(health, "/readyz");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_EQ(not_ready.body, "caches are not synced\n");
  EXPECT_EQ(fetch(health, "/healthz").status, 200);
  synced = true;
  EXPECT_EQ(fetch(health, "/readyz").status, 200);
  wedged = true;
  auto dead = fetch(health, "/healthz");
  EXPECT_EQ(dead.status, 503);
  EXPECT_EQ(dead.body, "the work queue is stuck\n");
}

TEST(Endpoints, OnlyGetAndHead) {
  EndpointOptions options = loopback();
  options.metrics_text = [] { return std::string("eslease_up 1\n"); };
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  const BoundEndpoint& metrics = endpoints->bound()[0];
  auto post = fetch(metrics, "/metrics", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(post.header("allow"), "GET, HEAD");
  auto head = fetch(metrics, "/metrics", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
}

TEST(Endpoints, AFailingScrapeAnswers500AndTheServerStaysUp) {
  std::atomic<bool> fail{true};
  EndpointOptions options = loopback();
  options.metrics_text = [&]() -> std::string {
    if (fail) throw std::runtime_error("collect failed");
    return "eslease_up 1\n";
  };
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  EXPECT_EQ(fetch(endpoints->bound()[0], "/metrics").status, 500);
  fail = false;
  EXPECT_EQ(fetch(endpoints->bound()[0], "/metrics").status, 200);
}

TEST(Endpoints, EqualFixedAddressesShareOneServer) {
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  EndpointOptions options;
  options.metrics_address = address;
  options.health_address = address;
  options.metrics_text = [] { return std::string("eslease_up 1\n"); };
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  ASSERT_EQ(endpoints->bound().size(), 1u);
  const BoundEndpoint& shared = endpoints->bound()[0];
  EXPECT_EQ(shared.endpoint, "metrics+health");
  EXPECT_EQ(shared.address, address);
  EXPECT_EQ(shared.paths, (std::vector<std::string>{"/metrics", "/healthz", "/readyz"}));
  EXPECT_EQ(fetch(shared, "/metrics").status, 200);
  EXPECT_EQ(fetch(shared, "/healthz").status, 200);
  EXPECT_EQ(fetch(shared, "/readyz").status, 200);
}

TEST(Endpoints, ZeroTurnsAServerOff) {
  EndpointOptions options;
  options.metrics_address = "0";
  options.health_address = "0";
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  EXPECT_TRUE(endpoints->bound().empty());

  options = loopback();
  options.health_address = "0";
  auto metrics_only = start(options);
  ASSERT_TRUE(metrics_only);
  ASSERT_EQ(metrics_only->bound().size(), 1u);
  EXPECT_EQ(metrics_only->bound()[0].endpoint, "metrics");
}

TEST(Endpoints, ABadAddressIsAUsageErrorNamingTheServer) {
  EndpointOptions options = loopback();
  options.health_address = "localhost";
  auto endpoints = Endpoints::start(options);
  ASSERT_FALSE(endpoints.ok());
  EXPECT_EQ(endpoints.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(endpoints.error().message.find("health-probe bind address \"localhost\""), std::string::npos)
      << endpoints.error().message;
}

TEST(Endpoints, APortInUseIsReportedWithTheAddress) {
  auto first = start(loopback());
  ASSERT_TRUE(first);
  const std::string taken = first->bound()[0].address;
  EndpointOptions options = loopback();
  options.health_address = taken;
  auto second = Endpoints::start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(second.error().message.find("cannot listen on " + taken + " for /healthz and /readyz"),
            std::string::npos)
      << second.error().message;
}

TEST(Endpoints, StopIsIdempotentAndClosesThePort) {
  auto endpoints = start(loopback());
  ASSERT_TRUE(endpoints);
  const BoundEndpoint health = endpoints->bound()[1];
  endpoints->stop();
  endpoints->stop();
  http::Request request;
  request.url = "http://127.0.0.1:" + std::to_string(health.port) + "/healthz";
  request.timeout = std::chrono::seconds(5);
  auto refused = send(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
}

// ------------------------------------------------------------------------------------------
// promtool, on what Prometheus would really scrape.

struct Checked {
  int exit_code = -1;
  std::string output;
};

Checked promtool_check(const std::string& exposition) {
  static std::atomic<int> counter{0};
  const auto file =
      std::filesystem::temp_directory_path() /
      ("eslease-promtool-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".txt");
  std::ofstream(file) << exposition;
  Checked checked;
  FILE* pipe = ::popen(("/usr/bin/promtool check metrics < '" + file.string() + "' 2>&1").c_str(), "r");
  if (!pipe) return checked;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) checked.output.append(buffer, n);
  const int status = ::pclose(pipe);
  checked.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::filesystem::remove(file);
  return checked;
}

bool have_promtool() {
  return ::access("/usr/bin/promtool", X_OK) == 0;
}

// Every family with observations, every labelled family with several series.
void observe_everything(Metrics& m) {
  m.set_claims({{{"Held", "Foreground"}, 2}, {{"Pending", "Background"}, 3}}, 3);
  m.observe_acquire_wait(4.5);
  m.count_backend_conflict("create");
  m.count_backend_conflict("update");
  m.count_takeover("PodDeleted");
  m.count_takeover("Expired");
  m.observe_takeover_latency(0.004);
  m.count_grant();
  m.count_release();
  m.count_expiration();
  m.count_renewal_failure();
  m.observe_backend_request("get", 200, Millis(2));
  m.observe_backend_request("create", 409, Millis(3));
  m.observe_backend_request("bulk", 0, Millis(10000));
  m.kube_request_observer()("patch", 200, Millis(1));
  m.kube_request_observer()("list", 0, Millis(30000));
  m.count_reconcile("success", 0.003);
  m.count_reconcile("requeue", 0.01);
  m.count_reconcile("error", 0.2);
  m.set_workqueue_depth(4);
  m.count_watch_restart("leases", kube::RestartReason::kExpired);
  m.count_watch_restart("pods", "idle");
  m.set_leader(true);
}

TEST(Promtool, LiveMetricsPassCheckMetrics) {
  if (!have_promtool())
    GTEST_SKIP() << "promtool is not installed (Debian package `prometheus`); skipping the check";
  Metrics m("0.1.0");
  observe_everything(m);
  EndpointOptions options = loopback();
  options.health_address = "0";
  options.metrics_text = [&] { return m.text(); };
  auto endpoints = start(options);
  ASSERT_TRUE(endpoints);
  auto scraped = fetch(endpoints->bound()[0], "/metrics");
  ASSERT_EQ(scraped.status, 200);
  for (const char* family :
       {"eslease_claims{", "eslease_acquire_wait_seconds_bucket", "eslease_takeovers_total{",
        "eslease_backend_request_duration_seconds_bucket", "eslease_kube_request_duration_seconds_bucket",
        "eslease_watch_restarts_total{", "eslease_renewal_failures_total", "eslease_build_info{"}) {
    EXPECT_NE(scraped.body.find(family), std::string::npos) << family;
  }
  const Checked checked = promtool_check(scraped.body);
  EXPECT_EQ(checked.exit_code, 0) << "promtool check metrics reported:\n" << checked.output;
  EXPECT_EQ(checked.output, "") << checked.output;
}

// The check above proves something only if promtool fails on problems it should find.
TEST(Promtool, RejectsWhatItShould) {
  if (!have_promtool())
    GTEST_SKIP() << "promtool is not installed (Debian package `prometheus`); skipping the check";
  const Checked lint = promtool_check("# HELP requests Requests.\n# TYPE requests counter\nrequests 1\n");
  EXPECT_NE(lint.exit_code, 0);
  EXPECT_NE(lint.output.find("_total"), std::string::npos) << lint.output;
  EXPECT_NE(promtool_check("not a metric {{\n").exit_code, 0);
}

}  // namespace
}  // namespace eslease::metrics
