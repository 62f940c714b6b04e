// Start-up: the lock documents of every claimed lock read in batches, and the free locks
// whose next claim is clear granted in batches, before the reconciles one by one.
#include "common/log.h"
#include "controller/claim_queue.h"
#include "controller/reconciler.h"

namespace eslease::controller {

void Reconciler::prime(const std::vector<std::string>& lock_ids) {
  std::vector<lock::LockKey> keys;
  for (const std::string& id : lock_ids) {
    if (auto key = lock::parse_lock_id(id); key.ok()) keys.push_back(*key);
  }
  auto read = store_.get_many(keys);
  if (!read.ok()) {
    note_error(read.error());
    log::warn("start-up read of lock documents failed; reading one by one",
              {{"error", read.error().describe()}});
    return;
  }
  const MonoTime answered = clock_.monotonic();
  backend_available_.store(true);
  std::vector<std::pair<lock::LockKey, lock::Grantee>> grants;
  std::vector<Decision> planned;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    LockTable::Handle entry = table_.lock(keys[i]);
    const auto& one = (*read)[i];
    if (one.ok()) {
      entry->read(*one, answered);
    } else if (one.error().code == ErrorCode::kProtocol) {
      entry->read_malformed(one.error().message);
      continue;
    } else {
      continue;
    }
    LockWorld world = gather(*entry, std::nullopt);
    // A lock of capacity above 1 or claimed by a set is granted by its own reconcile.
    if (any_lock_set(world.claims) || lock_capacity(world.claims) > 1 ||
        table_.slots_in_use(keys[i].id()) > 1)
      continue;
    Decision decision = decide(world);
    if (decision.action != Action::kAcquire) continue;
    grants.emplace_back(keys[i], grantee(world, decision.grant));
    planned.push_back(std::move(decision));
  }
  if (grants.empty()) return;
  auto outcomes = store_.acquire_many(grants);
  for (std::size_t i = 0; i < planned.size() && i < outcomes.size(); ++i) {
    LockTable::Handle entry = table_.lock(grants[i].first);
    if (!outcomes[i].ok()) {
      note_error(outcomes[i].error());
      entry->outcome_unknown();
      continue;
    }
    record_grant(*entry, *outcomes[i], planned[i], gather(*entry, std::nullopt), "acquire");
  }
}

}  // namespace eslease::controller
