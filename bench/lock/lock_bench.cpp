// lock-bench: throughput of acquire/renew/release cycles and the number of Elasticsearch
// requests each lock operation costs, over the in-process es-emulator, or a real OpenSearch
// node it starts (--backend opensearch: tests/engines/opensearch/run.sh) or finds (--es URL).
// A real server is reached through the in-process fault proxy, which counts the requests
// (one loopback hop more in every latency).
//
//   lock-bench [--backend emulator|opensearch | --es URL] [--cycles 2000] [--held 10000]
// The lock_set section: a set of 32 locks granted, and handed over, in one _bulk each.
// Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "emulators/es/es_emulator.h"
#include "es/http_document_api.h"
#include "lock/lock_store.h"
#include "lock/slots.h"
#include "support/engine_process.h"

namespace {

using namespace eslease;
using nlohmann::json;
using Stopwatch = std::chrono::steady_clock;

class Stats {
 public:
  explicit Stats(std::string url) : url_(std::move(url)), transport_(http::make_transport()) {}
  // Total requests served so far, or -1 without the emulator's admin endpoint.
  long long total() {
    http::Request request;
    request.url = url_ + "/_emulator/stats";
    auto r = transport_->send(request);
    if (!r.ok() || r->status != 200) return -1;
    auto body = json::parse(r->body, nullptr, false);
    if (!body.is_object() || !body.contains("total") || !body["total"].is_number_integer()) return -1;
    return body["total"].get<long long>();
  }

 private:
  std::string url_;
  std::unique_ptr<http::Transport> transport_;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<std::size_t>(p * static_cast<double>(values.size())))];
}

double ms_since(Stopwatch::time_point start) {
  return std::chrono::duration<double, std::milli>(Stopwatch::now() - start).count();
}

lock::Grantee grantee(const std::string& holder, int n) {
  lock::Grantee c;
  c.holder = holder;
  c.lease_uid = holder + "-" + std::to_string(n);
  c.ttl = Millis(30000);
  return c;
}

// Slot 0 of `key`: a create, or a write over exactly `replaces` (a takeover).
lock::GrantRequest one_lock(const lock::LockKey& key, const lock::Grantee& grantee,
                            std::optional<lock::LockState> replaces = std::nullopt) {
  return lock::GrantRequest{
      {lock::SlotWrite{key, 0, std::move(replaces)}}, grantee, 1, lock::Access::kExclusive};
}

// The grant `request` makes, if any.
std::optional<lock::HeldGrant> granted(lock::LockStore& store, const lock::GrantRequest& request) {
  auto outcome = lock::grant_one(store, request);
  if (!outcome.ok()) return std::nullopt;
  return outcome->grant;
}

json per_request(long long before, long long after, int operations) {
  if (before < 0 || after < 0) return nullptr;
  return static_cast<double>(after - before) / operations;
}

int fail(const std::string& what) {
  std::cerr << "lock-bench: " << what << "\n";
  return 1;
}

