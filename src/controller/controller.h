// The running controller: informers on Leases, Pods and Nodes keep typed caches warm on
// every replica; the leader (or the only replica without --leader-elect) runs a term of leadership:
// it reads every lock document once, grants free locks in bulk, then reconciles locks from
// a rate-limited work queue with N workers while the session keeper renews the grants of
// each namespace. Losing leadership ends the term; the next leader rebuilds everything from
// the world.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "common/clock.h"
#include "controller/claim_index.h"
#include "controller/cluster_view.h"
#include "controller/controller_options.h"
#include "controller/model.h"
#include "controller/observer.h"
#include "controller/pod_tracker.h"
#include "controller/recount_pace.h"
#include "kube/api.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/leader_election.h"
#include "lock/lock_store.h"

namespace eslease::controller {

class LeadershipTerm;

class Controller {
 public:
  Controller(kube::Api& api, lock::LockStore& store, kube::EventRecorder* events, Observer& observer,
             Clock& clock, ControllerOptions options);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Runs until `stop`; returns after the term of leadership ended (and leadership was given up).
  Status run(std::stop_token stop);

  // /healthz: the process works. /readyz: caches synced (and, leading or not, serving).
  bool synced() const;
  bool leading() const { return leading_.load(); }
  // Reports the claims by phase and priority, as the claim index counts them (on every
  // scrape), and the waiters and lock slots, which take a pass over every Lease: recounted at
  // the pace of `recount_pace_` (RecountPace), so with a few hundred Leases every scrape
  // recounts and with 100,000 the two may be a few seconds old.
  void publish_claim_metrics();
  // Elasticsearch answers again after it could not be reached: every lock is looked at now,
  // not when its backoff ends.
  void backend_returned();

 private:
  class Caches;
  const ClusterView& cluster() const;  // the caches, as the metrics read them
  // The informers, each of which keeps its cache and wakes the locks an event concerns.
  kube::InformerOptions informer_options(const std::string& ns, const char* resource);
  void watch_leases(const std::string& ns);
  void watch_pods(const std::string& ns);
  void watch_nodes();
  void watch_node_heartbeats();
  void watch_for_silent_nodes(std::stop_token stop);
  void node_changed(const std::string& node);
  void warn_if_too_short(const LeaseRecord& lease);
  void lead(std::stop_token stop);
  void enqueue(const std::vector<std::string>& lock_ids);
  // What publish_claim_metrics recounts, at most a twentieth of a core.
  static constexpr int kRecountPauseFactor = 20;
  struct Recount {
    int waiters = 0;
    std::int64_t slots_held = 0;
    std::int64_t slots_free = 0;
  };
  int count_waiters() const;
  void count_slots(Recount& recount) const;

  kube::Api& api_;
  lock::LockStore& store_;
  kube::EventRecorder* events_;
  Observer& observer_;
  Clock& clock_;
  ControllerOptions options_;
  ClaimIndex index_;
  PodTracker tracker_;
  std::unique_ptr<Caches> caches_;
  std::atomic<bool> leading_{false};
  std::atomic<int> short_leases_warned_{0};
  std::mutex term_mutex_;
  LeadershipTerm* term_ = nullptr;  // the running term, for informer handlers
  std::mutex recount_mutex_;        // scrapes may come on several threads
  Recount recounted_;
  RecountPace recount_pace_{kRecountPauseFactor};
};

}  // namespace eslease::controller
