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

// The group's slots as read (`docs`: one vector per lock of the group, in order), and its first
// grant if it falls on free slots alone; anything else is left to the group's reconcile.
std::optional<Reconciler::PrimeGrant> Reconciler::plan_prime_grant(const Group& group,
                                                                   std::vector<lock::DocumentRead>* docs,
                                                                   MonoTime answered) {
  const std::vector<std::int64_t> taken = slots_to_take(group);
  Entries entries = table_.lock_all(group.keys, taken);
  for (std::size_t i = 0; i < entries.size(); ++i)
    for (std::size_t k = 0; k < entries[i].size() && k < docs[i].size(); ++k)
      if (!entries[i][k]->known()) entries[i][k]->read_answer(std::move(docs[i][k]), answered);
  // A grant reaching beyond the group, or a capacity larger than read: its own reconcile.
  if (!unseen_locks(group, entries).empty()) return std::nullopt;
  for (std::size_t i = 0; i < entries.size(); ++i)
    for (const LockTable::Handle& entry : entries[i])
      if (entry->document() && entry->document()->doc.capacity > taken[i]) return std::nullopt;
  LockWorld world = gather(group, entries, {});
  Decision decision = decide(world);
  if (decision.action != Action::kGrant) return std::nullopt;
  const std::vector<LockEntry*> taking = entries_of(group, entries, decision.grant.slots);
  const bool free =
      taking.size() == decision.grant.slots.size() &&
      std::none_of(taking.begin(), taking.end(), [](const LockEntry* e) { return e->document(); });
  if (!free) return std::nullopt;
  lock::GrantRequest request = grant_request(taking, decision, world);
  return PrimeGrant{&group, std::move(decision), world.now, std::move(request)};
}

void Reconciler::write_prime_grants(std::vector<PrimeGrant>& plans) {
  std::vector<lock::GrantRequest> requests;
  requests.reserve(plans.size());
  for (PrimeGrant& plan : plans) requests.push_back(std::move(plan.request));
  std::vector<Result<lock::GrantOutcome>> outcomes = store_.grant(requests);
  for (std::size_t n = 0; n < plans.size() && n < outcomes.size(); ++n) {
    const PrimeGrant& plan = plans[n];
    Entries entries = table_.lock_all(plan.group->keys, slots_to_take(*plan.group));
    const std::vector<LockEntry*> taking = entries_of(*plan.group, entries, plan.decision.grant.slots);
    if (!outcomes[n].ok()) {
      note_error(outcomes[n].error());
      for (LockEntry* entry : taking) entry->outcome_unknown();
      continue;
    }
    if (record_grant(taking, *outcomes[n], plan.decision))
      announce_grant(plan.group->keys.front().id(), outcomes[n]->grant->token, plan.decision,
                     plan.group->keys.front().ns(), plan.decided_at, false);
  }
}

bool Reconciler::prime_batch(std::vector<Group>& batch) {
  // One read of every slot of every lock of the batch.
  std::vector<lock::SlotRange> ranges;
  for (const Group& group : batch) {
    const std::vector<std::int64_t> slots = slots_to_take(group);
    for (std::size_t i = 0; i < group.keys.size(); ++i)
      ranges.push_back(lock::SlotRange{group.keys[i], slots[i]});
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
  std::vector<PrimeGrant> plans;
  std::size_t at = 0;
  for (Group& group : batch) {
    if (at + group.keys.size() > read->size()) break;
    if (auto plan = plan_prime_grant(group, &(*read)[at], answered)) plans.push_back(std::move(*plan));
    at += group.keys.size();
    // Nothing reads a group's claims once it is planned: their copies go before the write.
    std::vector<LeaseRecord>().swap(group.claims);
  }
  if (!plans.empty()) write_prime_grants(plans);
  return true;
}

void Reconciler::prime(const std::vector<std::string>& lock_ids) {
  std::set<std::string> covered;
  std::vector<Group> batch;
  std::size_t documents = 0;
  for (const std::string& id : lock_ids) {
    if (covered.contains(id)) continue;
    auto key = lock::parse_lock_id(id);
    if (!key.ok()) continue;
    Group group = group_of(*key);
    for (const lock::LockKey& k : group.keys) covered.insert(k.id());
    std::size_t slots = 0;
    for (std::int64_t s : slots_to_take(group)) slots += static_cast<std::size_t>(s);
    if (!batch.empty() && documents + slots > kPrimeBatchDocuments) {
      if (!prime_batch(batch)) return;
      batch.clear();
      documents = 0;
    }
    documents += slots;
    batch.push_back(std::move(group));
  }
  if (!batch.empty()) prime_batch(batch);
}

}  // namespace eslease::controller
