// Grants of several documents, and several grants in one call, against the fake document API:
// one _bulk, each grant all or nothing.
#include "lock/grants.h"

#include <gtest/gtest.h>

#include "lock/slots.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"
#include "support/lock_grants.h"

namespace eslease::lock {
namespace {

using testing::FakeClock;
using testing::FakeDocumentApi;
using testing::free_claim;
using testing::one_lock;

class GrantsTest : public ::testing::Test {
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
    return free_claim(locks, shape, grantee(holder));
  }
  HeldGrant granted(const GrantRequest& r) { return testing::granted(*store_, r); }
  void occupy(const std::string& id, const std::string& holder) {
    LockDocument doc;
    const auto hash = id.find('#');
    doc.lock = id.substr(0, hash);
    doc.slot = hash == std::string::npos ? 0 : std::stoll(id.substr(hash + 1));
    doc.capacity = 3;
    doc.lease_uid = "uid-" + holder;
    doc.holder = holder;
    doc.ttl_millis = 10000;
    api_.put_raw(id, nlohmann::json::parse(source_of(doc).text));
  }

  FakeDocumentApi api_;
  FakeClock clock_;
  std::unique_ptr<LockStore> store_;
};

TEST_F(GrantsTest, ASetOf32LocksIsGrantedInOneBulkNamingItsDocuments) {
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

// Start-up grants many locks at once: every request of the call goes in one _bulk, and each
// is granted or not on its own.
TEST_F(GrantsTest, SeveralGrantsOfOneCallShareOneBulkAndAreDecidedEachAlone) {
  const auto locks = keys(6);
  occupy("batch/table-4", "intruder");
  const std::vector<GrantRequest> requests{one_lock(locks[0], grantee("pod-0")),
                                           one_lock(locks[1], grantee("pod-1")),
                                           request({locks[2], locks[3]}, ClaimShape{}, "set-job"),
                                           request({locks[4], locks[5]}, ClaimShape{}, "blocked-job")};
  const int before = api_.total_calls();
  const auto outcomes = store_->grant(requests);
  ASSERT_EQ(outcomes.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(outcomes[i].ok()) << outcomes[i].error().describe();
    EXPECT_TRUE(outcomes[i]->grant) << i;
  }
  EXPECT_EQ(outcomes[2]->grant->docs.size(), 2u);
  EXPECT_EQ(api_.peek("batch/table-3")->source["holder"], "set-job");
  ASSERT_TRUE(outcomes[3].ok());
  EXPECT_FALSE(outcomes[3]->grant);
  ASSERT_TRUE(outcomes[3]->current[0]);
  EXPECT_EQ(outcomes[3]->current[0]->doc.holder, "intruder");
  EXPECT_FALSE(api_.peek("batch/table-5")) << "the refused set's other document was undone";
  // One _bulk of every write, one _mget to settle the refused request, one delete to undo it.
  EXPECT_EQ(api_.calls("bulk"), 1);
  EXPECT_EQ(api_.calls("mget"), 1);
  EXPECT_EQ(api_.calls("delete"), 1);
  EXPECT_EQ(api_.total_calls() - before, 3);
  EXPECT_LT(outcomes[0]->grant->token, outcomes[2]->grant->token) << "each grant has its own token";
}

TEST_F(GrantsTest, TheGrantsTokenIsTheLargestOfItsWritesAndItsFirstRenewalWritesIt) {
  HeldGrant g = granted(request(keys(3), ClaimShape{}, "job-a"));
  std::int64_t largest = 0;
  for (int i = 0; i < 3; ++i) {
    const auto doc = api_.peek("batch/table-" + std::to_string(i));
    largest = std::max(largest, *fencing_token_of(doc->version));
  }
  EXPECT_EQ(g.token, largest);
  EXPECT_EQ(g.token, *fencing_token_of(api_.peek("batch/table-2")->version))
      << "the last item was written last";
  for (const HeldDocument& doc : g.docs) EXPECT_EQ(doc.state.token, g.token);
  clock_.advance(Millis(3000));
  const int bulks = api_.calls("bulk");
  GrantRenewal renewed = renew_grant(*store_, g, Millis(0));
  ASSERT_EQ(renewed.result, RenewalResult::kRenewed);
  EXPECT_EQ(api_.calls("bulk") - bulks, 1) << "every document renewed in one _bulk";
  EXPECT_EQ(renewed.grant->token, g.token);
  EXPECT_EQ(renewed.grant->valid_until, clock_.monotonic() + Millis(10000));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(api_.peek("batch/table-" + std::to_string(i))->source["fencingToken"], g.token);
}

TEST_F(GrantsTest, APartlyAppliedGrantIsUndoneAndNobodyHoldsPartOfIt) {
  occupy("batch/table-5", "job-b");
  auto outcome = grant_one(*store_, request(keys(8), ClaimShape{3, Access::kShared}, "job-a"));
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

TEST_F(GrantsTest, AGrantWhoseAnswerWasLostIsSettledByOneRead) {
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "answer lost")});
  HeldGrant g = granted(request(keys(4), ClaimShape{}, "job-a"));
  EXPECT_EQ(g.docs.size(), 4u);
  EXPECT_EQ(api_.calls("mget"), 1);
  EXPECT_EQ(api_.calls("get"), 0);
}

