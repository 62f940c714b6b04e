// What the leading controller knows about each lock document: the last version it read or
// wrote, when that version expires on our monotonic clock, and whether we renew it. The
// reconciler and the renewer both act on entries; an entry's mutex makes them take turns,
// so one lock is never written by two threads at once.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::controller {

struct LockEntry {
  std::mutex mutex;
  lock::LockKey key;
  bool known = false;                    // the document below reflects Elasticsearch
  std::optional<lock::LockState> state;  // nullopt: no document
  std::string malformed;                 // the document exists but is not a lock document
  MonoTime expires_at{};                 // of `state`, on our clock
  std::atomic<bool> active{false};       // we renew it for its claim (read by the renewer's scan)
  std::optional<lock::Grant> grant;      // when active
  MonoTime next_renewal{};               // when active
  std::string revoked_reason;            // set when we stopped renewing (final for the grant)

  // Records a document read from Elasticsearch at `answered_at`: a version seen before keeps
  // its expiry (expiry counts from the first sighting), a new one restarts it, and a new
  // version of the same grant can only push the expiry later.
  void observe(std::optional<lock::LockState> read, MonoTime answered_at);
  // Records a grant we made or renewed.
  void hold(const lock::Grant& grant, MonoTime now);
  // Forgets the grant we held (lost or released); the document is re-read before deciding.
  void drop();
};

class LockTable {
 public:
  // The entry of a valid key, created on first use; entries live as long as the table.
  LockEntry& entry(const lock::LockKey& key);
  LockEntry* find(const std::string& lock_id);
  // Ids of the entries we actively renew.
  std::vector<std::string> active_ids() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<LockEntry>> entries_;
};

}  // namespace eslease::controller
