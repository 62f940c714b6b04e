// Grants of several documents against the test server (the es-emulator, or ESLEASE_TEST_ES_URL).
#include <gtest/gtest.h>

#include "integration/lock/lock_fixture.h"
#include "lock/slots.h"
#include "support/lock_grants.h"

namespace eslease::lock {
namespace {

using nlohmann::json;
using testing::EsTestServer;
using testing::free_claim;
using testing::one_lock;
using testing::StoreOnServer;

class GrantsIntegration : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store().prepare().ok()); }
  LockStore& store() { return *backend_.store; }
  static std::vector<LockKey> keys(int n, const std::string& prefix = "table-") {
    std::vector<LockKey> out;
    for (int i = 0; i < n; ++i) out.push_back(*make_lock_key("batch", prefix + std::to_string(i)));
    return out;
  }
  static GrantRequest request(const std::vector<LockKey>& locks, ClaimShape shape,
                              const std::string& holder) {
    return free_claim(locks, shape, direct_grantee(holder));
  }
  std::optional<es::GetResult> read(const std::string& id) {
    auto got = backend_.api->get(index_, id);
    if (!got.ok() || !got->found) return std::nullopt;
    return *got;
  }

  EsTestServer server_;
  std::string index_ = EsTestServer::unique_index("eslease-grants-it");
  StoreOnServer backend_{server_.url(), index_};
};

TEST_F(GrantsIntegration, ASetOf32LocksIsGrantedInOneRequestAndReleasedInOne) {
  const auto locks = keys(32);
  server_.reset_stats();
  auto granted = grant_one(store(), request(locks, ClaimShape{}, "job-a"));
  ASSERT_TRUE(granted.ok()) << granted.error().describe();
  ASSERT_TRUE(granted->grant);
  EXPECT_EQ(server_.count("bulk"), 1);
  EXPECT_EQ(server_.total(), 1);
  std::int64_t largest = 0;
  for (const LockKey& key : locks) {
    auto doc = read(key.id());
    ASSERT_TRUE(doc) << key.id();
    EXPECT_EQ(doc->source["grant"], granted->grant->id);
    EXPECT_EQ(doc->source["grantDocs"].size(), 32u);
    largest = std::max(largest, *fencing_token_of(doc->version));
  }
  EXPECT_EQ(granted->grant->token, largest) << "the grant's token is the largest of its writes";

  GrantRenewal renewed = renew_grant(store(), *granted->grant, Millis(0));
  ASSERT_EQ(renewed.result, RenewalResult::kRenewed) << (renewed.error ? renewed.error->describe() : "");
  for (const LockKey& key : locks) EXPECT_EQ(read(key.id())->source["fencingToken"], granted->grant->token);

  server_.reset_stats();
  auto released = store().release(*renewed.grant, ReleaseScope::kGrant);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
  EXPECT_EQ(server_.count("bulk"), 1);
  for (const LockKey& key : locks) EXPECT_FALSE(read(key.id())) << key.id();
}

TEST_F(GrantsIntegration, APartlyAppliedBulkIsUndoneExactly) {
  const auto locks = keys(6, "part-");
  HeldGrant single = testing::granted(store(), one_lock(locks[4], direct_grantee("single-holder")));
  auto set = grant_one(store(), request(locks, ClaimShape{}, "job-a"));
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_FALSE(set->grant);
  for (int i = 0; i < 6; ++i) {
    auto doc = read(locks[i].id());
    if (i == 4) {
      ASSERT_TRUE(doc);
      EXPECT_EQ(doc->source["holder"], "single-holder");
      EXPECT_EQ(doc->version, single.docs[0].state.version) << "never touched";
    } else {
      EXPECT_FALSE(doc) << locks[i].id() << " was written by the set and must be gone";
    }
  }
}

TEST_F(GrantsIntegration, AGrantWhoseAnswerWasLostIsKeptWhenEveryItemApplied) {
  server_.fault({{"op", "bulk"}, {"phase", "after_apply"}, {"drop", true}, {"count", 1}});
  auto set = grant_one(store(), request(keys(4, "lost-"), ClaimShape{}, "job-a"));
  server_.clear_faults();
  if (!set.ok()) {
    // The client may have retried the _bulk: its creates then conflict with our own writes,
    // which the read recognises. Either way nobody may hold part of the set.
    FAIL() << set.error().describe();
  }
  ASSERT_TRUE(set->grant);
  EXPECT_EQ(set->grant->docs.size(), 4u);
}

TEST_F(GrantsIntegration, ExclusiveClaimOnCapacityThreeHoldsEverySlot) {
  const auto lock = keys(1, "rw-");
  HeldGrant reader = testing::granted(
      store(),
      GrantRequest{{SlotWrite{lock[0], 1, std::nullopt}}, direct_grantee("reader"), 3, Access::kShared});
  auto writer = grant_one(store(), request(lock, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE(writer->grant);
  EXPECT_FALSE(read("batch/rw-0"));
  EXPECT_FALSE(read("batch/rw-0#2"));
  ASSERT_TRUE(store().release(reader, ReleaseScope::kGrant).ok());
  writer = grant_one(store(), request(lock, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_TRUE(writer.ok() && writer->grant);
  auto slots = store().read_slots({SlotRange{lock[0], 3}});
  ASSERT_TRUE(slots.ok());
  for (const auto& slot : (*slots)[0]) {
    ASSERT_TRUE(slot.ok() && *slot);
    EXPECT_EQ((*slot)->doc.holder, "writer");
    EXPECT_EQ((*slot)->doc.access, Access::kExclusive);
  }
}

TEST_F(GrantsIntegration, AnIndexMadeBeforeLockShapesGetsTheirFields) {
  const std::string old_index = EsTestServer::unique_index("eslease-old");
  json definition = index_definition();
  for (const char* field : {"slot", "capacity", "access", "grant", "grantDocs"})
    definition["mappings"]["properties"].erase(field);
  ASSERT_TRUE(backend_.api->ensure_index(old_index, definition).ok());
  StoreOnServer upgraded(server_.url(), old_index);
  ASSERT_TRUE(upgraded.store->prepare().ok());
  auto described = backend_.api->describe_index(old_index);
  ASSERT_TRUE(described.ok() && *described);
  EXPECT_EQ(check_mapping((*described)->mappings).fit, MappingFit::kFits);
  EXPECT_EQ((*described)->mappings["dynamic"], "strict");
  auto set = grant_one(*upgraded.store, request(keys(2, "old-"), ClaimShape{}, "job"));
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_TRUE(set->grant) << "the strict index accepts the new fields";
}

}  // namespace
}  // namespace eslease::lock
