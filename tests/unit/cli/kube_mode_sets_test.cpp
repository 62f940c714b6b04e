// The eslease tool's Kubernetes mode with lock sets, against an in-memory API: the Lease a set
// is claimed with, the names refused before anything is contacted, what `run` tells its
// command, and how status and release find a set's claim.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "cli/lease_view.h"
#include "lock/names.h"
#include "unit/cli/claim_request.h"
#include "unit/cli/kube_mode_fixture.h"

namespace eslease::cli {
namespace {

using nlohmann::json;
using testing::request;
using testing::set_request;

class KubeModeSetsTest : public KubeModeTest {
 protected:
  // p1's claim on orders and inventory under its default name, Held with kToken.
  json held_set(const std::vector<std::string>& locks = {"orders", "inventory"}) {
    json held = make_claim(set_request("batch", set_name(), locks, "p1", "pod-uid"));
    held["status"] = {
        {"phase", "Held"}, {"fencingToken", kToken}, {"holder", {{"podName", "p1"}, {"podUID", "pod-uid"}}}};
    return api_.put_object(kLeases, held);
  }

  static std::string set_name() { return default_lease_name({"orders", "inventory"}, "p1"); }
};

TEST_F(KubeModeSetsTest, AcquireOfASetClaimsEveryLockInOneLease) {
  grant_on_next_watch(set_name());
  auto r = cli({"acquire", "orders", "inventory", "--capacity", "3", "--shared", "--wait", "5s"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, std::string(kToken) + "\n");
  EXPECT_NE(r.err.find("acquired lock set orders+inventory as Lease " + set_name()), std::string::npos)
      << r.err;
  auto claim = lease(set_name());
  ASSERT_TRUE(claim) << "one Lease for the whole set, under its default name";
  EXPECT_EQ(set_name().rfind("inventory-set-", 0), 0u) << set_name();
  const json& spec = (*claim)["spec"];
  EXPECT_EQ(spec["lockNames"], (json{"orders", "inventory"})) << "in the order given";
  EXPECT_FALSE(spec.contains("lockName"));
  EXPECT_EQ(spec["capacity"], 3);
  EXPECT_EQ(spec["access"], "Shared");
  EXPECT_EQ(spec["holder"]["podName"], "p1");
  std::size_t leases = 0;
  for (const auto& [verb, body] : api_.writes()) leases += verb.find("create") != std::string::npos ? 1 : 0;
  EXPECT_EQ(leases, 1u);
}

// Refused as direct mode refuses them, with the same words, before anything is contacted.
TEST_F(KubeModeSetsTest, BadSetsAreUsageErrorsBeforeConnecting) {
  std::vector<std::string> many{"acquire"};
  for (int i = 0; i < 33; ++i) many.push_back("l" + std::to_string(i));
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"acquire", "a", "b", "a"}, "lock a is named twice; a lock set names each lock once"},
           {many, "a lock set has at most 32 locks"},
           {{"run", "a", "Bad!", "--", "true"}, lock::validate_lock_name("Bad!").error().message},
           {{"release", "a", "b_"}, lock::validate_lock_name("b_").error().message}}) {
    auto r = cli(args);
    EXPECT_EQ(r.code, kExitUsage) << message;
    EXPECT_NE(r.err.find("eslease: " + message), std::string::npos) << r.err;
  }
  EXPECT_EQ(connections_, 0);
  EXPECT_TRUE(api_.writes().empty());
}

