// The controller's configuration: every flag from every source (command line, environment,
// YAML file), the precedence between them, runtime defaults, --help, and every mistake as
// a usage error that names the culprit.
#include "config/controller_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace eslease::config {
namespace {

namespace fs = std::filesystem;

// A scratch folder per test; config files are real files, read through their paths.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
    dir_ = fs::temp_directory_path() / ("eslease-config-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_file(const std::string& text, const std::string& name = "config.yaml") {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  fs::path dir_;
};

Result<ControllerConfig> load(std::vector<std::string> args, const EnvironmentVariables& env = {}) {
  return load_controller_config(args, env);
}

// ------------------------------------------------------------------------------------------
// Defaults and the command line.

TEST_F(ConfigTest, DefaultsMatchTheDesign) {
  auto o = load({"--es", "http://a:9200"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->kubeconfig, "");
  EXPECT_TRUE(o->namespaces.empty());
  EXPECT_DOUBLE_EQ(o->kube_api_qps, 200);
  EXPECT_EQ(o->kube_api_burst, 400);
  EXPECT_EQ(o->elasticsearch.hosts, std::vector<std::string>{"http://a:9200"});
  EXPECT_EQ(o->elasticsearch.index, "eslease-locks");
  EXPECT_EQ(o->elasticsearch.ca_file, "");
  EXPECT_EQ(o->elasticsearch.username, "");
  EXPECT_EQ(o->elasticsearch.password_file, "");
  EXPECT_EQ(o->elasticsearch.api_key_file, "");
  EXPECT_EQ(o->elasticsearch.bearer_token_file, "");
  EXPECT_FALSE(o->elasticsearch.insecure_skip_tls_verify);
  EXPECT_EQ(o->elasticsearch.request_timeout, Millis(5000));
  EXPECT_EQ(o->metrics_bind_address, ":8080");
  EXPECT_EQ(o->health_probe_bind_address, ":8081");
  EXPECT_FALSE(o->leader_elect);
  EXPECT_EQ(o->leader_election_id, "eslease-controller");
  EXPECT_EQ(o->leader_election_namespace, "");  // resolved later, from where it runs
  EXPECT_EQ(o->leader_election_lease_duration, Millis(3000));
  EXPECT_EQ(o->leader_election_renew_deadline, Millis(2000));
  EXPECT_EQ(o->leader_election_retry_period, Millis(500));
  EXPECT_EQ(o->node_heartbeat_grace, Millis(12000));
  EXPECT_EQ(o->workers, 4);
  EXPECT_TRUE(o->liveness_takeover);
  EXPECT_TRUE(o->holds_annotation);
  EXPECT_EQ(o->identity, "");
  EXPECT_EQ(o->log_format, "text");
  EXPECT_EQ(o->log_level, "info");
  EXPECT_FALSE(o->version);
  EXPECT_FALSE(o->help);
  EXPECT_EQ(o->config_file, "");
}

TEST_F(ConfigTest, TimingsThatWouldStopHealthyHoldersAreWarnedAbout) {
  auto defaults = load({"--es", "http://a:9200", "--leader-elect"});
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(longest_renewal_pause(*defaults), Millis(5500));
  EXPECT_TRUE(timing_warnings(*defaults).empty());

  // A 15 s leader-election lease (client-go's default): an unclean failover pauses renewals
  // for 18 s, longer than the 6.8 s a holder of a default Lease rides out.
  auto slow = load({"--es", "http://a:9200", "--leader-elect", "--leader-election-lease-duration", "15s",
                    "--leader-election-renew-deadline", "10s", "--leader-election-retry-period", "1s"});
  ASSERT_TRUE(slow.ok()) << slow.error().message;
  EXPECT_EQ(longest_renewal_pause(*slow), Millis(18000));
  const auto warnings = timing_warnings(*slow);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("up to 18s"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("6800ms"), std::string::npos) << warnings[0];

  // Without leader election there is no failover; a long Elasticsearch timeout still counts.
  auto single = load({"--es", "http://a:9200", "--leader-election-lease-duration", "40s",
                      "--leader-election-renew-deadline", "30s"});
  ASSERT_TRUE(single.ok()) << single.error().message;
  EXPECT_TRUE(timing_warnings(*single).empty());
  auto slow_es = load({"--es", "http://a:9200", "--es-timeout", "30s"});
  ASSERT_TRUE(slow_es.ok()) << slow_es.error().message;
  EXPECT_EQ(timing_warnings(*slow_es).size(), 1u);
}

TEST_F(ConfigTest, FlagsTakeSpaceOrEqualsAndOneOrTwoDashes) {
  auto o = load({"--es", "http://a:9200", "--es=http://b:9200", "-es", "http://c:9200", "--workers=8",
                 "-kube-api-qps", "50.5", "--es-timeout", "3s", "--namespace", "x", "--namespace=y"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->elasticsearch.hosts,
            (std::vector<std::string>{"http://a:9200", "http://b:9200", "http://c:9200"}));
  EXPECT_EQ(o->workers, 8);
  EXPECT_DOUBLE_EQ(o->kube_api_qps, 50.5);
  EXPECT_EQ(o->elasticsearch.request_timeout, Millis(3000));
  EXPECT_EQ(o->namespaces, (std::vector<std::string>{"x", "y"}));
}

TEST_F(ConfigTest, BooleansAsBareFlagOrWithAValue) {
  auto bare = load({"--es", "http://a:9200", "--leader-elect", "--es-insecure-skip-tls-verify"});
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_TRUE(bare->leader_elect);
  EXPECT_TRUE(bare->elasticsearch.insecure_skip_tls_verify);
  for (const char* yes : {"true", "True", "TRUE", "t", "1"}) {
    auto o = load({"--es", "http://a:9200", std::string("--leader-elect=") + yes});
    ASSERT_TRUE(o.ok()) << yes;
    EXPECT_TRUE(o->leader_elect) << yes;
  }
  for (const char* no : {"false", "False", "f", "0"}) {
    auto o = load({"--es", "http://a:9200", std::string("--liveness-takeover=") + no});
    ASSERT_TRUE(o.ok()) << no;
    EXPECT_FALSE(o->liveness_takeover) << no;
  }
}

// The connection flags' boolean reads the spellings every other boolean reads (parse_bool),
// as the eslease tool reads it too.
TEST_F(ConfigTest, TheConnectionBooleanReadsTheOneGrammar) {
  auto on = load({"--es", "http://a:9200", "-es-insecure-skip-tls-verify=T"});
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_TRUE(on->elasticsearch.insecure_skip_tls_verify);
  auto off = load({"--es", "http://a:9200"}, {{"ESLEASE_ES_INSECURE_SKIP_TLS_VERIFY", "0"}});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_FALSE(off->elasticsearch.insecure_skip_tls_verify);
  auto refused = load({"--es", "http://a:9200", "--es-insecure-skip-tls-verify=yes"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message, R"(--es-insecure-skip-tls-verify: must be true or false, not "yes")");
}

TEST_F(ConfigTest, AScalarFlagGivenTwiceKeepsTheLastValue) {
  auto o = load({"--es", "http://a:9200", "--workers", "2", "--workers", "3"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->workers, 3);
}

TEST_F(ConfigTest, HelpAndVersionNeedNothingElseAndIgnoreABrokenConfiguration) {
  const EnvironmentVariables broken{{"ESLEASE_WORKERS", "0"},
                                    {"ESLEASE_CONFIG", "/nonexistent/eslease.yaml"}};
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"--help"}, {"-h"}}) {
    auto o = load(args, broken);
    ASSERT_TRUE(o.ok()) << o.error().message;
    EXPECT_TRUE(o->help);
  }
  auto version = load({"--version", "--config", "/nonexistent"}, broken);
  ASSERT_TRUE(version.ok()) << version.error().message;
  EXPECT_TRUE(version->version);
}

// ------------------------------------------------------------------------------------------
// Every flag from every source.

struct FlagCase {
  const char* flag;
  const char* value;  // as typed on the command line or in the environment
  const char* yaml;   // the same value as a YAML file writes it
  std::function<void(const ControllerConfig&)> check;
};

std::vector<FlagCase> every_flag() {
  return {
      {"kubeconfig", "/k/config", "/k/config", [](auto& o) { EXPECT_EQ(o.kubeconfig, "/k/config"); }},
      {"namespace", "team-a", "[team-a]",
       [](auto& o) { EXPECT_EQ(o.namespaces, std::vector<std::string>{"team-a"}); }},
      {"kube-api-qps", "12.5", "12.5", [](auto& o) { EXPECT_DOUBLE_EQ(o.kube_api_qps, 12.5); }},
      {"kube-api-burst", "30", "30", [](auto& o) { EXPECT_EQ(o.kube_api_burst, 30); }},
      {"es", "https://es-1:9200", "[https://es-1:9200]",
       [](auto& o) { EXPECT_EQ(o.elasticsearch.hosts, std::vector<std::string>{"https://es-1:9200"}); }},
      {"index", "my-locks", "my-locks", [](auto& o) { EXPECT_EQ(o.elasticsearch.index, "my-locks"); }},
      {"es-ca-file", "/ca.pem", "/ca.pem", [](auto& o) { EXPECT_EQ(o.elasticsearch.ca_file, "/ca.pem"); }},
      {"es-api-key-file", "/key", "/key", [](auto& o) { EXPECT_EQ(o.elasticsearch.api_key_file, "/key"); }},
      {"es-bearer-token-file", "/token", "/token",
       [](auto& o) { EXPECT_EQ(o.elasticsearch.bearer_token_file, "/token"); }},
      {"es-insecure-skip-tls-verify", "true", "true",
       [](auto& o) { EXPECT_TRUE(o.elasticsearch.insecure_skip_tls_verify); }},
      {"es-timeout", "500ms", "500ms",
       [](auto& o) { EXPECT_EQ(o.elasticsearch.request_timeout, Millis(500)); }},
      {"metrics-bind-address", "127.0.0.1:0", "\"127.0.0.1:0\"",
       [](auto& o) { EXPECT_EQ(o.metrics_bind_address, "127.0.0.1:0"); }},
      {"health-probe-bind-address", ":9091", "\":9091\"",
       [](auto& o) { EXPECT_EQ(o.health_probe_bind_address, ":9091"); }},
      {"leader-elect", "true", "true", [](auto& o) { EXPECT_TRUE(o.leader_elect); }},
      {"leader-election-id", "my-election", "my-election",
       [](auto& o) { EXPECT_EQ(o.leader_election_id, "my-election"); }},
      {"leader-election-namespace", "ops", "ops",
       [](auto& o) { EXPECT_EQ(o.leader_election_namespace, "ops"); }},
      {"leader-election-lease-duration", "2m", "2m",
       [](auto& o) { EXPECT_EQ(o.leader_election_lease_duration, Millis(120000)); }},
      {"leader-election-renew-deadline", "2500ms", "2500ms",
       [](auto& o) { EXPECT_EQ(o.leader_election_renew_deadline, Millis(2500)); }},
      {"leader-election-retry-period", "1500ms", "1500ms",
       [](auto& o) { EXPECT_EQ(o.leader_election_retry_period, Millis(1500)); }},
      {"workers", "16", "16", [](auto& o) { EXPECT_EQ(o.workers, 16); }},
      {"node-heartbeat-grace", "30s", "30s",
       [](auto& o) { EXPECT_EQ(o.node_heartbeat_grace, Millis(30000)); }},
      {"liveness-takeover", "false", "false", [](auto& o) { EXPECT_FALSE(o.liveness_takeover); }},
      {"holds-annotation", "false", "false", [](auto& o) { EXPECT_FALSE(o.holds_annotation); }},
      {"identity", "replica-a", "replica-a", [](auto& o) { EXPECT_EQ(o.identity, "replica-a"); }},
      {"log-format", "json", "json", [](auto& o) { EXPECT_EQ(o.log_format, "json"); }},
      {"log-level", "debug", "debug", [](auto& o) { EXPECT_EQ(o.log_level, "debug"); }},
  };
}

// es-username and es-password-file only make sense together.
TEST_F(ConfigTest, BasicAuthFromEverySource) {
  auto o = load({"--es", "http://a:9200", "--es-username", "elastic", "--es-password-file", "/pw"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->elasticsearch.username, "elastic");
  EXPECT_EQ(o->elasticsearch.password_file, "/pw");
  auto env = load({}, {{"ESLEASE_ES", "http://a:9200"},
                       {"ESLEASE_ES_USERNAME", "elastic"},
                       {"ESLEASE_ES_PASSWORD_FILE", "/pw"}});
  ASSERT_TRUE(env.ok()) << env.error().message;
  EXPECT_EQ(env->elasticsearch.username, "elastic");
  auto file =
      load({"--config", write_file("es: http://a:9200\nes-username: elastic\nes-password-file: /pw\n")});
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->elasticsearch.password_file, "/pw");
}

TEST_F(ConfigTest, EveryFlagOnTheCommandLine) {
  for (const FlagCase& c : every_flag()) {
    SCOPED_TRACE(c.flag);
    std::vector<std::string> args = {"--" + std::string(c.flag) + "=" + c.value};
    if (std::string(c.flag) != "es") args.insert(args.end(), {"--es", "http://a:9200"});
    auto o = load(args);
    ASSERT_TRUE(o.ok()) << o.error().message;
    c.check(*o);
  }
}

TEST_F(ConfigTest, EveryFlagInTheEnvironment) {
  for (const FlagCase& c : every_flag()) {
    SCOPED_TRACE(c.flag);
    std::map<std::string, std::string> values{{environment_variable(c.flag), c.value}};
    values.emplace("ESLEASE_ES", "http://a:9200");  // unless the case sets it
    auto o = load({}, EnvironmentVariables(values));
    ASSERT_TRUE(o.ok()) << o.error().message;
    c.check(*o);
  }
}

TEST_F(ConfigTest, EveryFlagInTheConfigFile) {
  for (const FlagCase& c : every_flag()) {
    SCOPED_TRACE(c.flag);
    std::string text = std::string(c.flag) + ": " + c.yaml + "\n";
    if (std::string(c.flag) != "es") text += "es: [http://a:9200]\n";
    auto o = load({"--config", write_file(text)});
    ASSERT_TRUE(o.ok()) << o.error().message;
    c.check(*o);
  }
}

TEST(EnvironmentVariable, IsUpperSnakeCaseWithThePrefix) {
  EXPECT_EQ(environment_variable("es"), "ESLEASE_ES");
  EXPECT_EQ(environment_variable("metrics-bind-address"), "ESLEASE_METRICS_BIND_ADDRESS");
  EXPECT_EQ(environment_variable("leader-election-lease-duration"), "ESLEASE_LEADER_ELECTION_LEASE_DURATION");
}

TEST(EnvironmentAbstraction, FromPairsFromACallableOrEmpty) {
  const EnvironmentVariables pairs{{"A", "1"}, {"B", ""}};
  EXPECT_EQ(pairs.get("A"), "1");
  EXPECT_EQ(pairs.get("B"), "");
  EXPECT_EQ(pairs.get("C"), std::nullopt);
  const EnvironmentVariables callable = [](const std::string& name) -> std::optional<std::string> {
    return name == "X" ? std::optional<std::string>("y") : std::nullopt;
  };
  EXPECT_EQ(callable.get("X"), "y");
  EXPECT_EQ(EnvironmentVariables().get("A"), std::nullopt);
  ::setenv("ESLEASE_CONFIG_TEST_PROCESS_ENV", "from-process", 1);
  EXPECT_EQ(EnvironmentVariables::process().get("ESLEASE_CONFIG_TEST_PROCESS_ENV"), "from-process");
  ::unsetenv("ESLEASE_CONFIG_TEST_PROCESS_ENV");
}

// ------------------------------------------------------------------------------------------
// Precedence.

TEST_F(ConfigTest, FlagBeatsEnvironmentWhichBeatsFile) {
  const std::string file = write_file(
      "es: [http://file:9200]\n"
      "workers: 2\n"
      "metrics-bind-address: \":7000\"\n"
      "index: from-file\n"
      "leader-elect: true\n");
  auto o = load({"--config", file, "--workers", "6"}, {{"ESLEASE_WORKERS", "5"},
                                                       {"ESLEASE_METRICS_BIND_ADDRESS", ":9090"},
                                                       {"ESLEASE_LEADER_ELECT", "false"}});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->workers, 6);                        // flag over environment and file
  EXPECT_EQ(o->metrics_bind_address, ":9090");     // environment over file
  EXPECT_FALSE(o->leader_elect);                   // environment over file, a boolean
  EXPECT_EQ(o->elasticsearch.index, "from-file");  // file over the default
  EXPECT_EQ(o->elasticsearch.hosts, std::vector<std::string>{"http://file:9200"});
  EXPECT_EQ(o->config_file, file);
}

TEST_F(ConfigTest, AHigherSourceReplacesARepeatableFlagsListRatherThanAddingToIt) {
  const std::string file = write_file("es: [http://f1:9200, http://f2:9200]\nnamespace: [a, b]\n");
  auto env_wins = load({"--config", file}, {{"ESLEASE_ES", "http://e1:9200, http://e2:9200,"}});
  ASSERT_TRUE(env_wins.ok()) << env_wins.error().message;
  EXPECT_EQ(env_wins->elasticsearch.hosts, (std::vector<std::string>{"http://e1:9200", "http://e2:9200"}));
  EXPECT_EQ(env_wins->namespaces, (std::vector<std::string>{"a", "b"}));
  auto flag_wins = load({"--config", file, "--namespace", "c"}, {{"ESLEASE_NAMESPACE", "d,e"}});
  ASSERT_TRUE(flag_wins.ok()) << flag_wins.error().message;
  EXPECT_EQ(flag_wins->namespaces, std::vector<std::string>{"c"});
  EXPECT_EQ(flag_wins->elasticsearch.hosts.size(), 2u);
}

TEST_F(ConfigTest, ConfigFileFromTheEnvironmentUnlessAFlagNamesOne) {
  const std::string from_env = write_file("es: http://env-file:9200\n", "env.yaml");
  const std::string from_flag = write_file("es: http://flag-file:9200\n", "flag.yaml");
  auto o = load({}, {{"ESLEASE_CONFIG", from_env}});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->elasticsearch.hosts, std::vector<std::string>{"http://env-file:9200"});
  auto flag = load({"--config=" + from_flag}, {{"ESLEASE_CONFIG", from_env}});
  ASSERT_TRUE(flag.ok()) << flag.error().message;
  EXPECT_EQ(flag->elasticsearch.hosts, std::vector<std::string>{"http://flag-file:9200"});
}