// A lock set of 32 locks: the requests its grant costs, and a hand-over to the next claim,
// after a release and after the holder's death (its documents replaced at the versions read).
json set_scenario(lock::LockStore& store, Stats& stats) {
  constexpr int kLocks = 32;
  std::vector<lock::LockKey> set;
  for (int i = 0; i < kLocks; ++i) set.push_back(*lock::make_lock_key("bench", "set-" + std::to_string(i)));
  const auto request = [&](const std::string& holder) {
    return lock::GrantRequest{lock::writes_if_free(set, lock::ClaimShape{}), grantee(holder, 0), 1,
                              lock::Access::kExclusive};
  };
  long long before = stats.total();
  const auto t = Stopwatch::now();
  auto first = granted(store, request("set-a"));
  const double grant_ms = ms_since(t);
  if (!first) return {{"error", "the set was not granted"}};
  const json grant_requests = per_request(before, stats.total(), 1);

  before = stats.total();
  auto released = store.release(*first, lock::ReleaseScope::kGrant);
  auto second = granted(store, request("set-b"));
  if (!released.ok() || !second) return {{"error", "the set was not handed over"}};
  const json release_handover = per_request(before, stats.total(), 1);

  // The holder died: the next claim reads the set's documents and replaces them in one grant.
  before = stats.total();
  std::vector<lock::SlotRange> slots;
  for (const lock::LockKey& key : set) slots.push_back(lock::SlotRange{key, 1});
  auto read = store.read_slots(slots);
  if (!read.ok()) return {{"error", "the set could not be read"}};
  lock::GrantRequest takeover = request("set-c");
  for (std::size_t i = 0; i < takeover.writes.size(); ++i) {
    if (!(*read)[i][0].ok()) return {{"error", "the set could not be read"}};
    takeover.writes[i].replaces = *(*read)[i][0];
  }
  auto third = granted(store, takeover);
  if (!third) return {{"error", "the set was not taken over"}};
  const json death_handover = per_request(before, stats.total(), 1);
  (void)store.release(*third, lock::ReleaseScope::kGrant);
  return {{"locks", kLocks},
          {"grant_ms", grant_ms},
          {"requests_to_grant", grant_requests},
          {"requests_to_hand_over_after_release", release_handover},
          {"requests_to_hand_over_after_death", death_handover}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string url;
  const char* backend_setting = std::getenv("ESLEASE_TEST_BACKEND");
  std::string backend = backend_setting != nullptr && *backend_setting ? backend_setting : "emulator";
  int cycles = 2000;
  int held_count = 10000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) {
      return fail("usage: lock-bench [--backend emulator|opensearch | --es URL] [--cycles N] [--held N]");
    }
    if (arg == "--es")
      url = argv[++i];
    else if (arg == "--backend")
      backend = argv[++i];
    else if (arg == "--cycles")
      cycles = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--held")
      held_count = std::max(1, std::atoi(argv[++i]));
    else
      return fail("unknown flag " + arg);
  }
  if (backend != "emulator" && backend != "opensearch") return fail("--backend takes emulator or opensearch");
  std::unique_ptr<testing::EngineProcess> engine;
  if (url.empty() && backend == "opensearch") {
    auto started = testing::EngineProcess::start(ESLEASE_OPENSEARCH_RUN_SH, "/tmp/lock-bench-opensearch.log");
    if (!started.ok()) return fail(started.error().describe());
    engine = std::move(*started);
    url = engine->url();
  }
  const std::string described = url.empty() ? "in-process es-emulator" : url + " through the fault proxy";
  // The emulator, or the fault proxy in front of the real server: either counts requests.
  esemu::EsEmulatorOptions server_options;
  server_options.upstream = url;
  auto emulator = std::make_unique<esemu::EsEmulator>(server_options);
  if (auto s = emulator->start(); !s.ok()) return fail(s.error().describe());
  url = emulator->url();
  es::ClientOptions options;
  options.hosts = {url};
  auto api = es::make_http_document_api(http::make_transport(), options, SystemClock::instance());
  if (!api.ok()) return fail(api.error().describe());
  lock::StoreOptions store_options;
  store_options.index = "eslease-bench-" +
                        std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000);
  auto made = lock::make_es_lock_store(**api, SystemClock::instance(), store_options);
  if (!made.ok()) return fail(made.error().describe());
  lock::LockStore& store = **made;
  if (auto s = store.prepare(); !s.ok()) return fail(s.error().describe());
  Stats stats(url);

  // 1. acquire -> renew -> release cycles on a few hot locks, one client.
  std::vector<double> acquire_ms, renew_ms, release_ms;
  const auto cycles_start = Stopwatch::now();
  for (int i = 0; i < cycles; ++i) {
    const auto key = *lock::make_lock_key("bench", "cycle-" + std::to_string(i % 16));
    auto t = Stopwatch::now();
    auto acquired = granted(store, one_lock(key, grantee("cycler", i)));
    acquire_ms.push_back(ms_since(t));
    if (!acquired) return fail("acquire failed in cycle " + std::to_string(i));
    t = Stopwatch::now();
    lock::GrantRenewal renewed = lock::renew_grant(store, *acquired, Millis(0));
    renew_ms.push_back(ms_since(t));
    if (renewed.result != lock::RenewalResult::kRenewed)
      return fail("renew failed in cycle " + std::to_string(i));
    t = Stopwatch::now();
    auto released = store.release(*renewed.grant, lock::ReleaseScope::kGrant);
    release_ms.push_back(ms_since(t));
    if (!released.ok()) return fail("release failed in cycle " + std::to_string(i));
  }
  const double cycles_seconds = ms_since(cycles_start) / 1000.0;

  // 2. Requests per operation.
  constexpr int kSample = 100;
  std::vector<lock::HeldGrant> grants;
  std::vector<lock::LockKey> keys;
  for (int i = 0; i < kSample; ++i)
    keys.push_back(*lock::make_lock_key("bench", "count-" + std::to_string(i)));
  long long before = stats.total();
  for (int i = 0; i < kSample; ++i) {
    auto r = granted(store, one_lock(keys[i], grantee("counter", i)));
    if (!r) return fail("acquire failed");
    grants.push_back(*r);
  }
  const json per_acquire = per_request(before, stats.total(), kSample);

  // Takeover when the caller knows the dead holder's version (the controller's case).
  before = stats.total();
  std::vector<lock::HeldGrant> taken;
  for (int i = 0; i < kSample; ++i) {
    auto r = granted(store, one_lock(keys[i], grantee("successor", i), grants[i].docs[0].state));
    if (!r) return fail("takeover failed");
    taken.push_back(*r);
  }
  const json per_takeover_known = per_request(before, stats.total(), kSample);

  // Takeover that must read the document first.
  before = stats.total();
  for (int i = 0; i < kSample; ++i) {
    auto current = lock::read_lock(store, keys[i]);
    if (!current.ok() || !*current) return fail("read failed");
    auto r = granted(store, one_lock(keys[i], grantee("third", i), **current));
    if (!r) return fail("takeover after read failed");
    taken[i] = *r;
  }
  const json per_takeover_read = per_request(before, stats.total(), kSample);

  before = stats.total();
  for (int i = 0; i < kSample; ++i) {
    auto r = store.release(taken[i], lock::ReleaseScope::kGrant);
    if (!r.ok() || *r != lock::ReleaseOutcome::kReleased) return fail("release failed");
  }
  const json per_release = per_request(before, stats.total(), kSample);

  // 3. Renewing many held locks in one tick.
  std::vector<lock::Renewal> held;
  held.reserve(held_count);
  for (int i = 0; i < held_count; ++i) {
    auto key = *lock::make_lock_key("bench", "held-" + std::to_string(i));
    auto r = granted(store, one_lock(key, grantee("holder", i)));
    if (!r) return fail("acquire of held lock failed");
    held.push_back(lock::Renewal{r->docs[0], Millis(0), std::nullopt});
  }
  before = stats.total();
  const auto renew_start = Stopwatch::now();
  auto renewed = store.renew_all(held);
  const double renew_all_ms = ms_since(renew_start);
  const long long after = stats.total();
  const auto ok = std::count_if(renewed.begin(), renewed.end(), [](const lock::BatchRenewal& r) {
    return r.result == lock::RenewalResult::kRenewed;
  });

  const json lock_set = set_scenario(store, stats);

  json out{{"backend", described},
           {"cycles",
            {{"count", cycles},
             {"seconds", cycles_seconds},
             {"ops_per_second", 3.0 * cycles / cycles_seconds},
             {"cycles_per_second", cycles / cycles_seconds},
             {"acquire_ms", {{"p50", percentile(acquire_ms, 0.5)}, {"p99", percentile(acquire_ms, 0.99)}}},
             {"renew_ms", {{"p50", percentile(renew_ms, 0.5)}, {"p99", percentile(renew_ms, 0.99)}}},
             {"release_ms", {{"p50", percentile(release_ms, 0.5)}, {"p99", percentile(release_ms, 0.99)}}}}},
           {"requests_per_acquire", per_acquire},
           {"requests_per_release", per_release},
           {"requests_per_takeover_known_version", per_takeover_known},
           {"requests_per_takeover_with_read", per_takeover_read},
           {"renew_all",
            {{"held_locks", held_count},
             {"renewed", ok},
             {"requests", before < 0 || after < 0 ? json(nullptr) : json(after - before)},
             {"milliseconds", renew_all_ms}}},
           {"lock_set", lock_set}};
  std::cout << out.dump(2) << "\n";
  emulator->stop();
  return ok == held_count && !lock_set.contains("error") ? 0 : 1;
}