TEST_F(KubeModeSetsTest, RunListsTheSetInEsleaseLock) {
  session_renewed();
  grant_on_next_watch(set_name());
  const auto file =
      std::filesystem::temp_directory_path() / ("eslease-kube-run-set-" + std::to_string(::getpid()));
  auto r = cli({"run", "orders", "inventory", "--", "/bin/sh", "-c",
                "echo \"$ESLEASE_FENCING_TOKEN $ESLEASE_LOCK $ESLEASE_LEASE\" > " + file.string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(read_file(file), std::string(kToken) + " batch/orders,batch/inventory " + set_name() + "\n");
  std::filesystem::remove(file);
  EXPECT_TRUE(marked_released());
  EXPECT_FALSE(lease(set_name()));
  EXPECT_NE(r.err.find("released lock set orders+inventory"), std::string::npos) << r.err;
}

TEST_F(KubeModeSetsTest, RunTakesBackItsOwnSetClaimWhateverTheOrder) {
  held_set({"inventory", "orders"});
  session_renewed();
  auto r = cli({"run", "orders", "inventory", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("taking back Lease " + set_name() + ", this pod's claim on lock set orders+inventory"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(lease(set_name()));
}

// A claim on other locks under the name is someone else's business, never taken back.
TEST_F(KubeModeSetsTest, AClaimOnOtherLocksUnderTheNameIsNotTakenBack) {
  const json stored = held_set({"orders", "inventory", "audit"});
  auto r = cli({"run", "orders", "inventory", "--", "/bin/sh", "-c", "exit 0"});
  EXPECT_EQ(r.code, kExitFailed) << r.err;
  EXPECT_NE(r.err.find("already exists in namespace batch (lock set orders+inventory+audit, pod p1"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(*lease(set_name()), stored);
}

TEST_F(KubeModeSetsTest, StatusListsTheSetsClaimUnderEachOfItsLocks) {
  held_set();
  json waiting = make_claim(request("batch", "orders-p2", "orders", "p2", "u2"));
  waiting["status"] = {{"phase", "Pending"}, {"queuePosition", 0}};
  api_.put_object(kLeases, waiting);
  auto all = cli({"status", "-o", "json"});
  ASSERT_EQ(all.code, kExitOk) << all.err;
  const json locks = json::parse(all.out)["locks"];
  ASSERT_EQ(locks.size(), 2u) << locks.dump();
  for (const json& lock : locks) {
    ASSERT_EQ(lock["holders"].size(), 1u) << lock.dump();
    EXPECT_EQ(lock["holders"][0]["lease"], set_name());
    EXPECT_EQ(lock["holders"][0]["locks"], (json{"orders", "inventory"}));
  }
  EXPECT_EQ(locks[0]["lock"], "inventory");
  EXPECT_EQ(locks[1]["lock"], "orders");
  EXPECT_EQ(locks[1]["queue"][0]["lease"], "orders-p2");

  auto one = cli({"status", "inventory", "-o", "json"});
  ASSERT_EQ(one.code, kExitOk) << one.err;
  const json inventory = json::parse(one.out)["locks"];
  ASSERT_EQ(inventory.size(), 1u) << "status LOCK shows that lock alone";
  EXPECT_EQ(inventory[0]["lock"], "inventory");
  EXPECT_EQ(inventory[0]["holders"][0]["lease"], set_name());

  auto table = cli({"status", "orders"});
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_NE(table.out.find("SET"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("orders+inventory"), std::string::npos) << table.out;
}

// The workload Role has no `list`: the set's claim is found under its default name, in
// whatever order the locks are given.
TEST_F(KubeModeSetsTest, ReleaseOfTheSetReleasesThisPodsClaimOnIt) {
  held_set();
  api_.push_list_error(make_error(ErrorCode::kForbidden, "cannot list", 403));
  auto r = cli({"release", "inventory", "orders"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("releasing Lease " + set_name() + ", this pod's claim on lock set orders+inventory"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(marked_released()) << "the holder released its own claim";
  EXPECT_FALSE(lease(set_name()));
}

TEST_F(KubeModeSetsTest, ReleaseOfOneLockOfTheSetFindsTheSetsClaim) {
  held_set();
  auto r = cli({"release", "orders"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("this pod's claim on lock set orders+inventory"), std::string::npos) << r.err;
  EXPECT_FALSE(lease(set_name()));
}

TEST_F(KubeModeSetsTest, ReleaseOfASetNobodyClaimsSaysSo) {
  held_set();
  auto r = cli({"release", "orders", "audit"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_NE(r.err.find("no claim on lock set orders+audit in namespace batch; nothing to release"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(lease(set_name())) << "a claim on another set is left alone";
}

}  // namespace
}  // namespace eslease::cli
