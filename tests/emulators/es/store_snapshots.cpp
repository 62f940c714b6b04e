// Test-only snapshots of one index, for tests that need an index "restored from a
// snapshot": its documents and sequence numbers come back as they were when it was taken.
#include "emulators/es/store.h"

namespace eslease::esemu {

bool Store::snapshot(const std::string& name, const std::string& snapshot) {
  std::lock_guard lock(mutex_);
  auto it = indices_.find(name);
  if (it == indices_.end()) return false;
  snapshots_[snapshot] = it->second;
  return true;
}

std::optional<Index> Store::restore(const std::string& snapshot) {
  std::lock_guard lock(mutex_);
  auto taken = snapshots_.find(snapshot);
  if (taken == snapshots_.end()) return std::nullopt;
  Index restored = taken->second;
  // A restored shard recovers from the snapshot's files: realtime and search see the same
  // documents, and the in-memory delete tombstones of the old index are gone.
  std::erase_if(restored.docs, [](const auto& entry) { return entry.second.deleted; });
  restored.searchable = restored.docs;
  restored.dirty.clear();
  if (auto current = indices_.find(restored.name); current != indices_.end()) {
    // RestoreService over a closed index: its UUID stays, its primary term never goes back.
    restored.uuid = current->second.uuid;
    restored.primary_term = std::max(restored.primary_term, current->second.primary_term);
  } else {
    restored.uuid = random_base64url(22);
  }
  restored.settings["index.uuid"] = restored.uuid;
  indices_[restored.name] = restored;
  return restored;
}

}  // namespace eslease::esemu
