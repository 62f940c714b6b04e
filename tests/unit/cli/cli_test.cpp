#include "cli/cli.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/wait.h"
#include "unit/cli/direct_cli_fixture.h"

namespace eslease::cli {
namespace {

class CliTest : public DirectCliTest {};

TEST_F(CliTest, AcquirePrintsTheTokenAndBlocksOthers) {
  auto first = cli({"acquire", "report", "--namespace", "batch", "--holder", "me"});
  ASSERT_EQ(first.code, kExitOk) << first.err;
  const auto doc = api_.peek("batch/report");
  ASSERT_TRUE(doc);
  EXPECT_EQ(first.out, std::to_string((doc->version.primary_term << 32) | doc->version.seq_no) + "\n");

  auto second = cli({"acquire", "report", "--namespace", "batch", "--holder", "you", "--wait", "0s"});
  EXPECT_EQ(second.code, kExitWaitTimedOut);
  EXPECT_NE(second.err.find("held by me"), std::string::npos) << second.err;
  EXPECT_TRUE(second.out.empty());
}

// A script must tell "busy" from "Elasticsearch down": --wait running out exits 3 in direct
// mode too (it exited 1), and the message says who holds the lock, in words.
TEST_F(CliTest, WaitRunningOutExitsThreeAndNamesTheHolder) {
  ASSERT_EQ(cli({"acquire", "nightly-report", "--holder", "worker-a"}).code, kExitOk);
  auto r = cli({"acquire", "nightly-report", "--holder", "worker-b", "--wait", "2s"});
  EXPECT_EQ(r.code, kExitWaitTimedOut) << r.err;
  EXPECT_EQ(r.err.rfind("eslease: waiting for lock default/nightly-report, held by worker-a (token ", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("eslease: lock default/nightly-report is held by worker-a (token "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("gave up after waiting 2s"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Conflict"), std::string::npos) << "no internal codes: " << r.err;
}

TEST_F(CliTest, AnUnreachableBackendExitsOneNotThree) {
  for (int i = 0; i < 100; ++i)
    api_.inject({"create", false,
                 make_error(ErrorCode::kUnavailable, "cannot reach Elasticsearch for create: refused")});
  auto r = cli({"acquire", "report", "--wait", "1s"});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("cannot reach Elasticsearch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Unavailable"), std::string::npos) << "no internal codes: " << r.err;
}

// Without --wait, direct mode waits as Kubernetes mode does (it gave up at once).
TEST_F(CliTest, WithoutWaitAcquireAndRunWaitForTheLock) {
  ASSERT_EQ(cli({"acquire", "report", "--holder", "gone", "--ttl", "5s"}).code, kExitOk);
  auto acquired = cli({"acquire", "report", "--holder", "next"});
  ASSERT_EQ(acquired.code, kExitOk) << acquired.err;
  EXPECT_EQ(api_.peek("default/report")->source["holder"], "next");
  EXPECT_GE(clock_.sleeps(), 1) << "it waited for the abandoned lock to expire";
}

TEST_F(CliTest, DefaultHolderIsHostAndPid) {
  ASSERT_EQ(cli({"acquire", "report"}).code, kExitOk);
  EXPECT_EQ(api_.peek("default/report")->source["holder"], "host/42");
}

TEST_F(CliTest, WaitTakesOverAnAbandonedLock) {
  ASSERT_EQ(cli({"acquire", "report", "--holder", "gone", "--ttl", "5s"}).code, kExitOk);
  auto r = cli({"acquire", "report", "--holder", "next", "--wait", "30s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(api_.peek("default/report")->source["holder"], "next");
}

TEST_F(CliTest, RenewAndReleaseCheckTheHolder) {
  ASSERT_EQ(cli({"acquire", "report", "--holder", "me"}).code, kExitOk);
  auto wrong = cli({"renew", "report", "--holder", "you"});
  EXPECT_EQ(wrong.code, kExitFailed);
  EXPECT_NE(wrong.err.find("held by me, not you"), std::string::npos) << wrong.err;
  auto renewed = cli({"renew", "report", "--holder", "me"});
  ASSERT_EQ(renewed.code, kExitOk) << renewed.err;
  EXPECT_FALSE(renewed.out.empty());
  EXPECT_EQ(cli({"release", "report", "--holder", "you"}).code, kExitFailed);
  EXPECT_TRUE(api_.peek("default/report"));
  ASSERT_EQ(cli({"release", "report", "--holder", "me"}).code, kExitOk);
  EXPECT_FALSE(api_.peek("default/report"));
  auto again = cli({"release", "report", "--holder", "me"});
  EXPECT_EQ(again.code, kExitOk);
  EXPECT_NE(again.err.find("not held"), std::string::npos);
}

TEST_F(CliTest, StatusAsTableAndJson) {
  ASSERT_EQ(cli({"acquire", "a", "--holder", "me"}).code, kExitOk);
  auto table = cli({"status"});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_NE(table.out.find("LOCK"), std::string::npos);
  EXPECT_NE(table.out.find("default/a"), std::string::npos);
  auto one = cli({"status", "a", "--output", "json"});
  ASSERT_EQ(one.code, kExitOk);
  const auto j = nlohmann::json::parse(one.out);
  EXPECT_EQ(j["held"], true);
  EXPECT_EQ(j["holder"], "me");
  EXPECT_EQ(j["transitions"], 1);
  EXPECT_TRUE(j["fencingToken"].is_string());
  EXPECT_TRUE(j.contains("expiresAt"));
  auto free = cli({"status", "b", "--output", "json"});
  EXPECT_EQ(nlohmann::json::parse(free.out)["held"], false);
  auto all = cli({"status", "--output", "json"});
  EXPECT_EQ(nlohmann::json::parse(all.out)["locks"].size(), 1u);
}

TEST_F(CliTest, UsageErrorsExitTwoWithoutContactingElasticsearch) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"acquire", "x", "--ttl", "abc"},
                                               {"acquire", "bad\xff"},
                                               {"acquire", "line\nbreak"},
                                               {"acquire", std::string(300, 'x')},
                                               {"acquire", "x", "--namespace", "a/b"},
                                               {"acquire", "x", "--index", "UP"},
                                               // The Lease's rule for lock names, in both modes.
                                               {"acquire", "a/b"},
                                               {"acquire", ".."},
                                               {"acquire", "Upper"},
                                               {"acquire", "../../_cluster"},
                                               {"acquire", "slot#1"},
                                               {"acquire", "\xf0\x9f\x94\x92"},
                                               {"status", "a/b"},
                                               {"acquire", "x", "--force"},
                                               {"nonsense"}}) {
    auto r = cli(args);
    EXPECT_EQ(r.code, kExitUsage) << args[0];
    EXPECT_NE(r.err.find("eslease: "), std::string::npos);
  }
  EXPECT_EQ(stores_opened_, 0);
  EXPECT_EQ(api_.total_calls(), 0);
}

TEST_F(CliTest, ARefusedUnicodeNameIsShownAsItIs) {
  auto r = cli({"acquire",
                "l\xc3\xbc"
                "ck"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_NE(r.err.find("invalid lock name 'l\xc3\xbc"
                       "ck'"),
            std::string::npos)
      << r.err;
  auto control = cli({"acquire", "a\x1b[2Jb"});
  EXPECT_NE(control.err.find("'a\\x1b[2Jb'"), std::string::npos) << control.err;
}

TEST_F(CliTest, BackendErrorsExitOneWithTheReason) {
  api_.inject(
      {"create", false, make_error(ErrorCode::kUnauthorized, "Elasticsearch rejected the credentials")});
  auto r = cli({"acquire", "x"});
  EXPECT_EQ(r.code, kExitFailed);
  EXPECT_NE(r.err.find("rejected the credentials"), std::string::npos);
}

class TempPath {
 public:
  TempPath()
      : path_(std::filesystem::temp_directory_path() /
              ("eslease-cli-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++))) {}
  ~TempPath() { std::filesystem::remove(path_); }
  std::string str() const { return path_.string(); }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST_F(CliTest, RunPassesTheTokenExitsWithTheChildsCodeAndReleases) {
  TempPath file;
  auto r = cli({"run", "job", "--", "/bin/sh", "-c",
                "printf %s \"$ESLEASE_FENCING_TOKEN\" > " + file.str() + "; exit 3"},
               &SystemClock::instance());
  EXPECT_EQ(r.code, 3) << r.err;
  const std::string token = file.read();
  ASSERT_FALSE(token.empty());
  EXPECT_GT(std::stoll(token), 0);
  EXPECT_FALSE(api_.peek("default/job")) << "the lock is released when the command exits";
}

TEST_F(CliTest, RunOfMissingProgramExits127AndReleases) {
  auto r = cli({"run", "job", "--", "/nonexistent/program"}, &SystemClock::instance());
  EXPECT_EQ(r.code, 127);
  EXPECT_FALSE(api_.peek("default/job"));
}

TEST_F(CliTest, RunStopsTheChildWhenTheLockIsLost) {
  Run result{};
  std::thread runner([&] {
    result = cli({"run", "job", "--ttl", "3s", "--grace", "500ms", "--", "/bin/sh", "-c", "sleep 30"},
                 &SystemClock::instance());
  });
  ASSERT_TRUE(testing::wait_until([&] { return api_.peek("default/job").has_value(); }));
  // Another writer replaces the grant (as a takeover would).
  auto doc = api_.peek("default/job");
  nlohmann::json stolen = doc->source;
  stolen["holder"] = "thief";
  stolen["leaseUID"] = "thief-uid";
  api_.put_raw("default/job", stolen);
  runner.join();
  EXPECT_EQ(result.code, kExitLockLost) << result.err;
  EXPECT_NE(result.err.find("was lost to thief"), std::string::npos) << result.err;
  EXPECT_EQ(api_.peek("default/job")->source["holder"], "thief") << "never release someone else's grant";
}

TEST_F(CliTest, RunStopsTheChildWhenTheLockCannotBeConfirmed) {
  Run result{};
  std::thread runner([&] {
    result = cli({"run", "job", "--ttl", "2s", "--grace", "500ms", "--", "/bin/sh", "-c", "sleep 30"},
                 &SystemClock::instance());
  });
  ASSERT_TRUE(testing::wait_until([&] { return api_.peek("default/job").has_value(); }));
  for (int i = 0; i < 1000; ++i) {
    api_.inject({"index", false, make_error(ErrorCode::kUnavailable, "es down")});
    api_.inject({"get", false, make_error(ErrorCode::kUnavailable, "es down")});
  }
  runner.join();
  EXPECT_EQ(result.code, kExitLockLost) << result.err;
  EXPECT_NE(result.err.find("cannot confirm"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace eslease::cli
