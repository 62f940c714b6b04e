// The controller's configuration: flags beat the environment, which beats the file; every
// mistake is a clear usage error.
#include "config/controller_options.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace eslease::config {
namespace {

Environment env_of(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::string write_file(const std::string& text) {
  static int n = 0;
  auto path = std::filesystem::temp_directory_path() /
              ("eslease-config-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

TEST(ControllerOptions, DefaultsAndEveryKindOfFlag) {
  auto o = load_controller_options({"--es", "http://a:9200", "--es=http://b:9200", "--leader-elect",
                                    "--workers", "8", "--kube-api-qps=50.5", "--es-timeout", "3s",
                                    "--liveness-takeover=false", "--namespace", "x", "--namespace", "y"},
                                   env_of({}));
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->es_hosts, (std::vector<std::string>{"http://a:9200", "http://b:9200"}));
  EXPECT_TRUE(o->leader_elect);
  EXPECT_EQ(o->workers, 8);
  EXPECT_DOUBLE_EQ(o->kube_api_qps, 50.5);
  EXPECT_EQ(o->es_timeout, Millis(3000));
  EXPECT_FALSE(o->liveness_takeover);
  EXPECT_EQ(o->namespaces, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(o->metrics_bind_address, ":8080");
  EXPECT_EQ(o->health_probe_bind_address, ":8081");
  EXPECT_EQ(o->index, "eslease-locks");
}

TEST(ControllerOptions, FlagBeatsEnvironmentWhichBeatsFile) {
  const std::string file =
      write_file("es: [http://file:9200]\nworkers: 2\nmetrics-bind-address: \":7000\"\nindex: from-file\n");
  auto o =
      load_controller_options({"--config", file, "--workers", "6"},
                              env_of({{"ESLEASE_WORKERS", "5"}, {"ESLEASE_METRICS_BIND_ADDRESS", ":9090"}}));
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->workers, 6);
  EXPECT_EQ(o->metrics_bind_address, ":9090");
  EXPECT_EQ(o->index, "from-file");
  EXPECT_EQ(o->es_hosts, std::vector<std::string>{"http://file:9200"});
  auto from_env = load_controller_options({}, env_of({{"ESLEASE_ES", "http://a:1,http://b:2"}}));
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->es_hosts.size(), 2u);
}

struct BadCase {
  const char* name;
  std::vector<std::string> args;
  const char* file;
  const char* mentions;
};

class BadConfiguration : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfiguration, IsAUsageErrorNamingTheCulprit) {
  std::vector<std::string> args = GetParam().args;
  if (GetParam().file) {
    args.push_back("--config");
    args.push_back(std::string(GetParam().file) == "<missing>" ? "/nonexistent/eslease.yaml"
                                                               : write_file(GetParam().file));
  }
  auto o = load_controller_options(args, env_of({}));
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(o.error().message.find(GetParam().mentions), std::string::npos) << o.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, BadConfiguration,
    ::testing::Values(BadCase{"unknown_flag", {"--es", "x", "--bogus"}, nullptr, "--bogus"},
                      BadCase{"no_es", {}, nullptr, "--es"},
                      BadCase{"bad_duration", {"--es", "x", "--es-timeout", "30"}, nullptr, "--es-timeout"},
                      BadCase{"zero_workers", {"--es", "x", "--workers", "0"}, nullptr, "--workers"},
                      BadCase{"bad_qps", {"--es", "x", "--kube-api-qps", "fast"}, nullptr, "--kube-api-qps"},
                      BadCase{"bad_bind",
                              {"--es", "x", "--metrics-bind-address", "nowhere"},
                              nullptr,
                              "--metrics-bind-address"},
                      BadCase{
                          "bad_log_format", {"--es", "x", "--log-format", "xml"}, nullptr, "--log-format"},
                      BadCase{"leader_timings",
                              {"--es", "x", "--leader-election-lease-duration", "5s",
                               "--leader-election-renew-deadline", "10s"},
                              nullptr,
                              "lease-duration"},
                      BadCase{"missing_value", {"--es"}, nullptr, "--es"},
                      BadCase{"missing_file", {"--es", "x"}, "<missing>", "cannot read"},
                      BadCase{"bad_yaml", {"--es", "x"}, "workers: [1, 2", "not valid YAML"},
                      BadCase{"unknown_key", {"--es", "x"}, "wrkers: 2\n", "wrkers"},
                      BadCase{"wrong_type", {"--es", "x"}, "workers: {a: 1}\n", "workers"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(ControllerOptions, HelpListsEveryFlag) {
  const std::string usage = controller_usage();
  for (const char* flag : {"--kubeconfig",
                           "--es ",
                           "--index",
                           "--es-ca-file",
                           "--es-username",
                           "--es-password-file",
                           "--es-api-key-file",
                           "--es-bearer-token-file",
                           "--es-insecure-skip-tls-verify",
                           "--es-timeout",
                           "--metrics-bind-address",
                           "--health-probe-bind-address",
                           "--leader-elect",
                           "--leader-election-id",
                           "--leader-election-namespace",
                           "--leader-election-lease-duration",
                           "--leader-election-renew-deadline",
                           "--leader-election-retry-period",
                           "--namespace",
                           "--workers",
                           "--kube-api-qps",
                           "--kube-api-burst",
                           "--liveness-takeover",
                           "--identity",
                           "--log-format",
                           "--log-level",
                           "--config",
                           "--version",
                           "--help"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

}  // namespace
}  // namespace eslease::config
