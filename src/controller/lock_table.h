// What the leading controller knows about each lock document: the last version it read or
// wrote, when that version expires on our monotonic clock, and whether we renew it.
//
// The reconciler and the session keeper both act on entries. An entry is reached only through a
// LockTable::Handle, which holds the entry's mutex while it lives: one lock is never
// written by two threads at once, and every change to an entry is one of its named
// operations below. An entry that no longer stands for anything (no document, nothing
// renewed or revoked, no claim) is dropped, so per-job lock names leave no memory behind; a
// new entry for the name reads the document before anything is decided.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/lease_api.h"
#include "common/clock.h"
#include "lock/expiry.h"
#include "lock/lock_store.h"

namespace eslease::controller {

class LockEntry {
 public:
  explicit LockEntry(lock::LockKey key, std::int64_t slot = 0) : key_(std::move(key)), slot_(slot) {}

  const lock::LockKey& key() const { return key_; }
  // Which of the lock's slot documents this entry stands for (0 for a lock of capacity 1).
  std::int64_t slot() const { return slot_; }
  std::string id() const { return lock::slot_document_id(key_.id(), slot_); }
  // The entry reflects Elasticsearch: read, or written with a known outcome, since the last
  // failure. When false the document is read before anything is decided.
  bool known() const { return known_; }
  // The document (nullopt: the lock is free) and when it expires on our clock.
  const std::optional<lock::LockState>& document() const { return document_; }
  MonoTime expires_at() const { return expires_at_; }
  // Set when a document exists that is not a lock document: nothing is granted over it.
  const std::string& malformed() const { return malformed_; }
  // We renew the document's grant for its claim; `held()` is what we renew from.
  bool renewing() const { return renewing_; }
  const std::optional<lock::HeldDocument>& held() const { return held_; }
  // Why we stopped renewing the document's grant, which is final for that grant.
  std::optional<api::Reason> revoked() const { return revoked_; }
  // Known to have no document, and nothing renewed or revoked: forgetting the entry loses
  // nothing, since a new one reads the document before deciding.
  bool forgettable() const;

  // --- what was read ----------------------------------------------------------------------
  // A realtime read answered at `answered_at` (nullopt: no document). Its expiry follows
  // lock::sight; a document that is no longer our grant ends our renewing.
  void read(std::optional<lock::LockState> document, MonoTime answered_at);
  // The read found a document that is not a lock document.
  void read_malformed(std::string problem);
  // One slot's answer to a batch read: the document (or none), or an error when the index
  // holds something that is not a lock document, over which nothing is granted.
  void read_answer(lock::DocumentRead answer, MonoTime answered_at);
  // A read failed, or a write's outcome is unknown: read again before deciding.
  void outcome_unknown() { known_ = false; }

  // --- what we wrote ----------------------------------------------------------------------
  // We granted the lock (acquire or takeover) or renewed our grant: renew it from now on
  // (the namespace's session ticks say when).
  void granted(lock::HeldDocument held) { hold(std::move(held)); }
  void renewed(lock::HeldDocument held) { hold(std::move(held)); }
  // A grant this controller did not make (found at start-up) is renewed from now on, under
  // the grant's token: the largest of its documents' (each was read with its own version's).
  void adopted(std::int64_t grant_token);
  // We stop renewing the document's grant for good. It is handed over once it expires, and
  // no earlier than `hand_over_at`: when the validity published to its holder ends.
  void revoke(api::Reason why, std::optional<MonoTime> hand_over_at = std::nullopt);
  // The document's grant ended (its holder is gone, or it expired) and its other documents are
  // being written over: we stop renewing it; the document stays until it is.
  void ended();
  // The end of the document's grant was counted (eslease_expirations_total): once per grant.
  bool end_counted() const { return end_counted_; }
  void count_end() { end_counted_ = true; }
  // We deleted the document.
  void released(MonoTime now);
  // Another writer replaced our grant: stop renewing, and read before deciding.
  void lost();
  // A renewal was not confirmed at `now`. `still_ours` is the grant as Elasticsearch holds it
  // now, when known (another replica may have renewed it: we follow its version, and hand the
  // lock over no earlier than the expiry it wrote). Returns true when our deadline passed:
  // the grant is then revoked (RenewalFailed); otherwise the caller tries again.
  bool renewal_not_confirmed(const std::optional<lock::LockState>& still_ours, MonoTime now);

 private:
  void hold(lock::HeldDocument held);

  lock::LockKey key_;
  std::int64_t slot_ = 0;
  bool known_ = false;
  std::optional<lock::LockState> document_;
  MonoTime expires_at_{};
  std::string malformed_;
  // Mirrors renewing(), for LockTable::renewing_ids(), which reads it without the mutex.
  std::atomic<bool> renewing_{false};
  std::optional<lock::HeldDocument> held_;
  std::optional<api::Reason> revoked_;
  bool end_counted_ = false;
};

class LockTable {
  struct Slot;

 public:
  // Exclusive use of one entry for as long as the handle lives.
  class Handle {
   public:
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) = delete;
    ~Handle();

    LockEntry& operator*() const;
    LockEntry* operator->() const { return &**this; }
    // The lock has no claim left: when this handle goes, the entry is dropped if it is
    // forgettable() and no other thread holds or waits for it.
    void drop_when_idle() { drop_ = true; }

   private:
    friend class LockTable;
    Handle(LockTable& table, Slot& slot, std::unique_lock<std::mutex> lock)
        : table_(&table), slot_(&slot), lock_(std::move(lock)) {}
    LockTable* table_;
    Slot* slot_;
    std::unique_lock<std::mutex> lock_;
    bool drop_ = false;
  };

  LockTable();
  ~LockTable();

  // The entry of a valid key's slot document, created on first use (known() false); waits
  // while another thread holds it. A thread that holds several takes them with lock_all or
  // lock_existing_all, never one by one.
  Handle lock(const lock::LockKey& key, std::int64_t slot = 0);
  // The entries of every slot document of each key (slots[i] documents of keys[i]), locked in
  // the one order of the table, their ids', so that no two threads holding several ever wait
  // for each other; handles[i][k] is keys[i]'s slot k.
  std::vector<std::vector<Handle>> lock_all(const std::vector<lock::LockKey>& keys,
                                            const std::vector<std::int64_t>& slots);
  // The entries among `ids` that exist, locked in the same order (an entry gone meanwhile is
  // left out).
  std::vector<Handle> lock_existing_all(std::vector<std::string> ids);
  // How many slots of the lock have an entry now: one past the highest (0: none).
  std::int64_t slots_in_use(const std::string& lock_id) const;
  // The entry of document `id` if it exists (never created); waits while another thread holds it.
  std::optional<Handle> lock_existing(const std::string& id);
  // The entry of document `id` if it exists and nobody holds it now.
  std::optional<Handle> try_lock(const std::string& id);
  // Ids of the entries of namespace `ns` we renew, read without their mutexes: an entry that
  // changes meanwhile is seen at the next renewal tick.
  std::vector<std::string> renewing_ids(const std::string& ns) const;
  // How many entries there are.
  std::size_t size() const;

 private:
  void release(Handle& handle);

  mutable std::mutex mutex_;  // slots_ and each slot's users
  std::map<std::string, std::unique_ptr<Slot>> slots_;
};

}  // namespace eslease::controller