TEST_F(ConfigTest, EmptyVariablesCountAsUnsetAndCommandLineOnlyFlagsIgnoreTheEnvironment) {
  // ESLEASE_VERSION is a plausible image label; it must not turn the controller into --version.
  auto o = load({"--es", "http://a:9200"}, {{"ESLEASE_WORKERS", ""},
                                            {"ESLEASE_INDEX", "  "},
                                            {"ESLEASE_VERSION", "0.1.0"},
                                            {"ESLEASE_HELP", "1"}});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->workers, 4);
  EXPECT_EQ(o->elasticsearch.index, "eslease-locks");
  EXPECT_FALSE(o->version);
  EXPECT_FALSE(o->help);
}

TEST_F(ConfigTest, YamlForms) {
  const std::string file = write_file(
      "# comments are fine\n"
      "es: http://one:9200\n"      // one value for a repeatable flag
      "metrics-bind-address: 0\n"  // a number to YAML, the flag's "off"
      "health-probe-bind-address: :9999\n"
      "es-timeout: 2m\n"
      "kube-api-qps: 7\n"
      "liveness-takeover: false\n"
      "namespace: []\n");
  auto o = load({"--config", file});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->elasticsearch.hosts, std::vector<std::string>{"http://one:9200"});
  EXPECT_EQ(o->metrics_bind_address, "0");
  EXPECT_EQ(o->health_probe_bind_address, ":9999");
  EXPECT_EQ(o->elasticsearch.request_timeout, Millis(120000));
  EXPECT_DOUBLE_EQ(o->kube_api_qps, 7);
  EXPECT_FALSE(o->liveness_takeover);
  EXPECT_TRUE(o->namespaces.empty());
}

