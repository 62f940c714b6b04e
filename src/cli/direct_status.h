// What `eslease status [LOCK]` shows in direct mode, the same for every lock shape: each lock's
// holders against its capacity, each with its access and slots. A holder is a grant, however
// many of the lock's slot documents it holds: a writer on a lock of capacity 2 is one holder
// of both slots, "(1/2)", as in Kubernetes mode, where it is one Lease.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lock/document.h"

namespace eslease::cli {

struct LockHolders {
  std::string lock;           // namespace/name
  std::int64_t capacity = 1;  // as its documents state it (the largest, should they disagree)
  // Each grant on the lock: its documents on this lock, in slot order.
  std::vector<std::vector<lock::LockState>> holders;
};

// Documents grouped by the grant that wrote them, in the order of each grant's first document.
std::vector<std::vector<lock::LockState>> by_grant(const std::vector<lock::LockState>& docs);

// Every lock `docs` (documents of any locks, in lock and slot order) hold.
std::vector<LockHolders> lock_holders(const std::vector<lock::LockState>& docs);

void print_lock_holders(std::ostream& out, const std::vector<LockHolders>& locks);
// {"locks": [{"namespace", "lock", "capacity", "holders": [...]}]}, as Kubernetes mode's.
nlohmann::json lock_holders_json(const std::vector<LockHolders>& locks);

}  // namespace eslease::cli
