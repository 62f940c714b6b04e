// The tool's pure helpers for Kubernetes mode: decoding Leases, building claims, names, the
// pod's identity, and the status report's order.
#include "cli/lease_view.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "cli/pod_identity.h"
#include "cli/status_report.h"
#include "common/text.h"
#include "lock/names.h"
#include "unit/cli/claim_request.h"

namespace eslease::cli {
namespace {

using nlohmann::json;
using testing::request;

json held_lease() {
  return json::parse(R"({
    "metadata": {"name": "report-p1", "namespace": "batch", "uid": "u1", "resourceVersion": "7",
                 "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"lockName": "report", "holder": {"podName": "p1"}, "priority": "Background",
             "leaseDurationSeconds": 12},
    "status": {"phase": "Held", "holder": {"podName": "p1", "podUID": "pu1"}, "fencingToken": "4294967296",
               "acquireTime": "2026-01-01T00:00:01.5Z",
               "conditions": [{"type": "Held", "status": "True", "reason": "Acquired", "message": "",
                               "lastTransitionTime": "2026-01-01T00:00:01Z"}]}})");
}

TEST(LeaseView, DecodesWhatTheToolActsOn) {
  const LeaseView v = decode_lease_view(held_lease());
  EXPECT_EQ(v.name, "report-p1");
  EXPECT_EQ(v.ns, "batch");
  EXPECT_EQ(v.uid, "u1");
  EXPECT_EQ(v.spec.lock_name, "report");
  EXPECT_EQ(v.spec.priority, api::Priority::kBackground);
  EXPECT_EQ(v.spec.lease_duration_seconds, 12);
  EXPECT_EQ(v.spec.describe_holder(), "pod p1");
  EXPECT_EQ(v.spec.problem, "");
  EXPECT_TRUE(v.held());
  EXPECT_EQ(v.holder_uid, "pu1");
  EXPECT_EQ(v.fencing_token, "4294967296");
  ASSERT_TRUE(v.acquire_time);
  EXPECT_EQ(format_rfc3339_millis(*v.acquire_time), "2026-01-01T00:00:01.500Z");
  EXPECT_FALSE(v.being_deleted);
}

// A Lease without spec.access reads as the controller and the CRD's default read it: a
// capacity-3 claim stating nothing else is a semaphore slot, shown as shared.
TEST(LeaseView, AccessDefaultsAsTheControllerReadsIt) {
  json lease = held_lease();
  lease["spec"]["capacity"] = 3;
  EXPECT_EQ(decode_lease_view(lease).spec.access, api::Access::kShared);
  lease["spec"]["access"] = "Exclusive";
  EXPECT_EQ(decode_lease_view(lease).spec.access, api::Access::kExclusive);
}

// The tool reads a spec as the controller does (api::decode_lease_spec): a capacity the
// controller refuses is no capacity, and the claim's problem is known before its status says
// Invalid, so `eslease status` does not count the lock's slots from it.
TEST(LeaseView, ReadsTheSpecAsTheControllerDoes) {
  json lease = held_lease();
  lease["spec"]["capacity"] = 1001;
  LeaseView refused = decode_lease_view(lease);
  EXPECT_EQ(refused.spec.capacity, 1);
  EXPECT_NE(refused.spec.problem.find("spec.capacity"), std::string::npos) << refused.spec.problem;

  refused.phase = "Pending";
  refused.created = WallTime{};
  lease["spec"]["capacity"] = 2;
  lease["metadata"]["name"] = "report-p2";
  lease["metadata"]["creationTimestamp"] = "2026-01-01T00:00:05Z";
  const LeaseView holder = decode_lease_view(lease);
  EXPECT_EQ(build_lock_reports({refused, holder})[0].capacity, 2)
      << "the older claim's capacity is refused: the lock's is the next claim's";
}

TEST(LeaseView, MistypedOrMissingFieldsReadAsAbsent) {
  for (const char* text : {"null", "[]", "{}", R"({"metadata": 3, "spec": "x", "status": []})",
                           R"({"spec": {"holder": {"podSelector": {"matchLabels": {"app": "r"}}},
                                        "leaseDurationSeconds": "30"},
                               "status": {"queuePosition": -1, "acquireTime": "yesterday"}})"}) {
    const LeaseView v = decode_lease_view(json::parse(text));
    EXPECT_EQ(v.spec.lease_duration_seconds, 16) << text << ": the CRD's default, as the controller reads it";
    EXPECT_FALSE(v.queue_position) << text;
    EXPECT_FALSE(v.acquire_time) << text;
    EXPECT_FALSE(v.held()) << text;
  }
  EXPECT_EQ(decode_lease_view(
                json::parse(R"({"spec": {"holder": {"podSelector": {"matchLabels": {"app": "r"}}}}})"))
                .spec.describe_holder(),
            "pods app=r");
}

