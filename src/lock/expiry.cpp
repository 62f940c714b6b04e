#include "lock/expiry.h"

#include <algorithm>

namespace eslease::lock {

Sighting sight(const std::optional<Sighting>& previous, LockState read, MonoTime answered_at) {
  if (previous && previous->state.version == read.version)
    return Sighting{std::move(read), previous->expires_at};
  MonoTime expires_at = answered_at + Millis(read.doc.ttl_millis);
  if (previous && same_grant(read.doc, previous->state.doc))
    expires_at = std::max(expires_at, previous->expires_at);
  return Sighting{std::move(read), expires_at};
}

}  // namespace eslease::lock
