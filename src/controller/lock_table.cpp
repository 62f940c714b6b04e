#include "controller/lock_table.h"

#include <algorithm>
#include <utility>

namespace eslease::controller {

void LockEntry::read(std::optional<lock::LockState> document, MonoTime answered_at) {
  const bool same_version = document_ && document && document_->version == document->version;
  if (!same_version) {
    std::optional<lock::Sighting> previous;
    if (document_) previous = lock::Sighting{*document_, expires_at_};
    expires_at_ = document ? lock::sight(previous, *document, answered_at).expires_at : MonoTime{};
    if (renewing_ && (!document || !held_ || !lock::same_grant(document->doc, held_->state.doc))) {
      renewing_ = false;  // someone else's document replaced our grant
      held_.reset();
    }
    if (!document || (document_ && document->doc.acquired_at != document_->doc.acquired_at)) {
      revoked_.reset();
      end_counted_ = false;
    }
  }
  document_ = std::move(document);
  known_ = true;
  malformed_.clear();
}

void LockEntry::read_malformed(std::string problem) {
  document_.reset();
  known_ = true;
  malformed_ = std::move(problem);
}

void LockEntry::read_answer(lock::DocumentRead answer, MonoTime answered_at) {
  if (answer.ok()) {
    read(std::move(*answer), answered_at);
  } else {
    read_malformed(answer.error().message);
  }
}

void LockEntry::hold(lock::HeldDocument held) {
  const bool new_grant = !held_ || held_->state.token != held.state.token;
  expires_at_ = held.valid_until;
  held_ = std::move(held);
  document_ = held_->state;
  known_ = true;
  malformed_.clear();
  renewing_ = true;
  if (new_grant) {
    revoked_.reset();
    end_counted_ = false;
  }
}

bool LockEntry::forgettable() const {
  return known_ && !document_ && malformed_.empty() && !renewing_ && !held_ && !revoked_;
}

void LockEntry::adopted(std::int64_t grant_token) {
  held_ = lock::HeldDocument{key_, *document_, expires_at_};
  held_->state.token = grant_token;  // what its renewals write to the document
  renewing_ = true;
}

void LockEntry::ended() {
  renewing_ = false;
  held_.reset();
}

void LockEntry::revoke(api::Reason why, std::optional<MonoTime> hand_over_at) {
  renewing_ = false;
  const bool first = !revoked_;
  revoked_ = why;
  if (!hand_over_at) return;
  // The session says when the validity published to the holder ends. A renewal of the
  // documents after the renewal that listing followed (a tick's _bulk just before it) was
  // never shown to the holder, so it does not hold the hand-over back; a later revocation
  // never brings it forward.
  expires_at_ = first ? *hand_over_at : std::max(expires_at_, *hand_over_at);
}

void LockEntry::released(MonoTime now) {
  ended();
  read(std::nullopt, now);
}

void LockEntry::lost() {
  ended();
  known_ = false;
}

bool LockEntry::renewal_not_confirmed(const std::optional<lock::LockState>& still_ours, MonoTime now) {
  if (still_ours && !(still_ours->version == held_->state.version)) {
    read(*still_ours, now);
    held_->state = *still_ours;
  }
  if (now < held_->valid_until) return false;
  // Not confirmed in time: the holder has stopped; the grant is over.
  revoke(api::Reason::kRenewalFailed);
  expires_at_ = std::max(expires_at_, held_->valid_until);
  return true;
}

struct LockTable::Slot {
  Slot(const lock::LockKey& key, std::int64_t slot) : entry(key, slot) {}
  std::mutex mutex;
  LockEntry entry;
  int users = 0;  // handles held or waited for; under the table's mutex
};

LockTable::Handle::Handle(Handle&& other) noexcept
    : table_(std::exchange(other.table_, nullptr)),
      slot_(std::exchange(other.slot_, nullptr)),
      lock_(std::move(other.lock_)),
      drop_(other.drop_) {}

LockTable::Handle::~Handle() {
  if (table_) table_->release(*this);
}

LockEntry& LockTable::Handle::operator*() const {
  return slot_->entry;
}

LockTable::LockTable() = default;
LockTable::~LockTable() = default;

LockTable::Handle LockTable::lock(const lock::LockKey& key, std::int64_t lock_slot) {
  Slot* slot;
  {
    std::lock_guard guard(mutex_);
    auto& owned = slots_[lock::slot_document_id(key.id(), lock_slot)];
    if (!owned) owned = std::make_unique<Slot>(key, lock_slot);
    slot = owned.get();
    ++slot->users;  // from now on the slot stays until this handle is released
  }
  return Handle(*this, *slot, std::unique_lock(slot->mutex));
}

std::vector<std::vector<LockTable::Handle>> LockTable::lock_all(const std::vector<lock::LockKey>& keys,
                                                                const std::vector<std::int64_t>& slots) {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::int64_t>>> order;
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (std::int64_t k = 0; k < slots[i]; ++k)
      order.push_back({lock::slot_document_id(keys[i].id(), k), {i, k}});
  std::sort(order.begin(), order.end());
  std::vector<std::vector<std::optional<Handle>>> taken(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) taken[i].resize(static_cast<std::size_t>(slots[i]));
  for (const auto& [id, where] : order)
    taken[where.first][static_cast<std::size_t>(where.second)].emplace(lock(keys[where.first], where.second));
  std::vector<std::vector<Handle>> handles(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    handles[i].reserve(taken[i].size());
    for (auto& handle : taken[i]) handles[i].push_back(std::move(*handle));
  }
  return handles;
}

std::vector<LockTable::Handle> LockTable::lock_existing_all(std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  std::vector<Handle> handles;
  handles.reserve(ids.size());
  for (const std::string& id : ids)
    if (std::optional<Handle> entry = lock_existing(id)) handles.push_back(std::move(*entry));
  return handles;
}

std::optional<LockTable::Handle> LockTable::lock_existing(const std::string& lock_id) {
  Slot* slot;
  {
    std::lock_guard guard(mutex_);
    auto it = slots_.find(lock_id);
    if (it == slots_.end()) return std::nullopt;
    slot = it->second.get();
    ++slot->users;
  }
  return Handle(*this, *slot, std::unique_lock(slot->mutex));
}

std::optional<LockTable::Handle> LockTable::try_lock(const std::string& lock_id) {
  std::lock_guard guard(mutex_);
  auto it = slots_.find(lock_id);
  if (it == slots_.end()) return std::nullopt;
  Slot& slot = *it->second;
  std::unique_lock lock(slot.mutex, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  ++slot.users;
  return Handle(*this, slot, std::move(lock));
}

void LockTable::release(Handle& handle) {
  Slot& slot = *handle.slot_;
  std::lock_guard guard(mutex_);
  const bool drop = handle.drop_ && slot.users == 1 && slot.entry.forgettable();
  --slot.users;
  handle.lock_.unlock();
  // Nobody else holds or waits for the slot (they would have counted themselves under the
  // table's mutex), so it can go.
  if (drop) slots_.erase(slots_.find(slot.entry.id()));
}

std::int64_t LockTable::slots_in_use(const std::string& lock_id) const {
  std::lock_guard guard(mutex_);
  std::int64_t in_use = slots_.contains(lock_id) ? 1 : 0;
  const std::string prefix = lock_id + "#";  // slot documents above 0 (lock::slot_document_id)
  for (auto it = slots_.lower_bound(prefix); it != slots_.end() && it->first.starts_with(prefix); ++it)
    in_use = std::max(in_use, it->second->entry.slot() + 1);
  return in_use;
}

std::size_t LockTable::size() const {
  std::lock_guard guard(mutex_);
  return slots_.size();
}

std::vector<std::string> LockTable::renewing_ids(const std::string& ns) const {
  const std::string prefix = ns + "/";  // lock ids are ns/name, in order: the namespace's are together
  std::lock_guard guard(mutex_);
  std::vector<std::string> out;
  for (auto it = slots_.lower_bound(prefix); it != slots_.end() && it->first.starts_with(prefix); ++it)
    if (it->second->entry.renewing()) out.push_back(it->first);
  return out;
}

}  // namespace eslease::controller