TEST_F(ConfigTest, AnEmptyConfigFileSetsNothing) {
  auto o = load({"--es", "http://a:9200", "--config", write_file("# nothing yet\n")});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->workers, 4);
}

// ------------------------------------------------------------------------------------------
// Mistakes.

struct BadCase {
  const char* name;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  const char* file;             // config file text; "<missing>" / "<directory>" for those cases
  const char* mentions;         // what the message must name
  const char* never = nullptr;  // what it must not repeat (a secret)
};

class BadConfiguration : public ConfigTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadConfiguration, IsAUsageErrorNamingTheCulprit) {
  const BadCase& c = GetParam();
  std::vector<std::string> args = c.args;
  if (c.file) {
    args.push_back("--config");
    if (std::string(c.file) == "<missing>") {
      args.push_back((dir_ / "missing.yaml").string());
    } else if (std::string(c.file) == "<directory>") {
      args.push_back(dir_.string());
    } else {
      args.push_back(write_file(c.file));
    }
  }
  auto o = load(args, EnvironmentVariables(c.env));
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(o.error().message.find(c.mentions), std::string::npos) << o.error().message;
  if (c.never) {
    EXPECT_EQ(o.error().message.find(c.never), std::string::npos) << o.error().message;
  }
}

const std::vector<std::string> kEs = {"--es", "http://a:9200"};
std::vector<std::string> with_es(std::vector<std::string> args) {
  args.insert(args.begin(), kEs.begin(), kEs.end());
  return args;
}

