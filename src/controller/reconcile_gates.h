// One reconcile at a time per lock, for the whole reconcile: deciding, writing the lock
// documents and writing the Lease statuses. The work queue already hands a lock to one worker
// at a time, but locks that lock sets link are decided together from any of them, so two
// workers may reconcile one lock through two keys; without the gate their status writes could
// land out of order and show a decision older than one already shown. A reconcile enters the
// gates of all its locks at once (none of them taken, or it waits), so reconciles of
// overlapping locks never wait for each other in a cycle. Only locks in use are remembered.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace eslease::controller {

class ReconcileGates {
 public:
  // The gates of some locks, held until it goes.
  class Passage {
   public:
    Passage(Passage&& other) noexcept
        : gates_(other.gates_), ids_(std::move(other.ids_)), waited_(other.waited_) {
      other.gates_ = nullptr;
    }
    Passage(const Passage&) = delete;
    Passage& operator=(const Passage&) = delete;
    Passage& operator=(Passage&&) = delete;
    ~Passage() {
      if (gates_) gates_->leave(ids_);
    }
    // Whether another reconcile held one of the gates first: it may have changed what this
    // one read before entering.
    bool waited() const { return waited_; }

   private:
    friend class ReconcileGates;
    Passage(ReconcileGates& gates, std::set<std::string> ids, bool waited)
        : gates_(&gates), ids_(std::move(ids)), waited_(waited) {}
    ReconcileGates* gates_;
    std::set<std::string> ids_;
    bool waited_;
  };

  // Waits until no other reconcile holds any of `lock_ids`, then holds them all.
  Passage enter(const std::vector<std::string>& lock_ids) {
    std::set<std::string> ids(lock_ids.begin(), lock_ids.end());
    std::unique_lock lock(mutex_);
    auto all_free = [&] {
      return std::none_of(ids.begin(), ids.end(), [&](const std::string& id) { return busy_.contains(id); });
    };
    const bool waited = !all_free();
    if (waited) {
      ++waiting_;
      free_.wait(lock, all_free);
      --waiting_;
    }
    busy_.insert(ids.begin(), ids.end());
    return Passage(*this, std::move(ids), waited);
  }

  // How many locks a reconcile holds now.
  std::size_t held() const {
    std::lock_guard lock(mutex_);
    return busy_.size();
  }
  // How many reconciles wait to enter now.
  std::size_t waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_;
  }

 private:
  void leave(const std::set<std::string>& ids) {
    {
      std::lock_guard lock(mutex_);
      for (const std::string& id : ids) busy_.erase(id);
    }
    free_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable free_;
  std::set<std::string> busy_;
  std::size_t waiting_ = 0;
};

}  // namespace eslease::controller
