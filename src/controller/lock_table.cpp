#include "controller/lock_table.h"

#include <algorithm>

namespace eslease::controller {

void LockEntry::observe(std::optional<lock::LockState> read, MonoTime answered_at) {
  const bool same_version = state && read && state->version == read->version;
  if (!same_version) {
    const MonoTime read_expiry = read ? answered_at + Millis(read->doc.ttl_millis) : MonoTime{};
    // A later version of the same grant never brings its hand-over forward: every expiry it
    // was written with may have been shown to its holder.
    const bool same_grant = state && read && lock::same_grant(read->doc, state->doc);
    expires_at = same_grant ? std::max(expires_at, read_expiry) : read_expiry;
    if (active && (!read || !grant || !lock::same_grant(read->doc, grant->state.doc))) {
      // Someone else's document replaced our grant: we no longer hold it.
      active = false;
      grant.reset();
    }
    if (!read || (state && read->doc.acquired_at != state->doc.acquired_at)) revoked_reason.clear();
  }
  state = std::move(read);
  known = true;
  malformed.clear();
}

void LockEntry::hold(const lock::Grant& g, MonoTime now) {
  const bool new_grant = !grant || grant->state.token != g.state.token;
  grant = g;
  state = g.state;
  known = true;
  malformed.clear();
  active = true;
  if (new_grant) revoked_reason.clear();
  expires_at = g.valid_until;
  // Renew a third of the way in, so two failed attempts still leave time before expiry.
  next_renewal = now + Millis(g.state.doc.ttl_millis) / 3;
}

void LockEntry::drop() {
  active = false;
  grant.reset();
  known = false;
}

LockEntry& LockTable::entry(const lock::LockKey& key) {
  std::lock_guard lock(mutex_);
  auto& slot = entries_[key.id()];
  if (!slot) {
    slot = std::make_unique<LockEntry>();
    slot->key = key;
  }
  return *slot;
}

LockEntry* LockTable::find(const std::string& lock_id) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(lock_id);
  return it == entries_.end() ? nullptr : it->second.get();
}

std::vector<std::string> LockTable::active_ids() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  // `active` is read without the entry's lock: a stale answer only delays a renewal by one tick.
  for (const auto& [id, entry] : entries_)
    if (entry->active) out.push_back(id);
  return out;
}

}  // namespace eslease::controller