INSTANTIATE_TEST_SUITE_P(
    CommandLine, BadConfiguration,
    ::testing::Values(
        BadCase{"unknown_flag", with_es({"--bogus"}), {}, nullptr, "unknown flag --bogus"},
        BadCase{"near_miss_suggests", with_es({"--worker", "2"}), {}, nullptr, "did you mean --workers?"},
        BadCase{"positional", with_es({"extra"}), {}, nullptr, "unexpected argument \"extra\""},
        BadCase{"boolean_with_space",
                with_es({"--liveness-takeover", "false"}),
                {},
                nullptr,
                "--liveness-takeover=false"},
        BadCase{"missing_value_at_end", {"--es"}, {}, nullptr, "--es needs a value"},
        BadCase{"missing_value_before_flag",
                with_es({"--index", "--workers", "2"}),
                {},
                nullptr,
                "--index needs a value"},
        BadCase{"no_es", {}, {}, nullptr, "no Elasticsearch host: give --es"},
        BadCase{"es_not_a_url",
                {"--es", "es-0:9200"},
                {},
                nullptr,
                "--es: Elasticsearch URL must start with http"},
        BadCase{"es_credentials_in_url",
                {"--es", "http://elastic:hunter2@es:9200"},
                {},
                nullptr,
                "credentials in an Elasticsearch URL",
                "hunter2"},
        BadCase{"password_on_command_line",
                with_es({"--es-password", "hunter2"}),
                {},
                nullptr,
                "--es-password is not accepted",
                "hunter2"},
        BadCase{"password_with_equals",
                with_es({"--es-password=hunter2"}),
                {},
                nullptr,
                "--es-password-file",
                "hunter2"},
        BadCase{"api_key_on_command_line",
                with_es({"--es-api-key=abc"}),
                {},
                nullptr,
                "--es-api-key-file",
                "abc"},
        BadCase{"token_on_command_line",
                with_es({"--es-bearer-token", "abc"}),
                {},
                nullptr,
                "--es-bearer-token-file"},
        BadCase{"username_without_password",
                with_es({"--es-username", "elastic"}),
                {},
                nullptr,
                "--es-username needs --es-password-file"},
        BadCase{"password_without_username",
                with_es({"--es-password-file", "/pw"}),
                {},
                nullptr,
                "--es-password-file needs --es-username"},
        BadCase{"two_kinds_of_credentials",
                with_es({"--es-api-key-file", "/k", "--es-bearer-token-file", "/t"}),
                {},
                nullptr,
                "choose one kind of Elasticsearch credentials"},
        BadCase{"bad_duration",
                with_es({"--es-timeout", "30"}),
                {},
                nullptr,
                "--es-timeout: invalid duration '30'"},
        BadCase{"too_short_timeout",
                with_es({"--es-timeout", "50ms"}),
                {},
                nullptr,
                "--es-timeout: must be at least 100ms"},
        BadCase{"bad_bind_address",
                with_es({"--metrics-bind-address", "nowhere"}),
                {},
                nullptr,
                "--metrics-bind-address: \"nowhere\" is not a bind address"},
        BadCase{"bad_bind_port",
                with_es({"--health-probe-bind-address", ":99999"}),
                {},
                nullptr,
                "--health-probe-bind-address"},
        BadCase{"zero_workers", with_es({"--workers", "0"}), {}, nullptr, "--workers: must be at least 1"},
        BadCase{"fractional_workers",
                with_es({"--workers", "2.5"}),
                {},
                nullptr,
                "--workers: must be a whole number"},
        BadCase{
            "huge_workers", with_es({"--workers", "99999999999"}), {}, nullptr, "--workers: is too large"},
        BadCase{"zero_qps",
                with_es({"--kube-api-qps", "0"}),
                {},
                nullptr,
                "--kube-api-qps: must be greater than 0"},
        BadCase{"negative_qps", with_es({"--kube-api-qps", "-5"}), {}, nullptr, "--kube-api-qps"},
        BadCase{
            "word_qps", with_es({"--kube-api-qps", "fast"}), {}, nullptr, "--kube-api-qps: must be a number"},
        BadCase{"zero_burst",
                with_es({"--kube-api-burst", "0"}),
                {},
                nullptr,
                "--kube-api-burst: must be at least 1"},
        BadCase{"bad_boolean",
                with_es({"--leader-elect=maybe"}),
                {},
                nullptr,
                "--leader-elect: must be true or false"},
        BadCase{"bad_log_format",
                with_es({"--log-format", "xml"}),
                {},
                nullptr,
                "--log-format: must be text or json"},
        BadCase{"bad_log_level", with_es({"--log-level", "loud"}), {}, nullptr, "--log-level: must be debug"},
        BadCase{
            "bad_index", with_es({"--index", "Locks"}), {}, nullptr, "--index: index name must be lowercase"},
        BadCase{"empty_election_id",
                with_es({"--leader-election-id="}),
                {},
                nullptr,
                "--leader-election-id: must not be empty"},
        BadCase{"empty_namespace", with_es({"--namespace="}), {}, nullptr, "--namespace: needs a value"},
        BadCase{
            "lease_not_longer_than_deadline",
            with_es({"--leader-election-lease-duration", "10s", "--leader-election-renew-deadline", "10s"}),
            {},
            nullptr,
            "--leader-election-lease-duration (10s) must be longer than"},
        BadCase{
            "deadline_within_jittered_retry",
            with_es({"--leader-election-renew-deadline", "2400ms", "--leader-election-retry-period", "2s"}),
            {},
            nullptr,
            "must be longer than 1.2 x --leader-election-retry-period (2s)"},
        BadCase{"zero_retry",
                with_es({"--leader-election-retry-period", "0s"}),
                {},
                nullptr,
                "--leader-election-retry-period: must be at least 1ms"},
        BadCase{"config_without_file", with_es({"--config"}), {}, nullptr, "--config needs a value"}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    EnvironmentVariables, BadConfiguration,
    ::testing::Values(
        BadCase{"bad_duration",
                kEs,
                {{"ESLEASE_ES_TIMEOUT", "soon"}},
                nullptr,
                "ESLEASE_ES_TIMEOUT: invalid duration"},
        BadCase{"bad_number",
                kEs,
                {{"ESLEASE_WORKERS", "many"}},
                nullptr,
                "ESLEASE_WORKERS: must be a whole number"},
        BadCase{
            "bad_boolean", kEs, {{"ESLEASE_LEADER_ELECT", "yes please"}}, nullptr, "ESLEASE_LEADER_ELECT"},
        BadCase{"bad_bind_address",
                kEs,
                {{"ESLEASE_METRICS_BIND_ADDRESS", "8080"}},
                nullptr,
                "ESLEASE_METRICS_BIND_ADDRESS: \"8080\" is not a bind address"},
        BadCase{"bad_es",
                {},
                {{"ESLEASE_ES", "http://a:9200,ftp://b"}},
                nullptr,
                "ESLEASE_ES: Elasticsearch URL"},
        BadCase{"missing_config_file",
                kEs,
                {{"ESLEASE_CONFIG", "/nonexistent/eslease.yaml"}},
                nullptr,
                "cannot read config file /nonexistent/eslease.yaml"}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    ConfigFile, BadConfiguration,
    ::testing::Values(
        BadCase{"missing", kEs, {}, "<missing>", "cannot read config file"},
        BadCase{"directory", kEs, {}, "<directory>", "it is a directory"},
        BadCase{"not_yaml", kEs, {}, "workers: [1, 2", "is not valid YAML"},
        BadCase{"not_a_map", kEs, {}, "- workers\n- 2\n", "must be a map of settings"},
        BadCase{
            "unknown_key", kEs, {}, "wrkers: 2\n", "key \"wrkers\" is not a setting (did you mean workers?)"},
        BadCase{"command_line_only_key", kEs, {}, "help: true\n", "key \"help\" is not a setting"},
        BadCase{"nested_config", kEs, {}, "config: other.yaml\n", "key \"config\" is not a setting"},
        BadCase{"password_key",
                kEs,
                {},
                "es-password: hunter2\n",
                "key \"es-password\" is not accepted",
                "hunter2"},
        BadCase{"duplicate_key", kEs, {}, "workers: 2\nworkers: 3\n", "key \"workers\" appears twice"},
        BadCase{"number_as_string",
                kEs,
                {},
                "workers: \"4\"\n",
                "key \"workers\": must be a number, not the string"},
        BadCase{
            "number_as_map", kEs, {}, "workers: {a: 1}\n", "key \"workers\": must be a number, not a map"},
        BadCase{"number_as_word",
                kEs,
                {},
                "kube-api-burst: lots\n",
                "key \"kube-api-burst\": must be a whole number"},
        BadCase{"boolean_as_string",
                kEs,
                {},
                "leader-elect: \"true\"\n",
                "must be true or false, not the string"},
        BadCase{
            "boolean_as_yes", kEs, {}, "leader-elect: yes\n", "key \"leader-elect\": must be true or false"},
        BadCase{
            "duration_as_number", kEs, {}, "es-timeout: 10\n", "key \"es-timeout\": invalid duration '10'"},
        BadCase{"duration_as_list",
                kEs,
                {},
                "es-timeout: [10s]\n",
                "must be a duration such as \"10s\", not a list"},
        BadCase{"list_as_map", {}, {}, "es: {a: 1}\n", "key \"es\": must be a list of strings"},
        BadCase{"list_of_lists", {}, {}, "es: [[http://a:9200]]\n", "an item is a list"},
        BadCase{"string_as_list", kEs, {}, "index: [a, b]\n", "key \"index\": must be a string, not a list"},
        BadCase{"string_as_null", kEs, {}, "index:\n", "key \"index\": must be a string, not nothing"},
        BadCase{"bad_value", kEs, {}, "workers: 0\n", "key \"workers\": must be at least 1"}),
    [](const auto& info) { return std::string(info.param.name); });

// ------------------------------------------------------------------------------------------
// Runtime defaults.

// A pod's name is a stable identity (a restarted container re-takes its own leader-election
// Lease); the writer of lock documents is always the process's own.
TEST(RuntimeDefaults, IdentityIsThePodNameElseTheHostPlusASuffix) {
  ControllerConfig from_pod;
  resolve_runtime_defaults(from_pod, RuntimeFacts{"eslease-7f9c", "node-1", "ops", "x2k9q"});
  EXPECT_EQ(from_pod.identity, "eslease-7f9c");
  EXPECT_EQ(from_pod.writer, "eslease-7f9c-x2k9q");
  EXPECT_EQ(from_pod.leader_election_namespace, "ops");

  ControllerConfig from_host;
  resolve_runtime_defaults(from_host, RuntimeFacts{"", "laptop", "", "bcdfg"});
  EXPECT_EQ(from_host.identity, "laptop-bcdfg");
  EXPECT_EQ(from_host.writer, "laptop-bcdfg");
  EXPECT_EQ(from_host.leader_election_namespace, "default");
}

TEST(RuntimeDefaults, WhatTheUserSetIsKept) {
  ControllerConfig o;
  o.identity = "mine";
  o.leader_election_namespace = "elections";
  resolve_runtime_defaults(o, RuntimeFacts{"pod", "host", "ops", "zzzzz"});
  EXPECT_EQ(o.identity, "mine");
  EXPECT_EQ(o.writer, "mine-zzzzz");
  EXPECT_EQ(o.leader_election_namespace, "elections");
}

TEST_F(ConfigTest, RuntimeFactsComeFromTheEnvironmentTheHostAndTheNamespaceFile) {
  const std::string ns_file = write_file("batch\n", "namespace");
  RuntimeFacts facts = read_runtime_facts({{"POD_NAME", "eslease-0"}}, ns_file);
  EXPECT_EQ(facts.pod_name, "eslease-0");
  EXPECT_EQ(facts.pod_namespace, "batch");
  EXPECT_FALSE(facts.host_name.empty());
  ASSERT_EQ(facts.random_suffix.size(), 5u);
  for (char c : facts.random_suffix)
    EXPECT_NE(std::string("bcdfghjklmnpqrstvwxz2456789").find(c), std::string::npos);

  RuntimeFacts outside = read_runtime_facts({}, (dir_ / "absent").string());
  EXPECT_EQ(outside.pod_name, "");
  EXPECT_EQ(outside.pod_namespace, "");
}

// ------------------------------------------------------------------------------------------
// Help.

TEST(Usage, ListsEveryFlagWithItsDefaultByGroup) {
  const std::string text = usage();
  for (const char* group :
       {"Kubernetes:", "Elasticsearch:", "Serving:", "Leader election:", "Behaviour:", "Logging:"}) {
    EXPECT_NE(text.find(std::string("\n") + group + "\n"), std::string::npos) << group;
  }
  for (const char* flag : {"--kubeconfig FILE",
                           "--namespace NS",
                           "--kube-api-qps Q",
                           "--kube-api-burst B",
                           "--es URL",
                           "--index NAME",
                           "--es-ca-file FILE",
                           "--es-username NAME",
                           "--es-password-file FILE",
                           "--es-api-key-file FILE",
                           "--es-bearer-token-file FILE",
                           "--es-insecure-skip-tls-verify",
                           "--es-timeout D",
                           "--metrics-bind-address ADDR",
                           "--health-probe-bind-address ADDR",
                           "--leader-elect ",
                           "--leader-election-id NAME",
                           "--leader-election-namespace NS",
                           "--leader-election-lease-duration D",
                           "--leader-election-renew-deadline D",
                           "--leader-election-retry-period D",
                           "--workers N",
                           "--node-heartbeat-grace D",
                           "--liveness-takeover=false",
                           "--identity ID",
                           "--log-format text|json",
                           "--log-level debug|info|warn|error",
                           "--config FILE",
                           "--version",
                           "--help"}) {
    EXPECT_NE(text.find(std::string("  ") + flag), std::string::npos) << flag;
  }
  for (const char* default_text :
       {"(default: 200)", "(default: 400)", "(default: eslease-locks)", "(default: 5s)", "(default: :8080)",
        "(default: :8081)", "(default: 3s)", "(default: 500ms)", "(default: 12s)", "(default: 4)",
        "(default: text)", "(default: info)", "(default: false)"}) {
    EXPECT_NE(text.find(default_text), std::string::npos) << default_text;
  }
  EXPECT_NE(text.find("ESLEASE_METRICS_BIND_ADDRESS"), std::string::npos);
  EXPECT_NE(text.find("A flag beats the environment, which beats the config file"), std::string::npos);
  for (const char* code : {"\n  0  clean shutdown", "\n  1  cannot start", "\n  2  usage error"})
    EXPECT_NE(text.find(code), std::string::npos) << code;
}

TEST(Usage, FitsATerminal) {
  std::istringstream lines(usage());
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

}  // namespace
}  // namespace eslease::config
