// Every metric family, its typed method, the hook adapters and the label guard, read back
// from the exposition text exactly as Prometheus would scrape it.
#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "kube/informer.h"
#include "metrics/endpoints.h"

namespace eslease::metrics {
namespace {

// The value of the sample line that starts with `series` (name plus labels as the
// serializer writes them), or nullopt.
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

std::size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream lines(text);
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

TEST(Metrics, EveryFamilyIsExportedWithHelpAndType) {
  Metrics m("1.2.3");
  // A labelled family shows up once it has a series; give each one.
  m.count_backend_conflict("create");
  m.count_takeover("PodDeleted");
  m.observe_backend_request("get", 200, Millis(1));
  m.observe_kube_request("get", 200, Millis(1));
  m.count_watch_restart("pods", "closed");
  const std::string text = m.text();
  const std::vector<std::pair<const char*, const char*>> families = {
      {"eslease_claims", "gauge"},
      {"eslease_lock_waiters", "gauge"},
      {"eslease_acquire_wait_seconds", "histogram"},
      {"eslease_backend_conflicts_total", "counter"},
      {"eslease_takeovers_total", "counter"},
      {"eslease_takeover_latency_seconds", "histogram"},
      {"eslease_grants_total", "counter"},
      {"eslease_releases_total", "counter"},
      {"eslease_expirations_total", "counter"},
      {"eslease_renewal_failures_total", "counter"},
      {"eslease_fencing_token_epoch", "gauge"},
      {"eslease_fencing_refusals_total", "counter"},
      {"eslease_backend_request_duration_seconds", "histogram"},
      {"eslease_kube_request_duration_seconds", "histogram"},
      {"eslease_reconcile_total", "counter"},
      {"eslease_reconcile_duration_seconds", "histogram"},
      {"eslease_workqueue_depth", "gauge"},
      {"eslease_watch_restarts_total", "counter"},
      {"eslease_leader", "gauge"},
      {"eslease_build_info", "gauge"},
  };
  for (const auto& [name, type] : families) {
    EXPECT_NE(text.find(std::string("# HELP ") + name + " "), std::string::npos) << name;
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " " + type + "\n"), std::string::npos) << name;
  }
  EXPECT_EQ(sample(text, "eslease_build_info{version=\"1.2.3\"}"), 1);
}