// The tool orders a queue by the controller's rule: a claim waits from its creation unless
// its Held condition says it lost the lock; other reasons (a lock document the controller
// cannot read, a timeout) leave the wait where it started.
TEST(LeaseView, WaitingSinceFollowsTheControllersRule) {
  auto pending = [](const char* status, const char* reason) {
    json lease = held_lease();
    lease["status"]["phase"] = "Pending";
    lease["status"]["conditions"][0] = {{"type", "Held"},
                                        {"status", status},
                                        {"reason", reason},
                                        {"lastTransitionTime", "2026-01-01T00:05:00Z"}};
    return decode_lease_view(lease).waiting_since();
  };
  const auto created = parse_rfc3339("2026-01-01T00:00:00Z");
  const auto lost_at = parse_rfc3339("2026-01-01T00:05:00Z");
  EXPECT_EQ(pending("False", "PodDeleted"), lost_at);
  EXPECT_EQ(pending("False", "RenewalFailed"), lost_at);
  EXPECT_EQ(pending("False", "Waiting"), created);
  EXPECT_EQ(pending("False", "MalformedLockDocument"), created);
  EXPECT_EQ(pending("False", "SomethingNew"), created);
  EXPECT_EQ(pending("True", "PodDeleted"), created);
}

// Two claims created in one second: the controller serves them in the order it queued them,
// recorded to the microsecond in status.queuedAt, and so does the tool's queue, whatever their
// names (claims far back have no queuePosition to go by).
TEST(StatusReport, ClaimsOfOneSecondQueueInTheOrderTheControllerQueuedThem) {
  auto queued = [](const char* name, const char* at) {
    json lease = held_lease();
    lease["metadata"]["name"] = name;
    lease["status"] = {{"phase", "Pending"}, {"queuedAt", at}};
    return decode_lease_view(lease);
  };
  const LeaseView reader = queued("r-0", "2026-01-01T00:00:00.700000Z");
  const LeaseView writer = queued("w-0", "2026-01-01T00:00:00.300000Z");
  EXPECT_EQ(reader.waiting_since(), parse_rfc3339("2026-01-01T00:00:00.7Z"));
  const auto reports = build_lock_reports({reader, writer});
  ASSERT_EQ(reports.size(), 1u);
  ASSERT_EQ(reports[0].queue.size(), 2u);
  EXPECT_EQ(reports[0].queue[0].name, "w-0") << "queued 0.4 s before r-0";
}

