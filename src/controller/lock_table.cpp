#include "controller/lock_table.h"

#include <algorithm>

namespace eslease::controller {

void LockEntry::read(std::optional<lock::LockState> document, MonoTime answered_at) {
  const bool same_version = document_ && document && document_->version == document->version;
  if (!same_version) {
    std::optional<lock::Sighting> previous;
    if (document_) previous = lock::Sighting{*document_, expires_at_};
    expires_at_ = document ? lock::sight(previous, *document, answered_at).expires_at : MonoTime{};
    if (renewing_ && (!document || !grant_ || !lock::same_grant(document->doc, grant_->state.doc))) {
      renewing_ = false;  // someone else's document replaced our grant
      grant_.reset();
    }
    if (!document || (document_ && document->doc.acquired_at != document_->doc.acquired_at)) revoked_.reset();
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

void LockEntry::hold(const lock::Grant& grant, MonoTime now) {
  const bool new_grant = !grant_ || grant_->state.token != grant.state.token;
  grant_ = grant;
  document_ = grant.state;
  known_ = true;
  malformed_.clear();
  renewing_ = true;
  if (new_grant) revoked_.reset();
  expires_at_ = grant.valid_until;
  // A third of the way in, so two failed attempts still leave time before expiry.
  next_renewal_ = now + Millis(grant.state.doc.ttl_millis) / 3;
}

void LockEntry::adopted(MonoTime now) {
  grant_ = lock::Grant{*document_, expires_at_};
  next_renewal_ = now;
  renewing_ = true;
}

void LockEntry::revoke(api::Reason why, std::optional<MonoTime> hand_over_at) {
  renewing_ = false;
  revoked_ = why;
  if (hand_over_at) expires_at_ = std::max(expires_at_, *hand_over_at);
}

void LockEntry::released(MonoTime now) {
  renewing_ = false;
  grant_.reset();
  read(std::nullopt, now);
}

void LockEntry::lost() {
  renewing_ = false;
  grant_.reset();
  known_ = false;
}

bool LockEntry::renewal_not_confirmed(const std::optional<lock::LockState>& still_ours, MonoTime now,
                                      MonoTime retry_at) {
  if (still_ours && !(still_ours->version == grant_->state.version)) {
    read(*still_ours, now);
    grant_->state = *still_ours;
  }
  if (now < grant_->valid_until) {
    next_renewal_ = retry_at;
    return false;
  }
  // Not confirmed in time: the holder has stopped; the grant is over.
  revoke(api::Reason::kRenewalFailed);
  expires_at_ = std::max(expires_at_, grant_->valid_until);
  return true;
}

struct LockTable::Slot {
  explicit Slot(const lock::LockKey& key) : entry(key) {}
  std::mutex mutex;
  LockEntry entry;
};

LockTable::LockTable() = default;
LockTable::~LockTable() = default;

LockTable::Handle LockTable::lock(const lock::LockKey& key) {
  Slot* slot;
  {
    std::lock_guard guard(mutex_);
    auto& owned = slots_[key.id()];
    if (!owned) owned = std::make_unique<Slot>(key);
    slot = owned.get();
  }
  return Handle(slot->entry, std::unique_lock(slot->mutex));
}

std::optional<LockTable::Handle> LockTable::try_lock(const std::string& lock_id) {
  Slot* slot;
  {
    std::lock_guard guard(mutex_);
    auto it = slots_.find(lock_id);
    if (it == slots_.end()) return std::nullopt;
    slot = it->second.get();
  }
  std::unique_lock lock(slot->mutex, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return Handle(slot->entry, std::move(lock));
}

std::vector<std::string> LockTable::renewing_ids() const {
  std::lock_guard guard(mutex_);
  std::vector<std::string> out;
  for (const auto& [id, slot] : slots_)
    if (slot->entry.renewing()) out.push_back(id);
  return out;
}

}  // namespace eslease::controller
