// Kubernetes-mode flags: which mode a command line selects, and the mistakes caught before
// anything is contacted.
#include <gtest/gtest.h>

#include "cli/flags.h"
#include "cli/options.h"

namespace eslease::cli {
namespace {

TEST(KubeOptions, WithoutEsTheModeIsKubernetes) {
  auto o = parse_options({"acquire", "report", "--kubeconfig", "/kc", "--pod", "p", "--priority",
                          "background", "--ttl", "10s", "--wait", "5s", "--liveness-grace", "3s", "--lease",
                          "mine", "-n", "batch"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->mode, Mode::kKubernetes);
  EXPECT_EQ(o->kube.kubeconfig, "/kc");
  EXPECT_EQ(o->kube.pod, "p");
  EXPECT_EQ(o->kube.priority, "Background");
  EXPECT_EQ(o->kube.lease, "mine");
  EXPECT_EQ(o->kube.liveness_grace, Millis(3000));
  EXPECT_TRUE(o->wait_given);
  EXPECT_EQ(o->wait, Millis(5000));
  EXPECT_TRUE(o->ns_given);
  EXPECT_EQ(o->ns, "batch");
}

TEST(KubeOptions, StatusTakesAllNamespacesAndShortOutput) {
  auto o = parse_options({"status", "-A", "-o", "json"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_TRUE(o->kube.all_namespaces);
  EXPECT_EQ(o->output, OutputFormat::kJson);
}

TEST(KubeOptions, ShortFlagsTakeTheirValueAfterAnEqualsSign) {
  auto o = parse_options({"status", "-n=batch", "-o=json"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->ns, "batch");
  EXPECT_TRUE(o->ns_given);
  EXPECT_EQ(o->output, OutputFormat::kJson);
}

TEST(KubeOptions, ReleaseTakesALeaseName) {
  auto o = parse_options({"release", "report-p1"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->lock, "report-p1");
  auto missing = parse_options({"release"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("LEASE"), std::string::npos);
}

TEST(KubeOptions, RunDefaultsLeaveTimeToStopBeforeExpiry) {
  auto o = parse_options({"run", "job", "--ttl", "3s", "--", "true"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(kube_grace(*o, Millis(3000)), Millis(600));
  EXPECT_EQ(kube_safety_margin(*o, Millis(3000)), Millis(600));
  EXPECT_EQ(kube_grace(*o, Millis(16000)), Millis(3200));
  EXPECT_EQ(kube_safety_margin(*o, Millis(16000)), Millis(2000));
  EXPECT_EQ(kube_grace(*o, Millis(60000)), Millis(10000));
  EXPECT_EQ(kube_safety_margin(*o, Millis(60000)), Millis(2000));
}

TEST(KubeOptions, RunWarnsWhenAFailoverWouldStopItsCommandAndRefusesWhenNothingIsLeft) {
  // The default 16 s TTL rides out 6.8 s, more than a failover at the controller's defaults.
  EXPECT_FALSE(run_slack_warning(Millis(16000), Millis(3200), Millis(2000)));
  // With a 5 s grace it rides out 5 s: a controller failover would stop the command.
  const auto warning = run_slack_warning(Millis(16000), Millis(5000), Millis(2000));
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("rides out only 5s"), std::string::npos) << *warning;
  EXPECT_FALSE(check_run_slack(Millis(12000), Millis(5000), Millis(5000)).ok());
  EXPECT_TRUE(check_run_slack(Millis(12000), Millis(5000), Millis(2000)).ok());
}

TEST(KubeOptions, VersionNeedsNothingElse) {
  auto o = parse_options({"--version"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->command, Command::kVersion);
}

TEST(KubeOptions, MistakesAreUsageErrorsNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad{
      {{"--es", "http://a", "--kubeconfig", "/kc", "status"}, "--kubeconfig"},
      {{"--es", "http://a", "acquire", "x", "--pod", "p"}, "--pod"},
      {{"--es", "http://a", "status", "-A"}, "--all-namespaces"},
      {{"acquire", "x", "--holder", "h"}, "--holder"},
      {{"acquire", "x", "--index", "i"}, "--index"},
      {{"renew", "x"}, "direct mode"},
      {{"acquire", "x", "--ttl", "1500ms"}, "whole seconds"},
      {{"acquire", "x", "--ttl", "2h"}, "whole seconds"},
      {{"acquire", "x", "--liveness-grace", "500ms"}, "whole seconds"},
      {{"acquire", "x", "--priority", "urgent"}, "Foreground or Background"},
      {{"acquire", "x", "-A"}, "only for status"},
      {{"status", "-A", "-n", "x"}, "not both"},
      {{"release", "l", "--lease", "n"}, "--lease"},
      {{"run", "x", "--ttl", "3s", "--grace", "1s", "--safety-margin", "2s", "--", "true"},
       "shorter than three quarters of the lease duration"},
      {{"sidecar", "report"}, "sidecar takes no LOCK"},
      {{"--es", "http://a", "sidecar"}, "sidecar is for Kubernetes mode"},
      {{"acquire", "x", "--listen", ":9000"}, "--listen is only for sidecar"},
      {{"run", "x", "--on-grant", "true", "--", "true"}, "--on-grant is only for sidecar"},
      {{"sidecar", "--listen", "localhost"}, "--listen \"localhost\" is not valid"},
      {{"acquire", "x", "--hold-at-least", "5m"}, "--hold-at-least is only for run"},
      {{"run", "x", "--hold-at-least", "soon", "--", "true"}, "--hold-at-least"},
  };
  for (const auto& [args, expected] : bad) {
    auto o = parse_options(args);
    ASSERT_FALSE(o.ok()) << args.back();
    EXPECT_EQ(o.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(o.error().message.find(expected), std::string::npos) << o.error().message;
  }
}

TEST(KubeOptions, SidecarTakesWhereToTellAndNoLock) {
  auto o = parse_options({"sidecar"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->command, Command::kSidecar);
  EXPECT_EQ(o->mode, Mode::kKubernetes);
  EXPECT_EQ(o->sidecar.listen, "127.0.0.1:8642");
  EXPECT_TRUE(o->sidecar.file.empty());
  o = parse_options({"sidecar", "--listen", ":9000", "--file", "/run/holds.json", "--on-grant",
                     "echo granted", "--on-loss", "echo lost", "--safety-margin", "3s"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->sidecar.listen, ":9000");
  EXPECT_EQ(o->sidecar.file, "/run/holds.json");
  EXPECT_EQ(o->sidecar.on_grant, "echo granted");
  EXPECT_EQ(o->sidecar.on_loss, "echo lost");
  EXPECT_EQ(o->kube.safety_margin, Millis(3000));
}

TEST(KubeOptions, RunKeepsItsGrantAtLeastAsLongAsAsked) {
  for (const char* es : {"", "http://a"}) {
    std::vector<std::string> args{"run", "nightly", "--wait", "0", "--hold-at-least", "10m", "--", "true"};
    if (*es) args.insert(args.begin(), {"--es", es});
    auto o = parse_options(args);
    ASSERT_TRUE(o.ok()) << o.error().message;
    EXPECT_EQ(o->hold_at_least, Millis(600000));
    EXPECT_TRUE(o->wait_given);
    EXPECT_EQ(o->wait, Millis(0));
  }
}

TEST(KubeOptions, UsageListsTheExitCodes) {
  const std::string text = usage();
  for (const char* needle :
       {"Kubernetes mode", "Direct mode", "3  --wait ran out", "4  run: the lock was lost",
        "sidecar [--listen", "is a try-lock: granted only if it can be at once", "--hold-at-least"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
  }
}

}  // namespace
}  // namespace eslease::cli