TEST(Metrics, TheProcessIsDescribedAsTheGoClientNamesIt) {
  Metrics m("1.2.3");
  std::vector<char> ballast(8 << 20, 1);  // 8 MiB touched, so resident memory is well above it
  const std::string text = m.text();
  for (const auto& [name, type] :
       std::vector<std::pair<std::string, std::string>>{{"process_cpu_seconds_total", "counter"},
                                                        {"process_resident_memory_bytes", "gauge"},
                                                        {"process_virtual_memory_bytes", "gauge"},
                                                        {"process_virtual_memory_max_bytes", "gauge"},
                                                        {"process_start_time_seconds", "gauge"},
                                                        {"process_open_fds", "gauge"},
                                                        {"process_max_fds", "gauge"}}) {
    EXPECT_NE(text.find("# TYPE " + name + " " + type + "\n"), std::string::npos) << name;
    EXPECT_TRUE(sample(text, name).has_value()) << name;
  }
  EXPECT_GT(*sample(text, "process_resident_memory_bytes"), 8 << 20);
  EXPECT_GE(*sample(text, "process_virtual_memory_bytes"), *sample(text, "process_resident_memory_bytes"));
  EXPECT_GE(*sample(text, "process_cpu_seconds_total"), 0);
  EXPECT_GE(*sample(text, "process_open_fds"), 3) << "at least stdin, stdout and stderr";
  EXPECT_GE(*sample(text, "process_max_fds"), *sample(text, "process_open_fds"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(*sample(text, "process_start_time_seconds"), now + 1);
  EXPECT_GT(*sample(text, "process_start_time_seconds"), now - 24 * 3600) << "a test process started today";
  EXPECT_EQ(ballast.back(), 1);
}

TEST(Metrics, SeriesThatAlertsNeedStartAtZero) {
  Metrics m("v");
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_claims{phase=\"Pending\",priority=\"Foreground\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_claims{phase=\"Invalid\",priority=\"Background\"}"), 0);
  for (const char* result : {"success", "requeue", "error"})
    EXPECT_EQ(sample(text, std::string("eslease_reconcile_total{result=\"") + result + "\"}"), 0) << result;
  EXPECT_EQ(sample(text, "eslease_grants_total"), 0);
  EXPECT_EQ(sample(text, "eslease_renewal_failures_total"), 0);
  EXPECT_EQ(sample(text, "eslease_fencing_refusals_total"), 0);
  EXPECT_EQ(sample(text, "eslease_fencing_token_epoch"), 0);
  EXPECT_EQ(sample(text, "eslease_leader"), 0);
  // rate() and increase() see the first takeover, conflict or watch restart only if the
  // series existed before it.
  EXPECT_EQ(sample(text, "eslease_takeovers_total{reason=\"PodNotReady\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_backend_conflicts_total{op=\"take_over\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_watch_restarts_total{reason=\"expired\",resource=\"pods\"}"), 0);
}

TEST(Metrics, CountersAndGauges) {
  Metrics m("v");
  m.count_grant();
  m.count_grant();
  m.count_release();
  m.count_expiration();
  m.count_renewal_failure();
  m.set_fencing_epoch(3);
  m.count_fencing_refusal();
  m.count_takeover("PodDeleted");
  m.count_takeover("PodDeleted");
  m.count_takeover("Expired");
  m.count_backend_conflict("create");
  m.count_watch_restart("pods", "expired");
  m.count_watch_restart("leases", kube::RestartReason::kIdle);
  m.set_workqueue_depth(7);
  m.set_leader(true);
  m.set_claims("Held", "Foreground", 2);
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_grants_total"), 2);
  EXPECT_EQ(sample(text, "eslease_releases_total"), 1);
  EXPECT_EQ(sample(text, "eslease_expirations_total"), 1);
  EXPECT_EQ(sample(text, "eslease_renewal_failures_total"), 1);
  EXPECT_EQ(sample(text, "eslease_fencing_token_epoch"), 3);
  EXPECT_EQ(sample(text, "eslease_fencing_refusals_total"), 1);
  EXPECT_EQ(sample(text, "eslease_takeovers_total{reason=\"PodDeleted\"}"), 2);
  EXPECT_EQ(sample(text, "eslease_takeovers_total{reason=\"Expired\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_backend_conflicts_total{op=\"create\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_watch_restarts_total{reason=\"expired\",resource=\"pods\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_watch_restarts_total{reason=\"idle\",resource=\"leases\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_workqueue_depth"), 7);
  EXPECT_EQ(sample(text, "eslease_leader"), 1);
  EXPECT_EQ(sample(text, "eslease_claims{phase=\"Held\",priority=\"Foreground\"}"), 2);
  m.set_leader(false);
  EXPECT_EQ(sample(m.text(), "eslease_leader"), 0);
}

TEST(Metrics, HistogramsUseSecondsAndFineTakeoverBuckets) {
  Metrics m("v");
  m.observe_takeover_latency(0.004);
  m.observe_acquire_wait(12);
  m.count_reconcile("success", 0.002);
  m.count_reconcile("error", 0.5);
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_takeover_latency_seconds_bucket{le=\"0.001\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_takeover_latency_seconds_bucket{le=\"0.0025\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_takeover_latency_seconds_bucket{le=\"0.005\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_takeover_latency_seconds_bucket{le=\"60\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_takeover_latency_seconds_count"), 1);
  EXPECT_EQ(sample(text, "eslease_acquire_wait_seconds_sum"), 12);
  EXPECT_EQ(sample(text, "eslease_reconcile_total{result=\"success\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_reconcile_total{result=\"error\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_reconcile_duration_seconds_count"), 2);
}

TEST(Metrics, RequestsAreLabelledWithTheStatusOrError) {
  Metrics m("v");
  m.observe_backend_request("get", 200, Millis(3));
  m.observe_backend_request("create", 409, Millis(2));
  m.observe_backend_request("bulk", 0, Millis(10000));
  m.observe_kube_request("patch", 422, Millis(1));
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_backend_request_duration_seconds_count{code=\"200\",op=\"get\"}"), 1);
  EXPECT_DOUBLE_EQ(*sample(text, "eslease_backend_request_duration_seconds_sum{code=\"200\",op=\"get\"}"),
                   0.003);
  EXPECT_EQ(sample(text, "eslease_backend_request_duration_seconds_count{code=\"409\",op=\"create\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_backend_request_duration_seconds_count{code=\"error\",op=\"bulk\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_kube_request_duration_seconds_count{code=\"422\",verb=\"patch\"}"), 1);
  EXPECT_EQ(code_label(0), "error");
  EXPECT_EQ(code_label(-1), "error");
  EXPECT_EQ(code_label(1000), "error");
  EXPECT_EQ(code_label(503), "503");
}

