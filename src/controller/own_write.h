// What a writer remembers of its own write to one object until its informer cache shows it.
// The answer to a write can come before the watch event, and a reconcile that reads the older
// cached version would make the same write again; so the cache is overlaid with our write
// until it shows what we wrote, the watch delivers the version our write produced, or the
// memory is kOwnWriteMemory old. A watch delivers our writes within milliseconds: an older
// memory belongs to a version the cache skipped (a re-list) or overtook before the write's
// answer came back, and must not hide forever what another writer (a second replica, a hand
// edit) put there since. client-go's controller expectations expire the same way.
#pragma once

#include <string>

#include "common/clock.h"

namespace eslease::controller {

inline constexpr Millis kOwnWriteMemory{5000};

struct OwnWriteMark {
  std::string version;  // the resourceVersion our write produced
  MonoTime at{};        // when its answer came

  bool expired(MonoTime now) const { return now - at >= kOwnWriteMemory; }
};

}  // namespace eslease::controller