TEST_F(GrantsTest, AGrantThatWasNotAppliedReportsTheError) {
  api_.inject({"bulk", false, make_error(ErrorCode::kUnavailable, "no node")});
  auto outcome = grant_one(*store_, request(keys(4), ClaimShape{}, "job-a"));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(outcome.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(api_.peek("batch/table-0"));
}

TEST_F(GrantsTest, AnExclusiveClaimConflictsWithAnySharedHolder) {
  const auto lock = keys(1);
  HeldGrant reader =
      granted(GrantRequest{{SlotWrite{lock[0], 2, std::nullopt}}, grantee("reader"), 3, Access::kShared});
  EXPECT_TRUE(reader.id.empty()) << "one document: no grant id";
  auto writer = grant_one(*store_, request(lock, ClaimShape{3, Access::kExclusive}, "writer"));
  ASSERT_TRUE(writer.ok());
  EXPECT_FALSE(writer->grant);
  EXPECT_FALSE(api_.peek("batch/table-0"));
  EXPECT_FALSE(api_.peek("batch/table-0#1"));
  EXPECT_EQ(api_.peek("batch/table-0#2")->source["holder"], "reader");
  EXPECT_EQ(api_.peek("batch/table-0#2")->source["access"], "Shared");
}

// At capacity 1 Shared and Exclusive are the same: such a grant is written as Exclusive, the
// lock's one document as it always was.
TEST_F(GrantsTest, ASharedGrantOfCapacityOneIsWrittenExclusive) {
  granted(GrantRequest{{SlotWrite{keys(1)[0], 0, std::nullopt}}, grantee("reader"), 1, Access::kShared});
  EXPECT_EQ(api_.peek("batch/table-0")->source["access"], "Exclusive");
}

TEST_F(GrantsTest, ExpiredDocumentsAreTakenOverInTheSameBulk) {
  const auto lock = keys(2);
  HeldGrant old = granted(request(lock, ClaimShape{}, "job-a"));
  GrantRequest r = request(lock, ClaimShape{}, "job-b");
  for (std::size_t i = 0; i < r.writes.size(); ++i) r.writes[i].replaces = old.docs[i].state;
  const int bulks = api_.calls("bulk");
  HeldGrant g = granted(r);
  EXPECT_EQ(api_.calls("bulk") - bulks, 1);
  EXPECT_GT(g.token, old.token);
  EXPECT_EQ(api_.peek("batch/table-1")->source["transitions"], 2);
  EXPECT_EQ(api_.peek("batch/table-1")->source["holder"], "job-b");
}

TEST_F(GrantsTest, AGrantIsLostWhenAnyDocumentIsAndGivesBackTheRest) {
  HeldGrant g = granted(request(keys(3), ClaimShape{}, "job-a"));
  occupy("batch/table-1", "intruder");  // another writer replaced one document
  GrantRenewal renewed = renew_grant(*store_, g, Millis(0));
  EXPECT_EQ(renewed.result, RenewalResult::kLost);
  EXPECT_NE(renewed.why.find("batch/table-1"), std::string::npos) << renewed.why;
  EXPECT_FALSE(api_.peek("batch/table-0"));
  EXPECT_FALSE(api_.peek("batch/table-2"));
  EXPECT_EQ(api_.peek("batch/table-1")->source["holder"], "intruder");
}

TEST_F(GrantsTest, AReleaseDeletesEveryDocumentInOneBulk) {
  HeldGrant g = granted(request(keys(2), ClaimShape{2, Access::kExclusive}, "job-a"));
  ASSERT_EQ(g.docs.size(), 4u);
  const int bulks = api_.calls("bulk");
  auto released = store_->release(g, ReleaseScope::kGrant);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
  EXPECT_EQ(api_.calls("bulk") - bulks, 1);
  for (const char* id : {"batch/table-0", "batch/table-0#1", "batch/table-1", "batch/table-1#1"})
    EXPECT_FALSE(api_.peek(id)) << id;
}

TEST_F(GrantsTest, AReleaseAfterALostRenewalAnswerStillReleases) {
  HeldGrant g = granted(request(keys(2), ClaimShape{}, "job-a"));
  api_.inject({"bulk", true, make_error(ErrorCode::kTimeout, "answer lost")});
  GrantRenewal renewed = renew_grant(*store_, g, Millis(0));
  ASSERT_NE(renewed.result, RenewalResult::kLost);
  // The holder still has the versions it sent over: the release finds the newer ones.
  auto released = store_->release(g, ReleaseScope::kGrant);
  ASSERT_TRUE(released.ok()) << released.error().describe();
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
  EXPECT_FALSE(api_.peek("batch/table-0"));
  EXPECT_FALSE(api_.peek("batch/table-1"));
}

// A grant handed over because it expired is released at the versions judged expired only: a
// document another process renewed since carries a later expiresAt, which stays.
TEST_F(GrantsTest, AReleaseOfThisVersionLeavesADocumentThatMovedOnAlone) {
  HeldGrant g = granted(request(keys(2), ClaimShape{}, "job-a"));
  StoreOptions options;
  options.writer = "another-replica";
  auto other = make_es_lock_store(api_, clock_, options);
  ASSERT_TRUE(other.ok());
  clock_.advance(Millis(1000));
  const auto renewed = (*other)->renew_all({Renewal{g.docs[1], Millis(0), std::nullopt}});
  ASSERT_EQ(renewed[0].result, RenewalResult::kRenewed);

  auto exact = store_->release(g, ReleaseScope::kThisVersion);
  ASSERT_TRUE(exact.ok()) << exact.error().describe();
  EXPECT_EQ(*exact, ReleaseOutcome::kNotHeld);
  EXPECT_FALSE(api_.peek("batch/table-0")) << "the document still at the version given is deleted";
  ASSERT_TRUE(api_.peek("batch/table-1"));
  EXPECT_EQ(api_.peek("batch/table-1")->source["writer"], "another-replica");
}

TEST_F(GrantsTest, ReadSlotsReadsEverySlotOfEveryLockInOneRequest) {
  const auto locks = keys(2);
  granted(GrantRequest{{SlotWrite{locks[0], 1, std::nullopt}}, grantee("reader"), 3, Access::kShared});
  const int before = api_.total_calls();
  auto slots = store_->read_slots({SlotRange{locks[0], 3}, SlotRange{locks[1], 2}});
  ASSERT_TRUE(slots.ok()) << slots.error().describe();
  EXPECT_EQ(api_.total_calls() - before, 1);
  EXPECT_EQ(api_.calls("mget"), 1);
  ASSERT_EQ(slots->size(), 2u);
  ASSERT_EQ((*slots)[0].size(), 3u);
  ASSERT_EQ((*slots)[1].size(), 2u);
  EXPECT_FALSE(*(*slots)[0][0]);
  ASSERT_TRUE(*(*slots)[0][1]);
  EXPECT_EQ((*(*slots)[0][1])->doc.holder, "reader");
  EXPECT_EQ((*(*slots)[0][1])->doc.slot, 1);
  EXPECT_FALSE(*(*slots)[1][1]);
}

TEST_F(GrantsTest, ARequestThatCannotBeAGrantIsRefusedUnsent) {
  const auto lock = keys(1);
  const int before = api_.total_calls();
  GrantRequest twice{{SlotWrite{lock[0], 0, std::nullopt}, SlotWrite{lock[0], 0, std::nullopt}},
                     grantee("a"),
                     1,
                     Access::kExclusive};
  EXPECT_EQ(grant_one(*store_, twice).error().code, ErrorCode::kInvalidArgument);
  GrantRequest outside{{SlotWrite{lock[0], 3, std::nullopt}}, grantee("a"), 3, Access::kShared};
  EXPECT_EQ(grant_one(*store_, outside).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(api_.total_calls(), before);
}

}  // namespace
}  // namespace eslease::lock
