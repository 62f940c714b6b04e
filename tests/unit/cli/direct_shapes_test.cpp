// The tool's direct mode with lock shapes: lock sets, --capacity and --shared.
#include "cli/direct_shapes.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "unit/cli/direct_cli_fixture.h"

namespace eslease::cli {
namespace {

class DirectShapesTest : public DirectCliTest {};

TEST_F(DirectShapesTest, ASetIsGrantedWholeWithOneTokenAndReleasedWhole) {
  auto set = cli({"acquire", "orders", "customers", "--holder", "job"});
  ASSERT_EQ(set.code, kExitOk) << set.err;
  const auto orders = api_.peek("default/orders");
  const auto customers = api_.peek("default/customers");
  ASSERT_TRUE(orders && customers);
  EXPECT_EQ(orders->source["grant"], customers->source["grant"]);
  const auto token =
      std::max(*lock::fencing_token_of(orders->version), *lock::fencing_token_of(customers->version));
  EXPECT_EQ(set.out, std::to_string(token) + "\n");

  auto other = cli({"acquire", "customers", "--holder", "other", "--wait", "0s"});
  EXPECT_EQ(other.code, kExitWaitTimedOut) << "busy, as for one lock";
  EXPECT_NE(other.err.find("held by job"), std::string::npos) << other.err;

  auto again = cli({"acquire", "orders", "customers", "--holder", "job"});
  EXPECT_EQ(again.code, kExitOk) << "a holder re-acquiring its own set has it: " << again.err;
  EXPECT_EQ(again.out, set.out);

  auto released = cli({"release", "orders", "--holder", "job", "--capacity", "1"});
  ASSERT_EQ(released.code, kExitOk) << released.err;
  EXPECT_FALSE(api_.peek("default/orders"));
  EXPECT_FALSE(api_.peek("default/customers")) << "release gives up the whole set";
}

TEST_F(DirectShapesTest, ASemaphoreTakesOneSlotPerSharedClaim) {
  for (const char* holder : {"a", "b", "c"})
    ASSERT_EQ(cli({"acquire", "db", "--capacity", "3", "--shared", "--holder", holder}).code, kExitOk);
  EXPECT_EQ(api_.peek("default/db#2")->source["holder"], "c");
  auto full = cli({"acquire", "db", "--capacity", "3", "--shared", "--holder", "d", "--wait", "0s"});
  EXPECT_EQ(full.code, kExitWaitTimedOut);
  auto wrong = cli({"acquire", "db", "--capacity", "4", "--shared", "--holder", "d"});
  EXPECT_EQ(wrong.code, kExitFailed);
  EXPECT_NE(wrong.err.find("capacity 3"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("capacity 4"), std::string::npos) << wrong.err;

  auto status = cli({"status", "db"});
  ASSERT_EQ(status.code, kExitOk) << status.err;
  EXPECT_NE(status.out.find("3 of 3 slots held"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("Shared"), std::string::npos) << status.out;
  auto json_status = nlohmann::json::parse(cli({"status", "db", "-o", "json"}).out);
  EXPECT_EQ(json_status["capacity"], 3);
  ASSERT_EQ(json_status["holders"].size(), 3u);
  EXPECT_EQ(json_status["holders"][1]["slot"], 1);
  EXPECT_EQ(json_status["holders"][1]["holder"], "b");

  ASSERT_EQ(cli({"release", "db", "--holder", "b"}).code, kExitOk) << "the capacity is read from slot 0";
  EXPECT_FALSE(api_.peek("default/db#1"));
  EXPECT_TRUE(api_.peek("default/db#2"));
}

TEST_F(DirectShapesTest, RenewExtendsEveryDocumentOfTheGrant) {
  ASSERT_EQ(cli({"acquire", "a", "b", "--holder", "job"}).code, kExitOk);
  clock_.advance(Millis(5000));
  auto renewed = cli({"renew", "a", "b", "--holder", "job"});
  ASSERT_EQ(renewed.code, kExitOk) << renewed.err;
  const auto a = api_.peek("default/a");
  EXPECT_EQ(std::to_string(a->source["fencingToken"].get<std::int64_t>()) + "\n", renewed.out);
  EXPECT_EQ(api_.peek("default/b")->source["fencingToken"], a->source["fencingToken"]);
}

TEST(DirectShapesOptions, ShapesAreCheckedBeforeAnythingIsContacted) {
  auto o = parse_options(
      {"--es", "http://a:9200", "run", "a", "b", "c", "--capacity", "5", "--shared", "--", "x"});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->locks, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(o->capacity, 5);
  EXPECT_TRUE(o->shared);
  EXPECT_TRUE(has_lock_shape(*o));
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "--capacity", "0"}).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "--capacity", "1001"}).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "--capacity", "x"}).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "acquire", "a", "b", "a"}).ok());
  std::vector<std::string> many{"--es", "http://a:9200", "acquire"};
  for (int i = 0; i < 33; ++i) many.push_back("l" + std::to_string(i));
  EXPECT_FALSE(parse_options(many).ok());
  EXPECT_FALSE(parse_options({"--es", "http://a:9200", "status", "a", "b"}).ok());
}

TEST(DirectShapesOptions, KubernetesModeTakesSetsCapacityAndAccess) {
  auto set = parse_options({"acquire", "a", "b", "--capacity", "3", "--shared"});
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->mode, Mode::kKubernetes);
  EXPECT_EQ(set->locks, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(set->capacity, 3);
  EXPECT_TRUE(set->shared);
  ASSERT_TRUE(parse_options({"run", "a", "b", "--", "x"}).ok());
}

// A set is checked by one rule in both modes, with the same words.
TEST(DirectShapesOptions, BadSetsAreRefusedAlikeInBothModes) {
  std::vector<std::string> many{"acquire"};
  for (int i = 0; i < 33; ++i) many.push_back("l" + std::to_string(i));
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"acquire", "a", "b", "a"}, "lock a is named twice; a lock set names each lock once"},
           {many, "a lock set has at most 32 locks"}}) {
    auto kubernetes = parse_options(args);
    std::vector<std::string> direct_args{"--es", "http://a:9200"};
    direct_args.insert(direct_args.end(), args.begin(), args.end());
    auto direct = parse_options(direct_args);
    ASSERT_FALSE(kubernetes.ok()) << message;
    ASSERT_FALSE(direct.ok()) << message;
    EXPECT_EQ(kubernetes.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(kubernetes.error().message, message);
    EXPECT_EQ(direct.error().message, message);
  }
}

// A wait that ran out exits 3 whatever kept the lock from us at the end: a holder, someone
// moving first, or grants paused for the fencing tokens. An unreachable backend stays 1.
TEST(AcquireExitCode, AWaitThatRanOutIsToldApartFromAFailure) {
  for (ErrorCode code : {ErrorCode::kBusy, ErrorCode::kConflict, ErrorCode::kGrantsPaused})
    EXPECT_EQ(acquire_exit_code(make_error(code, "")), kExitWaitTimedOut) << to_string(code);
  for (ErrorCode code : {ErrorCode::kUnavailable, ErrorCode::kTokensExhausted, ErrorCode::kLost})
    EXPECT_EQ(acquire_exit_code(make_error(code, "")), kExitFailed) << to_string(code);
}

}  // namespace
}  // namespace eslease::cli
