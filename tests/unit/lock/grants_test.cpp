// Grants of several documents against the fake document API: one _bulk, all or nothing.
#include <gtest/gtest.h>

#include <set>

#include "lock/lock_store.h"
#include "lock/slots.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;

class GrantSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(make_es_lock_store(api_, clock_).value());
    ASSERT_TRUE(store_->prepare().ok());
  }
  static std::vector<LockKey> keys(int n) {
    std::vector<LockKey> out;
    for (int i = 0; i < n; ++i) out.push_back(*make_lock_key("batch", "table-" + std::to_string(i)));
    return out;
  }
  static Grantee grantee(const std::string& holder) {
    Grantee g;
    g.holder = holder;
    g.lease_uid = "uid-" + holder;
    g.ttl = Millis(10000);
    return g;
  }
  static GrantRequest request(const std::vector<LockKey>& locks, ClaimShape shape,
                              const std::string& holder) {
    return GrantRequest{writes_if_free(locks, shape), grantee(holder), shape.capacity, shape.access};
  }
  HeldGrant granted(const GrantRequest& r) {
    auto outcome = store_->grant(r);
    EXPECT_TRUE(outcome.ok()) << outcome.error().describe();
    EXPECT_TRUE(outcome->grant.has_value());
    return *outcome->grant;
  }
  void occupy(const std::string& id, const std::string& holder) {
    LockDocument doc;
    const auto hash = id.find('#');
    doc.lock = id.substr(0, hash);
    doc.slot = hash == std::string::npos ? 0 : std::stoll(id.substr(hash + 1));
    doc.capacity = 3;
    doc.lease_uid = "uid-" + holder;
    doc.holder = holder;
    doc.ttl_millis = 10000;
    api_.put_raw(id, to_json(doc));
  }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
};

TEST_F(GrantSetTest, ASetOf32LocksIsGrantedInOneBulkNamingItsDocuments) {
  const int before = api_.total_calls();
  HeldGrant g = granted(request(keys(32), ClaimShape{}, "job-a"));
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(api_.calls("bulk"), 1);
  ASSERT_EQ(g.docs.size(), 32u);
  EXPECT_FALSE(g.id.empty());
  const auto doc = api_.peek("batch/table-7");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->source["grant"], g.id);
  EXPECT_EQ(doc->source["grantDocs"].size(), 32u);
  EXPECT_EQ(doc->source["grantDocs"][31], "batch/table-31");
  EXPECT_EQ(doc->source["fencingToken"], 0) << "the granting write cannot know its own version";
}

TEST_F(GrantSetTest, TheGrantsTokenIsTheLargestOfItsWritesAndItsFirstRenewalWritesIt) {
  HeldGrant g = granted(request(keys(3), ClaimShape{}, "job-a"));
  std::int64_t largest = 0;
  for (int i = 0; i < 3; ++i) {
    const auto doc = api_.peek("batch/table-" + std::to_string(i));
    largest = std::max(largest, *fencing_token_of(doc->version));
  }
  EXPECT_EQ(g.token, largest);
  EXPECT_EQ(g.token, *fencing_token_of(api_.peek("batch/table-2")->version))
      << "the last item was written last";
  for (const HeldLock& doc : g.docs) EXPECT_EQ(doc.grant.state.token, g.token);
  clock_.advance(Millis(3000));
  const int bulks = api_.calls("bulk");
  GrantRenewal renewed = renew_grant(*store_, g, Millis(0));
  ASSERT_EQ(renewed.result, GrantRenewal::Result::kRenewed);
  EXPECT_EQ(api_.calls("bulk") - bulks, 1) << "every document renewed in one _bulk";
  EXPECT_EQ(renewed.grant->token, g.token);
  EXPECT_EQ(renewed.grant->valid_until, clock_.monotonic() + Millis(10000));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(api_.peek("batch/table-" + std::to_string(i))->source["fencingToken"], g.token);
}

TEST_F(GrantSetTest, APartlyAppliedGrantIsUndoneAndNobodyHoldsPartOfIt) {
  occupy("batch/table-5", "job-b");
  auto outcome = store_->grant(request(keys(8), ClaimShape{3, Access::kShared}, "job-a"));
  ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
  EXPECT_FALSE(outcome->grant);
  for (int i = 0; i < 8; ++i) {
    const auto doc = api_.peek("batch/table-" + std::to_string(i));
    if (i == 5) {
      ASSERT_TRUE(doc);
      EXPECT_EQ(doc->source["holder"], "job-b") << "another grant's document is never touched";
    } else {
      EXPECT_FALSE(doc) << "table-" << i << " was written and must be undone";
    }
  }
  ASSERT_EQ(outcome->current.size(), 8u);
  ASSERT_TRUE(outcome->current[5]);
  EXPECT_EQ(outcome->current[5]->doc.holder, "job-b");
  EXPECT_FALSE(outcome->current[0]);
}

TEST_F(GrantSetTest, AGrantWhoseAnswerWasLostIsSettledByOneRead) {
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "answer lost")});
  HeldGrant g = granted(request(keys(4), ClaimShape{}, "job-a"));
  EXPECT_EQ(g.docs.size(), 4u);
  EXPECT_EQ(api_.calls("mget"), 1);
  EXPECT_EQ(api_.calls("get"), 0);
}

