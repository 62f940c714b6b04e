// Direct mode's commands against a fake Elasticsearch: every lock shape through one acquire,
// one hold, one renew, one release and one status.
#include "cli/direct_mode.h"

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

class DirectModeTest : public DirectCliTest {};

TEST_F(DirectModeTest, AcquirePrintsTheTokenAndBlocksOthers) {
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
TEST_F(DirectModeTest, WaitRunningOutExitsThreeAndNamesTheHolder) {
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

TEST_F(DirectModeTest, AnUnreachableBackendExitsOneNotThree) {
  for (int i = 0; i < 100; ++i)
    api_.inject({"create", false,
                 make_error(ErrorCode::kUnavailable, "cannot reach Elasticsearch for create: refused")});
  auto r = cli({"acquire", "report", "--wait", "1s"});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("cannot reach Elasticsearch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Unavailable"), std::string::npos) << "no internal codes: " << r.err;
}

// Without --wait, direct mode waits as Kubernetes mode does (it gave up at once).
TEST_F(DirectModeTest, WithoutWaitAcquireAndRunWaitForTheLock) {
  ASSERT_EQ(cli({"acquire", "report", "--holder", "gone", "--ttl", "5s"}).code, kExitOk);
  auto acquired = cli({"acquire", "report", "--holder", "next"});
  ASSERT_EQ(acquired.code, kExitOk) << acquired.err;
  EXPECT_EQ(api_.peek("default/report")->source["holder"], "next");
  EXPECT_GE(clock_.sleeps(), 1) << "it waited for the abandoned lock to expire";
}

TEST_F(DirectModeTest, DefaultHolderIsHostAndPid) {
  ASSERT_EQ(cli({"acquire", "report"}).code, kExitOk);
  EXPECT_EQ(api_.peek("default/report")->source["holder"], "host/42");
}

TEST_F(DirectModeTest, WaitTakesOverAnAbandonedLock) {
  ASSERT_EQ(cli({"acquire", "report", "--holder", "gone", "--ttl", "5s"}).code, kExitOk);
  auto r = cli({"acquire", "report", "--holder", "next", "--wait", "30s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(api_.peek("default/report")->source["holder"], "next");
}

TEST_F(DirectModeTest, RenewAndReleaseCheckTheHolder) {
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

TEST_F(DirectModeTest, StatusAsTableAndJson) {
  ASSERT_EQ(cli({"acquire", "a", "--holder", "me"}).code, kExitOk);
  auto table = cli({"status"});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_NE(table.out.find("LOCK"), std::string::npos);
  EXPECT_NE(table.out.find("default/a "), std::string::npos) << "capacity 1: no count" << table.out;
  EXPECT_NE(table.out.find("Exclusive"), std::string::npos) << table.out;
  auto one = cli({"status", "a", "--output", "json"});
  ASSERT_EQ(one.code, kExitOk);
  const auto j = nlohmann::json::parse(one.out);
  ASSERT_EQ(j["locks"].size(), 1u);
  const auto& lock = j["locks"][0];
  EXPECT_EQ(lock["namespace"], "default");
  EXPECT_EQ(lock["lock"], "a");
  EXPECT_EQ(lock["capacity"], 1);
  ASSERT_EQ(lock["holders"].size(), 1u);
  const auto& holder = lock["holders"][0];
  EXPECT_EQ(holder["holder"], "me");
  EXPECT_EQ(holder["transitions"], 1);
  EXPECT_EQ(holder["slots"], nlohmann::json::array({0}));
  EXPECT_EQ(holder["locks"], nlohmann::json::array({"a"}));
  EXPECT_TRUE(holder["fencingToken"].is_string());
  EXPECT_TRUE(holder.contains("expiresAt"));
  EXPECT_EQ(cli({"status", "b"}).out, "lock default/b is free\n");
  auto free = nlohmann::json::parse(cli({"status", "b", "--output", "json"}).out);
  EXPECT_EQ(free["locks"][0]["lock"], "b");
  EXPECT_TRUE(free["locks"][0]["holders"].empty());
  auto all = cli({"status", "--output", "json"});
  EXPECT_EQ(nlohmann::json::parse(all.out)["locks"].size(), 1u);
}

// A lock set: one grant of every lock, one token, one release of the whole set.
TEST_F(DirectModeTest, ASetIsGrantedWholeWithOneTokenAndReleasedWhole) {
  auto set = cli({"acquire", "orders", "customers", "--holder", "job"});
  ASSERT_EQ(set.code, kExitOk) << set.err;
  const auto orders = api_.peek("default/orders");
  const auto customers = api_.peek("default/customers");
  ASSERT_TRUE(orders && customers);
  EXPECT_EQ(orders->source["grant"], customers->source["grant"]);
  const auto token =
      std::max(*lock::fencing_token_of(orders->version), *lock::fencing_token_of(customers->version));
  EXPECT_EQ(set.out, std::to_string(token) + "\n");
  EXPECT_NE(set.err.find("acquired default/orders, default/customers as job (token "), std::string::npos)
      << set.err;

  auto other = cli({"acquire", "customers", "--holder", "other", "--wait", "0s"});
  EXPECT_EQ(other.code, kExitWaitTimedOut) << "busy, as for one lock";
  EXPECT_EQ(other.err.rfind("eslease: lock default/customers is held by job (token ", 0), 0u)
      << "the message alone, without a code: " << other.err;

  auto again = cli({"acquire", "orders", "customers", "--holder", "job"});
  EXPECT_EQ(again.code, kExitOk) << "a holder re-acquiring its own set has it: " << again.err;
  EXPECT_EQ(again.out, set.out);

  auto status = cli({"status", "customers"});
  EXPECT_NE(status.out.find("orders+customers"), std::string::npos) << "the set is named: " << status.out;

  auto released = cli({"release", "orders", "--holder", "job"});
  ASSERT_EQ(released.code, kExitOk) << released.err;
  EXPECT_EQ(released.err, "eslease: released default/orders, default/customers\n");
  EXPECT_FALSE(api_.peek("default/orders"));
  EXPECT_FALSE(api_.peek("default/customers")) << "release gives up the whole set";
}

// --capacity N alone is a semaphore: each claim holds one slot (--shared says the same).
TEST_F(DirectModeTest, ASemaphoreTakesOneSlotPerClaim) {
  ASSERT_EQ(cli({"acquire", "db", "--capacity", "3", "--holder", "a"}).code, kExitOk);
  ASSERT_EQ(cli({"acquire", "db", "--capacity", "3", "--shared", "--holder", "b"}).code, kExitOk);
  auto c = cli({"acquire", "db", "--capacity", "3", "--holder", "c"});
  ASSERT_EQ(c.code, kExitOk) << c.err;
  EXPECT_NE(c.err.find("capacity 3, Shared, slot 2)"), std::string::npos) << c.err;
  EXPECT_EQ(api_.peek("default/db#2")->source["holder"], "c");
  EXPECT_EQ(api_.peek("default/db#2")->source["access"], "Shared");
  auto full = cli({"acquire", "db", "--capacity", "3", "--holder", "d", "--wait", "0s"});
  EXPECT_EQ(full.code, kExitWaitTimedOut);
  EXPECT_EQ(full.err.rfind("eslease: lock default/db is full: its 3 slots are held by a, b, c", 0), 0u)
      << full.err;
  auto wrong = cli({"acquire", "db", "--capacity", "4", "--holder", "d"});
  EXPECT_EQ(wrong.code, kExitFailed);
  EXPECT_EQ(wrong.err.rfind("eslease: lock default/db has capacity 3 (held by a), but this claim states "
                            "capacity 4",
                            0),
            0u)
      << wrong.err;

  auto status = cli({"status", "db"});
  ASSERT_EQ(status.code, kExitOk) << status.err;
  EXPECT_NE(status.out.find("default/db (3/3)"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("Shared"), std::string::npos) << status.out;
  auto json_status = nlohmann::json::parse(cli({"status", "db", "-o", "json"}).out)["locks"][0];
  EXPECT_EQ(json_status["capacity"], 3);
  ASSERT_EQ(json_status["holders"].size(), 3u);
  EXPECT_EQ(json_status["holders"][1]["slots"], nlohmann::json::array({1}));
  EXPECT_EQ(json_status["holders"][1]["holder"], "b");
  EXPECT_EQ(json_status["holders"][1]["access"], "Shared");

  ASSERT_EQ(cli({"release", "db", "--holder", "b"}).code, kExitOk) << "the capacity is read from slot 0";
  EXPECT_FALSE(api_.peek("default/db#1"));
  EXPECT_TRUE(api_.peek("default/db#2"));
  ASSERT_EQ(cli({"release", "db", "--holder", "a"}).code, kExitOk);
  // Slot 0 free: the capacity comes from the other slots' documents (search).
  auto renewed = cli({"renew", "db", "--holder", "c"});
  EXPECT_EQ(renewed.code, kExitOk) << renewed.err;
  auto left = cli({"status", "db"});
  EXPECT_NE(left.out.find("default/db (1/3)"), std::string::npos) << left.out;
}

// A writer holds every slot of the lock: one holder, and the lock is full.
TEST_F(DirectModeTest, AnExclusiveWriterHoldsEverySlotAndFillsTheLock) {
  ASSERT_EQ(cli({"acquire", "rw", "--capacity", "2", "--holder", "reader"}).code, kExitOk);
  auto blocked =
      cli({"acquire", "rw", "--capacity", "2", "--exclusive", "--holder", "writer", "--wait", "0s"});
  EXPECT_EQ(blocked.code, kExitWaitTimedOut) << "a writer waits for every reader";
  ASSERT_EQ(cli({"release", "rw", "--holder", "reader"}).code, kExitOk);
  auto writer = cli({"acquire", "rw", "--capacity", "2", "--exclusive", "--holder", "writer"});
  ASSERT_EQ(writer.code, kExitOk) << writer.err;
  EXPECT_NE(writer.err.find("capacity 2, Exclusive)"), std::string::npos) << writer.err;
  EXPECT_EQ(api_.peek("default/rw")->source["access"], "Exclusive");
  EXPECT_EQ(api_.peek("default/rw#1")->source["holder"], "writer");
  auto reader = cli({"acquire", "rw", "--capacity", "2", "--holder", "reader", "--wait", "0s"});
  EXPECT_EQ(reader.code, kExitWaitTimedOut);
  EXPECT_NE(reader.err.find("lock default/rw is full: its 2 slots are held by writer\n"), std::string::npos)
      << "the writer, once: " << reader.err;

  auto status = cli({"status", "rw"});
  EXPECT_NE(status.out.find("default/rw (2/2)"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("0,1"), std::string::npos) << status.out;
  const auto holders = nlohmann::json::parse(cli({"status", "rw", "-o", "json"}).out)["locks"][0]["holders"];
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0]["slots"], nlohmann::json::array({0, 1}));
  auto listed = cli({"status"});
  EXPECT_NE(listed.out.find("default/rw (2/2)"), std::string::npos) << "status of every lock counts alike";

  ASSERT_EQ(cli({"release", "rw", "--holder", "writer"}).code, kExitOk);
  EXPECT_FALSE(api_.peek("default/rw"));
  EXPECT_FALSE(api_.peek("default/rw#1"));
}

TEST_F(DirectModeTest, RenewExtendsEveryDocumentOfTheGrant) {
  ASSERT_EQ(cli({"acquire", "a", "b", "--holder", "job"}).code, kExitOk);
  clock_.advance(Millis(5000));
  auto renewed = cli({"renew", "a", "b", "--holder", "job"});
  ASSERT_EQ(renewed.code, kExitOk) << renewed.err;
  const auto a = api_.peek("default/a");
  EXPECT_EQ(std::to_string(a->source["fencingToken"].get<std::int64_t>()) + "\n", renewed.out);
  EXPECT_EQ(api_.peek("default/b")->source["fencingToken"], a->source["fencingToken"]);
}

// A wait that ran out exits 3 whatever kept the lock from us at the end: a holder, someone
// moving first, or grants paused for the fencing tokens. An unreachable backend stays 1.
TEST(AcquireExitCode, AWaitThatRanOutIsToldApartFromAFailure) {
  for (ErrorCode code : {ErrorCode::kBusy, ErrorCode::kConflict, ErrorCode::kGrantsPaused})
    EXPECT_EQ(acquire_exit_code(make_error(code, "")), kExitWaitTimedOut) << to_string(code);
  for (ErrorCode code : {ErrorCode::kUnavailable, ErrorCode::kTokensExhausted, ErrorCode::kLost})
    EXPECT_EQ(acquire_exit_code(make_error(code, "")), kExitFailed) << to_string(code);
}

TEST_F(DirectModeTest, BackendErrorsExitOneWithTheReason) {
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

TEST_F(DirectModeTest, RunPassesTheTokenExitsWithTheChildsCodeAndReleases) {
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

TEST_F(DirectModeTest, RunOfMissingProgramExits127AndReleases) {
  auto r = cli({"run", "job", "--", "/nonexistent/program"}, &SystemClock::instance());
  EXPECT_EQ(r.code, 127);
  EXPECT_FALSE(api_.peek("default/job"));
}

TEST_F(DirectModeTest, RunStopsTheChildWhenTheLockIsLost) {
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

TEST_F(DirectModeTest, RunStopsTheChildWhenTheLockCannotBeConfirmed) {
  Run result{};
  std::thread runner([&] {
    result = cli({"run", "job", "--ttl", "2s", "--grace", "500ms", "--", "/bin/sh", "-c", "sleep 30"},
                 &SystemClock::instance());
  });
  ASSERT_TRUE(testing::wait_until([&] { return api_.peek("default/job").has_value(); }));
  for (int i = 0; i < 1000; ++i) api_.inject({"bulk", false, make_error(ErrorCode::kUnavailable, "es down")});
  runner.join();
  EXPECT_EQ(result.code, kExitLockLost) << result.err;
  EXPECT_NE(result.err.find("cannot confirm"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace eslease::cli