TEST(LeaseView, ClaimIsOwnedByThePod) {
  ClaimRequest r = request("batch", "report-p1", "report", "p1", "pod-uid");
  r.priority = "Background";
  r.lease_duration_seconds = 10;
  r.acquire_timeout_seconds = 5;
  r.liveness_grace_seconds = 0;
  const json claim = make_claim(r);
  EXPECT_EQ(claim["kind"], "Lease");
  EXPECT_EQ(claim["metadata"]["ownerReferences"][0],
            (json{{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", "p1"}, {"uid", "pod-uid"}}));
  EXPECT_EQ(claim["spec"]["holder"], (json{{"podName", "p1"}}));
  EXPECT_EQ(claim["spec"]["leaseDurationSeconds"], 10);
  EXPECT_EQ(claim["spec"]["acquireTimeoutSeconds"], 5);
  EXPECT_EQ(claim["spec"]["livenessGraceSeconds"], 0);
  EXPECT_FALSE(make_claim(request("b", "n", "l", "p", "u"))["spec"].contains("priority"));
}

TEST(LeaseView, TheControllersTimeoutNeverEndsTheToolsWaitEarly) {
  // creationTimestamp has whole seconds: a Lease created at 10.9 s reads 10 s, so the
  // controller's deadline is 10 s + acquireTimeoutSeconds, which must not come before 10.9 s + D.
  EXPECT_EQ(acquire_timeout_for_wait(Millis(3000)), 4);
  EXPECT_EQ(acquire_timeout_for_wait(Millis(2500)), 4);
  EXPECT_EQ(acquire_timeout_for_wait(Millis(0)), 1);
  EXPECT_EQ(acquire_timeout_for_wait(Millis::max()), std::numeric_limits<int>::max());
}

TEST(LeaseView, DefaultNamesAreValidObjectNames) {
  EXPECT_EQ(default_lease_name({"report"}, "worker-0"), "report-worker-0");
  for (const auto& [lock, pod] : std::vector<std::pair<std::string, std::string>>{
           {"my_lock", "p"}, {"a.-b", "p"}, {std::string(200, 'a'), std::string(100, 'b')}}) {
    const std::string name = default_lease_name({lock}, pod);
    EXPECT_TRUE(validate_object_name("Lease name", name).ok()) << name;
    EXPECT_EQ(name.rfind("eslease-", 0), 0u) << name;
    EXPECT_EQ(name, default_lease_name({lock}, pod)) << "deterministic";
  }
  EXPECT_NE(default_lease_name({"my_lock"}, "p"), default_lease_name({"my_lock"}, "q"));
}

// A lock set is spec.lockNames in the order given, never with spec.lockName; capacity and
// access apply to each of its locks.
TEST(LeaseView, ASetClaimHasLockNames) {
  ClaimRequest r = testing::set_request("batch", "n", {"orders", "inventory"}, "p1", "u1");
  r.capacity = 3;
  const json claim = make_claim(r);
  EXPECT_EQ(claim["spec"]["lockNames"], (json{"orders", "inventory"}));
  EXPECT_FALSE(claim["spec"].contains("lockName"));
  EXPECT_EQ(claim["spec"]["capacity"], 3);
  EXPECT_EQ(claim["spec"]["access"], "Shared") << "the default access, written where it matters";
  EXPECT_FALSE(make_claim(request("b", "n", "l", "p", "u"))["spec"].contains("lockNames"));

  const LeaseView v = decode_lease_view(claim);
  EXPECT_TRUE(v.spec.is_set());
  EXPECT_EQ(v.locks(), (std::vector<std::string>{"orders", "inventory"}));
  EXPECT_TRUE(v.claims("inventory"));
  EXPECT_FALSE(v.claims("order"));
  EXPECT_EQ(v.describe_locks(), "lock set orders+inventory");
  EXPECT_EQ(decode_lease_view(held_lease()).describe_locks(), "lock report");
  EXPECT_EQ(decode_lease_view(held_lease()).locks(), std::vector<std::string>{"report"});
  EXPECT_TRUE(same_locks({"a", "b"}, {"b", "a"}));
  EXPECT_FALSE(same_locks({"a", "b"}, {"a", "b", "c"}));
}

// spec.access is Exclusive only for a claim that asked for it (--exclusive): a claim stating a
// capacity alone is a semaphore's Shared holder, whatever the CRD's default says.
TEST(LeaseView, OnlyAnExclusiveClaimWritesExclusive) {
  ClaimRequest r = request("b", "n", "l", "p", "u");
  EXPECT_FALSE(make_claim(r)["spec"].contains("access")) << "capacity 1: either access is the same";
  r.capacity = 2;
  EXPECT_EQ(make_claim(r)["spec"]["access"], "Shared");
  r.access = api::Access::kExclusive;
  EXPECT_EQ(make_claim(r)["spec"]["access"], "Exclusive");
  r.capacity = 1;
  EXPECT_EQ(make_claim(r)["spec"]["access"], "Exclusive");
}

// A set's default name starts with its first lock in sorted order, carries a hash of the
// whole set and ends with the pod: the same whatever order the locks were given in, another
// for another set.
TEST(LeaseView, DefaultNamesOfSetsAreValidAndDoNotDependOnTheOrder) {
  const std::string name = default_lease_name({"orders", "inventory"}, "worker-0");
  EXPECT_EQ(name.rfind("inventory-set-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("inventory-set-12345678-worker-0").size()) << name;
  EXPECT_EQ(name.substr(name.size() - 9), "-worker-0") << name;
  EXPECT_EQ(name, default_lease_name({"inventory", "orders"}, "worker-0"));
  EXPECT_NE(name, default_lease_name({"inventory", "orders", "x"}, "worker-0"));
  EXPECT_NE(name, default_lease_name({"inventory", "ordersx"}, "worker-0"));
  EXPECT_NE(name, default_lease_name({"orders", "inventory"}, "worker-1"));
  EXPECT_NE(name, default_lease_name({"inventory"}, "worker-0"));
  for (const std::vector<std::string>& set :
       {std::vector<std::string>{"my_lock", "z"}, {std::string(200, 'a'), std::string(100, 'b')}}) {
    const std::string hashed = default_lease_name(set, "p");
    EXPECT_TRUE(validate_object_name("Lease name", hashed).ok()) << hashed;
    EXPECT_EQ(hashed.rfind("eslease-", 0), 0u) << hashed;
    EXPECT_EQ(hashed, default_lease_name({set[1], set[0]}, "p"));
  }
  // Only the first lock is spelled out; the others are in the hash.
  EXPECT_EQ(default_lease_name({"my_lock", "b"}, "p").rfind("b-set-", 0), 0u);
}

TEST(LeaseView, NamesAreCheckedWithReadableMessages) {
  EXPECT_TRUE(lock::validate_lock_name("nightly_report.v2").ok());
  for (const std::string& bad :
       std::vector<std::string>{"", "Upper", "-x", "x-", "a/b", "line\nbreak", std::string(254, 'a')}) {
    auto s = lock::validate_lock_name(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos) << "control characters are not echoed";
  }
  EXPECT_NE(lock::validate_lock_name("l\xc3\xbc"
                                     "ck")
                .error()
                .message.find("'l\xc3\xbc"
                              "ck'"),
            std::string::npos)
      << "a Unicode name is shown as it is, not as 'l??ck'";
  EXPECT_TRUE(validate_object_name("Lease name", "a.b-c").ok());
  EXPECT_FALSE(validate_object_name("Lease name", "a_b").ok());
  EXPECT_FALSE(validate_object_name("Lease name", "a..b").ok());
  EXPECT_TRUE(lock::validate_namespace("batch-1").ok());
  EXPECT_FALSE(lock::validate_namespace("a.b").ok());
}

PodIdentitySources sources(std::map<std::string, std::string> env, std::map<std::string, std::string> files) {
  PodIdentitySources s;
  s.config_namespace = "from-config";
  s.getenv = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  s.read_file = [files](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    return it == files.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  return s;
}

TEST(PodIdentity, EnvironmentThenDownwardApiFilesThenConfig) {
  auto from_env =
      resolve_pod_identity(sources({{"POD_NAME", "p1"}, {"POD_NAMESPACE", "ns1"}, {"POD_UID", "u1"}}, {}));
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->name, "p1");
  EXPECT_EQ(from_env->ns, "ns1");
  EXPECT_EQ(from_env->uid, "u1");

  auto from_files = resolve_pod_identity(sources(
      {}, {{"/etc/podinfo/name", "p2\n"}, {"/etc/podinfo/namespace", "ns2\n"}, {"/etc/podinfo/uid", "u2"}}));
  ASSERT_TRUE(from_files.ok());
  EXPECT_EQ(from_files->name, "p2");
  EXPECT_EQ(from_files->ns, "ns2");
  EXPECT_EQ(from_files->uid, "u2");

  auto s = sources({{"POD_NAME", "p1"}}, {});
  s.pod_flag = "p1";
  EXPECT_EQ(resolve_pod_identity(s)->ns, "from-config");
}

TEST(PodIdentity, AnotherPodsUidIsNeverBorrowed) {
  auto s = sources({{"POD_NAME", "me"}, {"POD_UID", "my-uid"}}, {});
  s.pod_flag = "someone-else";
  auto identity = resolve_pod_identity(s);
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ(identity->name, "someone-else");
  EXPECT_EQ(identity->uid, "") << "looked up instead";
}

TEST(PodIdentity, NoIdentityNamesEveryWayToGiveIt) {
  auto identity = resolve_pod_identity(sources({}, {}));
  ASSERT_FALSE(identity.ok());
  EXPECT_EQ(identity.error().code, ErrorCode::kInvalidArgument);
  for (const char* needle : {"--pod", "POD_NAME", "/etc/podinfo"}) {
    EXPECT_NE(identity.error().message.find(needle), std::string::npos) << needle;
  }
}

LeaseView claim(std::string name, std::string phase, std::string priority, std::optional<int> position,
                int created_second) {
  LeaseView v;
  v.ns = "batch";
  v.spec.lock_name = "report";
  v.name = std::move(name);
  v.spec.pod_name = v.name;
  v.phase = std::move(phase);
  v.spec.priority = api::parse_priority(priority).value();
  v.queue_position = position;
  v.created = WallTime{} + std::chrono::seconds(1'800'000'000 + created_second);
  return v;
}

TEST(StatusReport, QueueFollowsTheControllerThenPriorityThenAge) {
  const std::vector<LeaseView> leases{claim("late-bg", "", "Background", std::nullopt, 9),
                                      claim("second", "Pending", "Foreground", 1, 5),
                                      claim("holder", "Held", "Foreground", std::nullopt, 0),
                                      claim("first", "Pending", "Foreground", 0, 1),
                                      claim("late-fg", "", "Foreground", std::nullopt, 10),
                                      claim("gone", "TimedOut", "Foreground", std::nullopt, 2)};
  const auto reports = build_lock_reports(leases);
  ASSERT_EQ(reports.size(), 1u);
  const auto names = [](const std::vector<LeaseView>& vs) {
    std::vector<std::string> out;
    for (const auto& v : vs) out.push_back(v.name);
    return out;
  };
  EXPECT_EQ(names(reports[0].holders), std::vector<std::string>{"holder"});
  EXPECT_EQ(names(reports[0].queue), (std::vector<std::string>{"first", "second", "late-fg", "late-bg"}));
  EXPECT_EQ(names(reports[0].ended), std::vector<std::string>{"gone"});

  const WallTime now = WallTime{} + std::chrono::seconds(1'800'000'070);
  std::ostringstream table;
  print_lock_reports(table, reports, now, false);
  std::istringstream lines(table.str());
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header.rfind("LOCK", 0), 0u);
  std::string row;
  std::getline(lines, row);
  EXPECT_NE(row.find("held"), std::string::npos);
  std::getline(lines, row);
  EXPECT_NE(row.find("first"), std::string::npos);
  EXPECT_NE(row.find("1m9s"), std::string::npos) << row;
  // QUEUE shows queuePosition as the Lease has it (0 = next), "-" where it has none.
  const auto queue_cell = [](const std::string& line) {
    std::istringstream cells(line);
    std::string lock;
    std::string queue;
    cells >> lock >> queue;
    return queue;
  };
  EXPECT_EQ(queue_cell(row), "0") << row;
  std::getline(lines, row);
  EXPECT_EQ(queue_cell(row), "1") << row;
  std::getline(lines, row);
  EXPECT_NE(row.find("late-fg"), std::string::npos);
  EXPECT_EQ(queue_cell(row), "-") << row;

  const json j = lock_reports_json(reports, now);
  EXPECT_EQ(j["locks"][0]["queue"][0]["lease"], "first");
  EXPECT_EQ(j["locks"][0]["queue"][0]["order"], 0);
  EXPECT_EQ(j["locks"][0]["queue"][0]["waitingSeconds"], 69);
  EXPECT_EQ(j["locks"][0]["queue"][3]["queuePosition"], nullptr);
}

// A lock set's claim waits by its furthest lock: its queuePosition counts the claims ahead of
// it there. On its other locks it keeps what it needs, so it is served there before a later
// claim whose queuePosition is smaller; the queue lists the order of service.
TEST(StatusReport, ASetsClaimIsListedWhereItIsServedNotByItsFurthestPosition) {
  LeaseView set = claim("set", "Pending", "Foreground", 3, 2);
  set.spec.lock_names = {"report", "archive"};
  const LeaseView later = claim("later", "Pending", "Foreground", 1, 4);
  const auto reports = build_lock_reports({later, set});
  ASSERT_EQ(reports.size(), 2u);
  ASSERT_EQ(reports[1].lock, "report");
  ASSERT_EQ(reports[1].queue.size(), 2u);
  EXPECT_EQ(reports[1].queue[0].name, "set");
  EXPECT_EQ(reports[1].queue[1].name, "later");
}

// The LOCK cell counts slots, as the controller's eslease_lock_slots does: an Exclusive
// holder takes every slot, a Shared one its own. A Shared holder shows its slot under its
// first lock, where status.slot names it; an Exclusive one holds them all and shows none.
TEST(StatusReport, TheLockCellCountsTheSlotsItsHoldersTake) {
  LeaseView writer = claim("writer", "Held", "Foreground", std::nullopt, 0);
  writer.spec.capacity = 2;
  writer.spec.access = api::Access::kExclusive;
  writer.slot = 0;
  const WallTime now = WallTime{} + std::chrono::seconds(1'800'000'010);
  std::ostringstream table;
  print_lock_reports(table, build_lock_reports({writer}), now, false);
  EXPECT_TRUE(std::regex_search(table.str(), std::regex(R"(report \(2/2\)\s+held\s+writer)"))) << table.str();
  EXPECT_EQ(table.str().find("slot"), std::string::npos) << table.str();
  EXPECT_EQ(lock_reports_json(build_lock_reports({writer}), now)["locks"][0]["holders"][0]["slot"], nullptr);

  LeaseView reader = claim("reader", "Held", "Foreground", std::nullopt, 0);
  reader.spec.capacity = 3;
  reader.slot = 1;
  LeaseView set_reader = reader;
  set_reader.name = "set-reader";
  set_reader.spec.lock_names = {"archive", "report"};
  std::ostringstream shared;
  print_lock_reports(shared, build_lock_reports({reader, set_reader}), now, false);
  EXPECT_NE(shared.str().find("report (2/3)"), std::string::npos) << shared.str();
  EXPECT_TRUE(std::regex_search(shared.str(), std::regex(R"(slot 1 shared\s+reader)"))) << shared.str();
  EXPECT_TRUE(std::regex_search(shared.str(), std::regex(R"(held shared\s+set-reader)")))
      << "its slot 1 is on archive, its first lock\n"
      << shared.str();

  LeaseView one = claim("one", "Held", "Foreground", std::nullopt, 0);  // capacity 1, default Shared
  EXPECT_EQ(lock_reports_json(build_lock_reports({one}), now)["locks"][0]["holders"][0]["access"],
            "Exclusive")
      << "at capacity 1 the grant is Exclusive, as the controller writes it";
}

// A set's claim stands under each of its locks, counted against each one's capacity; the
// table names the whole set in a SET column, shown only when a set is listed.
TEST(StatusReport, ASetsClaimIsListedUnderEachOfItsLocks) {
  LeaseView set = claim("set-holder", "Held", "Foreground", std::nullopt, 0);
  set.spec.lock_names = {"report", "archive"};
  set.fencing_token = "9";
  const std::vector<LeaseView> leases{set, claim("single", "Pending", "Foreground", 0, 1)};
  const auto reports = build_lock_reports(leases);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].lock, "archive");
  EXPECT_EQ(reports[1].lock, "report");
  ASSERT_EQ(reports[0].holders.size(), 1u);
  ASSERT_EQ(reports[1].holders.size(), 1u);
  EXPECT_EQ(reports[1].holders[0].name, "set-holder");
  EXPECT_EQ(reports[1].queue[0].name, "single");

  const WallTime now = WallTime{} + std::chrono::seconds(1'800'000'010);
  std::ostringstream table;
  print_lock_reports(table, reports, now, false);
  std::istringstream lines(table.str());
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    rows.emplace_back();
    for (std::string cell; cells >> cell;) rows.back().push_back(cell);
  }
  ASSERT_EQ(rows.size(), 4u) << table.str();
  EXPECT_EQ(rows[0][1], "SET");
  EXPECT_EQ(rows[1], (std::vector<std::string>{"archive", "report+archive", "held", "set-holder",
                                               "set-holder", "Foreground", "Held", "9", "-", "-"}));
  EXPECT_EQ(rows[2][1], "report+archive");
  EXPECT_EQ(rows[3][0], "report");
  EXPECT_EQ(rows[3][1], "-") << "one lock's claim";

  const json j = lock_reports_json(reports, now);
  EXPECT_EQ(j["locks"][0]["holders"][0]["locks"], (json{"report", "archive"}));
  EXPECT_EQ(j["locks"][1]["queue"][0]["locks"], (json{"report"}));

  std::ostringstream no_set;
  print_lock_reports(no_set, build_lock_reports({claim("single", "Pending", "Foreground", 0, 1)}), now,
                     false);
  EXPECT_EQ(no_set.str().find("SET"), std::string::npos) << no_set.str();
}

// The lock's capacity as the controller takes it: stated by the oldest claim that has not
// ended. A newer claim stating another capacity is Invalid and is not counted, whatever its
// number; one being deleted or timed out states nothing either.
TEST(StatusReport, CapacityIsTheOneTheOldestLiveClaimStates) {
  LeaseView holder = claim("holder", "Held", "Foreground", std::nullopt, 1);
  holder.spec.capacity = 2;
  LeaseView invalid = claim("larger", "Invalid", "Foreground", std::nullopt, 5);
  invalid.spec.capacity = 3;
  LeaseView timed_out = claim("older", "TimedOut", "Foreground", std::nullopt, 0);
  timed_out.spec.capacity = 4;
  LeaseView waiting = claim("waiting", "Pending", "Foreground", 0, 6);
  waiting.spec.capacity = 2;
  const auto reports = build_lock_reports({invalid, waiting, timed_out, holder});
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].capacity, 2);
  std::ostringstream table;
  print_lock_reports(table, reports, WallTime{} + std::chrono::seconds(1'800'000'010), false);
  EXPECT_NE(table.str().find("report (1/2)"), std::string::npos) << table.str();

  holder.being_deleted = true;  // released by its holder: the next oldest states the capacity
  EXPECT_EQ(build_lock_reports({invalid, waiting, holder})[0].capacity, 2);
  EXPECT_EQ(build_lock_reports({holder})[0].capacity, 1) << "no claim states one: a lock of one slot";
}

TEST(StatusReport, AgesForPeople) {
  EXPECT_EQ(format_age(Millis(45'000)), "45s");
  EXPECT_EQ(format_age(Millis(192'000)), "3m12s");
  EXPECT_EQ(format_age(Millis(120'000)), "2m");
  EXPECT_EQ(format_age(Millis(7'500'000)), "2h5m");
  EXPECT_EQ(format_age(Millis(-5)), "0s");
}

}  // namespace
}  // namespace eslease::cli