TEST_F(GrantSetTest, AGrantThatWasNotAppliedReportsTheError) {
  api_.inject({"bulk", false, make_error(ErrorCode::kUnavailable, "no node")});
  auto outcome = store_->grant(request(keys(4), ClaimShape{}, "job-a"));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(api_.peek("batch/table-0"));
}

TEST_F(GrantSetTest, AnExclusiveClaimConflictsWithAnySharedHolder) {
  const auto lock = keys(1);
  HeldGrant reader =
      granted(GrantRequest{{SlotWrite{lock[0], 2, std::nullopt}}, grantee("reader"), 3, Access::kShared});
  EXPECT_TRUE(reader.id.empty()) << "one document: no grant id";
  auto writer = store_->grant(request(lock, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE(writer->grant);
  EXPECT_FALSE(api_.peek("batch/table-0"));
  EXPECT_FALSE(api_.peek("batch/table-0#1"));
  EXPECT_EQ(api_.peek("batch/table-0#2")->source["holder"], "reader");
  EXPECT_EQ(api_.peek("batch/table-0#2")->source["access"], "Shared");
}

TEST_F(GrantSetTest, ExpiredDocumentsAreTakenOverInTheSameBulk) {
  const auto lock = keys(2);
  HeldGrant old = granted(request(lock, ClaimShape{}, "job-a"));
  GrantRequest r = request(lock, ClaimShape{}, "job-b");
  for (std::size_t i = 0; i < r.writes.size(); ++i) r.writes[i].replaces = old.docs[i].grant.state;
  const int bulks = api_.calls("bulk");
  HeldGrant g = granted(r);
  EXPECT_EQ(api_.calls("bulk") - bulks, 1);
  EXPECT_GT(g.token, old.token);
  EXPECT_EQ(api_.peek("batch/table-1")->source["transitions"], 2);
  EXPECT_EQ(api_.peek("batch/table-1")->source["holder"], "job-b");
}

TEST_F(GrantSetTest, AGrantIsLostWhenAnyDocumentIsAndGivesBackTheRest) {
  HeldGrant g = granted(request(keys(3), ClaimShape{}, "job-a"));
  occupy("batch/table-1", "intruder");  // another writer replaced one document
  GrantRenewal renewed = renew_grant(*store_, g, Millis(0));
  EXPECT_EQ(renewed.result, GrantRenewal::Result::kLost);
  EXPECT_NE(renewed.why.find("batch/table-1"), std::string::npos) << renewed.why;
  EXPECT_FALSE(api_.peek("batch/table-0"));
  EXPECT_FALSE(api_.peek("batch/table-2"));
  EXPECT_EQ(api_.peek("batch/table-1")->source["holder"], "intruder");
}

TEST_F(GrantSetTest, ReleaseDeletesEveryDocumentInOneBulk) {
  HeldGrant g = granted(request(keys(2), ClaimShape{2, Access::kExclusive}, "job-a"));
  ASSERT_EQ(g.docs.size(), 4u);
  const int bulks = api_.calls("bulk");
  auto released = store_->release_grant(g);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
  EXPECT_EQ(api_.calls("bulk") - bulks, 1);
  for (const char* id : {"batch/table-0", "batch/table-0#1", "batch/table-1", "batch/table-1#1"})
    EXPECT_FALSE(api_.peek(id)) << id;
}

TEST_F(GrantSetTest, ReleaseAfterALostRenewalAnswerStillReleases) {
  HeldGrant g = granted(request(keys(2), ClaimShape{}, "job-a"));
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "answer lost")});
  GrantRenewal renewed = renew_grant(*store_, g, Millis(0));
  ASSERT_NE(renewed.result, GrantRenewal::Result::kLost);
  // The holder still has the versions it sent over: the release finds the newer ones.
  auto released = store_->release_grant(g);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/table-0"));
  EXPECT_FALSE(api_.peek("batch/table-1"));
}

TEST_F(GrantSetTest, ReadSlotsReadsEverySlotOfEveryLock) {
  granted(GrantRequest{{SlotWrite{keys(1)[0], 1, std::nullopt}}, grantee("reader"), 3, Access::kShared});
  auto slots = store_->read_slots(keys(2), 3);
  ASSERT_TRUE(slots.ok()) << slots.error().describe();
  ASSERT_EQ(slots->size(), 2u);
  ASSERT_EQ((*slots)[0].size(), 3u);
  EXPECT_FALSE((*slots)[0][0]);
  ASSERT_TRUE((*slots)[0][1]);
  EXPECT_EQ((*slots)[0][1]->doc.holder, "reader");
  EXPECT_EQ((*slots)[0][1]->doc.slot, 1);
  EXPECT_FALSE((*slots)[1][2]);
}

TEST_F(GrantSetTest, ARequestThatCannotBeAGrantIsRefusedUnsent) {
  const auto lock = keys(1);
  const int before = api_.total_calls();
  GrantRequest twice{{SlotWrite{lock[0], 0, std::nullopt}, SlotWrite{lock[0], 0, std::nullopt}},
                     grantee("a"),
                     1,
                     Access::kExclusive};
  EXPECT_EQ(store_->grant(twice).error().code, ErrorCode::kInvalidArgument);
  GrantRequest outside{{SlotWrite{lock[0], 3, std::nullopt}}, grantee("a"), 3, Access::kShared};
  EXPECT_EQ(store_->grant(outside).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(api_.total_calls(), before);
}

}  // namespace
}  // namespace eslease::lock
