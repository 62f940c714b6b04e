// plan_claim: which documents a claim writes, decided from its locks' slots as read.
#include "lock/slots.h"

#include <gtest/gtest.h>

namespace eslease::lock {
namespace {

LockKey key(const std::string& name) {
  return *make_lock_key("default", name);
}

LockState held(const std::string& lock, std::int64_t slot, std::int64_t capacity, Access access,
               const std::string& holder, const std::string& grant = "", std::vector<std::string> docs = {}) {
  LockState s;
  s.doc.lock = key(lock).id();
  s.doc.slot = slot;
  s.doc.capacity = capacity;
  s.doc.access = access;
  s.doc.holder = holder;
  s.doc.lease_uid = "uid-" + holder;
  s.doc.ttl_millis = 10000;
  s.doc.grant = grant;
  s.doc.grant_docs = std::move(docs);
  s.version = es::Version{slot + 1, 1};
  s.token = *fencing_token_of(s.version);
  return s;
}

// `spec`, one character per slot: '.' free, 'S' Shared holder, 'X' Exclusive holder, 's'/'x'
// the same but expired.
LockSlots slots(const std::string& lock, const std::string& spec, const std::string& holder = "other") {
  LockSlots out{key(lock), {}};
  const auto capacity = std::int64_t(spec.size());
  for (std::size_t k = 0; k < spec.size(); ++k) {
    const char c = spec[k];
    if (c == '.') {
      out.slots.push_back(SlotSight{});
      continue;
    }
    const Access access = (c == 'S' || c == 's') ? Access::kShared : Access::kExclusive;
    out.slots.push_back(
        SlotSight{held(lock, std::int64_t(k), capacity, access, holder), c == 's' || c == 'x'});
  }
  return out;
}

std::vector<std::int64_t> slots_written(const ClaimPlan& plan) {
  std::vector<std::int64_t> out;
  for (const SlotWrite& w : plan.writes) out.push_back(w.slot);
  return out;
}

struct Row {
  const char* name;
  std::string spec;  // the lock's slots
  Access access;
  ClaimPlan::Kind kind;
  std::vector<std::int64_t> written;
};

TEST(PlanClaim, OneLockTable) {
  const std::vector<Row> rows{
      {"free lock, Shared takes slot 0", "...", Access::kShared, ClaimPlan::Kind::kGrant, {0}},
      {"Shared takes the lowest free slot", "S.S", Access::kShared, ClaimPlan::Kind::kGrant, {1}},
      {"capacity reached", "SSS", Access::kShared, ClaimPlan::Kind::kBusy, {}},
      {"an expired slot is free", "SsS", Access::kShared, ClaimPlan::Kind::kGrant, {1}},
      {"Exclusive takes every slot", "...", Access::kExclusive, ClaimPlan::Kind::kGrant, {0, 1, 2}},
      {"Exclusive behind one Shared holder", "..S", Access::kExclusive, ClaimPlan::Kind::kBusy, {}},
      {"Shared behind an Exclusive holder", "XXX", Access::kShared, ClaimPlan::Kind::kBusy, {}},
      {"Exclusive over expired holders", "s.x", Access::kExclusive, ClaimPlan::Kind::kGrant, {0, 1, 2}},
      {"capacity one, Exclusive", ".", Access::kExclusive, ClaimPlan::Kind::kGrant, {0}},
      {"capacity one, held", "X", Access::kShared, ClaimPlan::Kind::kBusy, {}},
  };
  for (const Row& row : rows) {
    const ClaimShape shape{std::int64_t(row.spec.size()), row.access};
    const ClaimPlan plan = plan_claim({slots("db", row.spec)}, shape, "me");
    EXPECT_EQ(plan.kind, row.kind) << row.name;
    EXPECT_EQ(slots_written(plan), row.written) << row.name;
    if (plan.kind == ClaimPlan::Kind::kBusy) {
      EXPECT_NE(plan.why.find("other"), std::string::npos) << row.name;
    }
  }
}

TEST(PlanClaim, ExpiredDocumentsAreReplacedAtTheirVersion) {
  const ClaimPlan plan = plan_claim({slots("db", "SsS")}, ClaimShape{3, Access::kShared}, "me");
  ASSERT_EQ(plan.writes.size(), 1u);
  ASSERT_TRUE(plan.writes[0].replaces);
  EXPECT_EQ(plan.writes[0].replaces->version, (es::Version{2, 1}));
  const ClaimPlan free = plan_claim({slots("db", "S.S")}, ClaimShape{3, Access::kShared}, "me");
  EXPECT_FALSE(free.writes[0].replaces) << "a free slot is created";
}

TEST(PlanClaim, AClaimStatingAnotherCapacityIsInvalidNamingBothValues) {
  const ClaimPlan plan = plan_claim({slots("db", "S..")}, ClaimShape{5, Access::kShared}, "me");
  EXPECT_EQ(plan.kind, ClaimPlan::Kind::kInvalid);
  EXPECT_NE(plan.why.find("capacity 3"), std::string::npos) << plan.why;
  EXPECT_NE(plan.why.find("capacity 5"), std::string::npos) << plan.why;
  // Only live documents state a lock's capacity: an expired one is taken over.
  EXPECT_EQ(plan_claim({slots("db", "s..")}, ClaimShape{5, Access::kShared}, "me").kind,
            ClaimPlan::Kind::kGrant);
}

TEST(PlanClaim, ASetIsTheUnionOfItsLocksSlotsOrNothing) {
  const ClaimShape shape{2, Access::kShared};
  ClaimPlan plan = plan_claim({slots("a", "S."), slots("b", ".."), slots("c", "S.")}, shape, "me");
  ASSERT_EQ(plan.kind, ClaimPlan::Kind::kGrant);
  ASSERT_EQ(plan.writes.size(), 3u);
  EXPECT_EQ(plan.writes[0].key.name(), "a");
  EXPECT_EQ(plan.writes[0].slot, 1);
  EXPECT_EQ(plan.writes[1].slot, 0);
  EXPECT_EQ(plan.writes[2].slot, 1);
  plan = plan_claim({slots("a", ".."), slots("b", "SS")}, shape, "me");
  EXPECT_EQ(plan.kind, ClaimPlan::Kind::kBusy);
  EXPECT_TRUE(plan.writes.empty()) << "nothing of a set is written while one of its locks is full";
  EXPECT_NE(plan.why.find("default/b"), std::string::npos) << plan.why;
}

TEST(PlanClaim, AHolderReacquiringItsOwnSetHasIt) {
  const std::vector<std::string> docs{"default/a", "default/b"};
  LockSlots a{key("a"), {SlotSight{held("a", 0, 1, Access::kExclusive, "me", "g-1", docs), false}}};
  LockSlots b{key("b"), {SlotSight{held("b", 0, 1, Access::kExclusive, "me", "g-1", docs), false}}};
  ClaimPlan plan = plan_claim({a, b}, ClaimShape{}, "me");
  ASSERT_EQ(plan.kind, ClaimPlan::Kind::kOwn);
  EXPECT_EQ(plan.own.size(), 2u);
  // Another holder sees it busy; a set that is not exactly the grant is not the claimant's.
  EXPECT_EQ(plan_claim({a, b}, ClaimShape{}, "you").kind, ClaimPlan::Kind::kBusy);
  EXPECT_EQ(plan_claim({a}, ClaimShape{}, "me").kind, ClaimPlan::Kind::kBusy);
  EXPECT_EQ(plan_claim({a, b, slots("c", ".")}, ClaimShape{}, "me").kind, ClaimPlan::Kind::kBusy);
  EXPECT_EQ(plan_claim({a, b}, ClaimShape{1, Access::kShared}, "me").kind, ClaimPlan::Kind::kBusy);
}

TEST(CheckClaim, RefusesWhatCanNeverBeGranted) {
  EXPECT_TRUE(check_claim({key("a")}, ClaimShape{}).ok());
  EXPECT_TRUE(check_claim({key("a"), key("b")}, ClaimShape{1000, Access::kShared}).ok());
  EXPECT_FALSE(check_claim({}, ClaimShape{}).ok());
  EXPECT_FALSE(check_claim({key("a"), key("a")}, ClaimShape{}).ok());
  if (auto hashed = make_lock_key("default", "a#1"); hashed.ok()) {
    EXPECT_FALSE(check_claim({*hashed}, ClaimShape{}).ok()) << "slot 1 of lock a has that id";
  }
  EXPECT_FALSE(check_claim({key("a")}, ClaimShape{0, Access::kShared}).ok());
  EXPECT_FALSE(check_claim({key("a")}, ClaimShape{1001, Access::kShared}).ok());
  std::vector<LockKey> many;
  for (int i = 0; i < 33; ++i) many.push_back(key("l" + std::to_string(i)));
  EXPECT_FALSE(check_claim(many, ClaimShape{}).ok());
  many.resize(2);
  const auto too_many = check_claim(many, ClaimShape{600, Access::kExclusive});
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("1200 documents"), std::string::npos) << too_many.error().message;
}

}  // namespace
}  // namespace eslease::lock
