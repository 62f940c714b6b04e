// Start-up: the slot documents of every claimed lock read in batches, and the first grant of
// every lock (or group of locks sets link) whose grant falls on free slots made in batches,
// before the reconciles one by one. A batch covers this many slot documents: one _mget reads
// them and one _bulk grants them.
#include <set>

#include "common/log.h"
#include "controller/reconciler.h"

namespace eslease::controller {
namespace {

constexpr std::size_t kPrimeBatchDocuments = 1000;

}  // namespace

void Reconciler::prime(const std::vector<std::string>& lock_ids) {
  std::set<std::string> covered;
  std::vector<Group> batch;
  std::size_t documents = 0;
  auto slots_of = [&](const Group& group) {
    std::vector<std::int64_t> slots;
    for (std::size_t i = 0; i < group.keys.size(); ++i)
      slots.push_back(std::max(group.shapes[i].capacity, table_.slots_in_use(group.keys[i].id())));
    return slots;
  };
  auto prime_batch = [&]() {
    // One read of every slot of every lock of the batch.
    std::vector<lock::SlotRange> ranges;
    for (const Group& group : batch) {
      const std::vector<std::int64_t> slots = slots_of(group);
      for (std::size_t i = 0; i < group.keys.size(); ++i) ranges.push_back(lock::SlotRange{group.keys[i], slots[i]});
    }
    auto read = store_.read_slots(ranges);
    if (!read.ok()) {
      note_error(read.error());
      log::warn("start-up read of lock documents failed; each lock is read by its reconcile",
                {{"error", read.error().describe()}});
      return false;
    }
    backend_available_.store(true);
    const MonoTime answered = clock_.monotonic();
    // Decide each group; keep the grants that only create documents.
    std::vector<lock::GrantRequest> requests;
    std::vector<std::pair<const Group*, Decision>> planned;
    std::vector<LockWorld> worlds;
    std::size_t at = 0;
    for (const Group& group : batch) {
      Entries entries = take_slots(group, slots_of(group));
      for (auto& slots : entries) {
        auto& docs = (*read)[at++];
        for (std::size_t k = 0; k < slots.size() && k < docs.size(); ++k) {
          if (slots[k]->known()) continue;
          if (docs[k].ok()) {
            slots[k]->read(std::move(*docs[k]), answered);
          } else {
            slots[k]->read_malformed(docs[k].error().message);
          }
        }
      }
      // A grant reaching beyond the group, or a capacity larger than read: its own reconcile.
      if (!unseen_locks(group, entries).empty()) continue;
      const std::vector<std::int64_t> taken = slots_of(group);
      bool larger = false;
      for (std::size_t i = 0; i < entries.size(); ++i)
        for (const LockTable::Handle& entry : entries[i])
          larger = larger || (entry->document() && entry->document()->doc.capacity > taken[i]);
      if (larger) continue;
      LockWorld world = gather(group, entries, {});
      Decision decision = decide(world);
      if (decision.action != Action::kGrant) continue;
      const std::vector<LockEntry*> taking = entries_of(group, entries, decision.grant.slots);
      const bool free = taking.size() == decision.grant.slots.size() &&
                        std::none_of(taking.begin(), taking.end(), [](const LockEntry* e) { return e->document(); });
      if (!free) continue;
      requests.push_back(grant_request(taking, decision, world));
      planned.emplace_back(&group, std::move(decision));
      worlds.push_back(std::move(world));
    }
    if (requests.empty()) return true;
    std::vector<Result<lock::GrantOutcome>> outcomes = store_.grant(requests);
    for (std::size_t n = 0; n < planned.size() && n < outcomes.size(); ++n) {
      const Group& group = *planned[n].first;
      const Decision& decision = planned[n].second;
      Entries entries = take_slots(group, slots_of(group));
      const std::vector<LockEntry*> taking = entries_of(group, entries, decision.grant.slots);
      if (!outcomes[n].ok()) {
        note_error(outcomes[n].error());
        for (LockEntry* entry : taking) entry->outcome_unknown();
        continue;
      }
      if (record_grant(taking, *outcomes[n], decision, worlds[n]))
        announce_grant(group.keys.front().id(), outcomes[n]->grant->token, decision, worlds[n], false);
    }
    return true;
  };
  for (const std::string& id : lock_ids) {
    if (covered.contains(id)) continue;
    auto key = lock::parse_lock_id(id);
    if (!key.ok()) continue;
    Group group = group_of(*key);
    for (const lock::LockKey& k : group.keys) covered.insert(k.id());
    std::size_t slots = 0;
    for (std::int64_t s : slots_of(group)) slots += static_cast<std::size_t>(s);
    if (!batch.empty() && documents + slots > kPrimeBatchDocuments) {
      if (!prime_batch()) return;
      batch.clear();
      documents = 0;
    }
    documents += slots;
    batch.push_back(std::move(group));
  }
  if (!batch.empty()) prime_batch();
}

}  // namespace eslease::controller