TEST(Metrics, AdaptersFeedTheirFamilies) {
  Metrics m("v");
  RequestObserver es = m.backend_request_observer();
  RequestObserver kube = m.kube_request_observer();
  es("index", 201, Millis(4));
  kube("watch", 200, Millis(1));
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_backend_request_duration_seconds_count{code=\"201\",op=\"index\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_kube_request_duration_seconds_count{code=\"200\",verb=\"watch\"}"), 1);
}

TEST(Metrics, AClaimsSnapshotResetsWhatItDoesNotMention) {
  Metrics m("v");
  m.set_claims({{{"Held", "Foreground"}, 3}, {{"Pending", "Background"}, 5}}, 5);
  m.set_claims({{{"Pending", "Foreground"}, 1}}, 1);
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_claims{phase=\"Held\",priority=\"Foreground\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_claims{phase=\"Pending\",priority=\"Background\"}"), 0);
  EXPECT_EQ(sample(text, "eslease_claims{phase=\"Pending\",priority=\"Foreground\"}"), 1);
  EXPECT_EQ(sample(text, "eslease_lock_waiters"), 1);
}

TEST(Metrics, LabelValuesStayBoundedAndPrintable) {
  Metrics m("v");
  // A caller bug that passes lock names must not grow the series without end.
  for (int i = 0; i < 1000; ++i) m.count_takeover("lock-" + std::to_string(i));
  const std::string text = m.text();
  EXPECT_LE(count_lines_starting(text, "eslease_takeovers_total{"), kMaxSeriesPerFamily);
  EXPECT_TRUE(sample(text, "eslease_takeovers_total{reason=\"other\"}").has_value());
  double counted = 0;  // nothing is lost: every takeover is in some series
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("eslease_takeovers_total{", 0) == 0)
      counted += std::stod(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(counted, 1000);

  Metrics odd("v");
  odd.count_backend_conflict("bad \"op\"\n");
  odd.count_backend_conflict("");
  odd.count_backend_conflict(std::string(200, 'x'));
  const std::string odd_text = odd.text();
  EXPECT_EQ(sample(odd_text, "eslease_backend_conflicts_total{op=\"bad__op__\"}"), 1);
  EXPECT_EQ(sample(odd_text, "eslease_backend_conflicts_total{op=\"unknown\"}"), 1);
  EXPECT_EQ(sample(odd_text, "eslease_backend_conflicts_total{op=\"" + std::string(64, 'x') + "\"}"), 1);
}

TEST(Metrics, IsSafeToUseFromManyThreads) {
  Metrics m("v");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        m.count_grant();
        m.observe_backend_request(t % 2 ? "get" : "index", 200, Millis(1));
        m.count_takeover("PodDeleted");
        if (i % 100 == 0) (void)m.text();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const std::string text = m.text();
  EXPECT_EQ(sample(text, "eslease_grants_total"), 4000);
  EXPECT_EQ(sample(text, "eslease_takeovers_total{reason=\"PodDeleted\"}"), 4000);
  EXPECT_EQ(sample(text, "eslease_backend_request_duration_seconds_count{code=\"200\",op=\"get\"}"), 2000);
}

TEST(BindAddress, ValidatesWithoutBinding) {
  EXPECT_TRUE(validate_bind_address("0").ok());
  EXPECT_TRUE(validate_bind_address(":8080").ok());
  EXPECT_TRUE(validate_bind_address("127.0.0.1:0").ok());
  EXPECT_TRUE(validate_bind_address("[::1]:9090").ok());
  for (const char* bad : {"", "8080", "localhost", ":http", "1.2.3.4:70000"}) {
    auto s = validate_bind_address(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find("0 (off)"), std::string::npos) << s.error().message;
  }
}

}  // namespace
}  // namespace eslease::metrics
