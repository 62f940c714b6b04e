// What a writer remembers of its own write to one object until its informer cache shows it.
// The answer to a write can come before the watch event, and a reconcile that reads the older
// cached version would make the same write again; so the cache is overlaid with our write
// until it shows what we wrote, the watch delivers the version our write produced (a Lease:
// its readers overlay it as they copy it from the cache) or one after it (a pod: a reconcile
// copies it earlier, see OwnWriteMark::superseded_by), or the cache has shown another version
// than the one the write was decided on for kOwnWriteMemory.
// A watch delivers our writes within milliseconds of that other version: a memory that old
// belongs to a version the cache skipped (a re-list) or overtook before the write's answer
// came back, and must not hide for ever what another writer (a second replica, a hand edit)
// put there since. A cache that simply lags still shows the old version and keeps the memory,
// so a slow watch never causes the same write twice. client-go's controller expectations
// expire the same way.
#pragma once

#include <string>

#include "common/clock.h"

namespace eslease::controller {

inline constexpr Millis kOwnWriteMemory{5000};

struct OwnWriteMark {
  std::string base;     // the cached resourceVersion the write was decided on
  std::string version;  // the resourceVersion our write produced
  MonoTime at{};        // when its answer came

  bool delivered = false;  // the informer has delivered `version`

  bool expired(const std::string& cached_version, MonoTime now) const {
    return cached_version != base && now - at >= kOwnWriteMemory;
  }
  // The informer delivered `delivered_version` of the object: true when the memory can go.
  // The version our write produced does not end it: a reconcile may have copied the object
  // from the cache just before, and without the memory would decide on that older version
  // (and the write conditioned on ours would go through). A version after ours, or a reader
  // that finds the cache showing what we wrote, ends it.
  bool superseded_by(const std::string& delivered_version) {
    if (delivered_version == version) {
      delivered = true;
      return false;
    }
    return delivered;
  }
};

}  // namespace eslease::controller
