// Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics:
// - a record is expired when it has not changed for leaseDurationSeconds on OUR monotonic
//   clock since we first saw it (locally observed time; other machines' clocks are never
//   compared with ours);
// - every write is conditional on the resourceVersion read (409 -> re-read, try later);
// - the leader renews every retryPeriod and steps down when it has not renewed within
//   renewDeadline. We measure renewDeadline from the start of the last successful renew
//   request (client-go measures it per renew round), which steps down a little earlier
//   and never later: others can take over only leaseDuration after they saw that renewal.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "kube/api.h"

namespace eslease::kube {

struct LeaderCallbacks {
  // Runs on its own thread while we lead; must return soon after `stop` is requested.
  std::function<void(std::stop_token stop)> on_started_leading;
  std::function<void()> on_stopped_leading;
  // A different holder was observed (including ourselves).
  std::function<void(const std::string& identity)> on_new_leader;
};

struct LeaderElectionConfig {
  std::string ns;
  std::string name;
  std::string identity;
  // Shorter than client-go's 15 s / 10 s / 2 s: a standby takes over within about 4.5 s of a
  // leader that died without handing over (the lease, then up to 2.2 retry periods of jittered
  // polling), before the grants' published validity (3/4 of the 16 s default lease duration)
  // runs low. Safety never rests on one leader: the conditional
  // writes keep two acting replicas apart (docs/protocol.md). The leader renews twice a second.
  std::chrono::milliseconds lease_duration{std::chrono::seconds(3)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(2)};
  std::chrono::milliseconds retry_period{std::chrono::milliseconds(500)};
  // Clear the holder (leaseDurationSeconds 1) when we stop leading, so a successor need not
  // wait a whole lease duration. Only safe when the leader's work has stopped: it has, as
  // run() joins on_started_leading before releasing.
  bool release_on_cancel = false;
  LeaderCallbacks callbacks;
};

// client-go's JitterFactor: a candidate retries after retryPeriod times a random factor in
// [1, 1 + this], and the leader's renewDeadline must exceed the longest such retry.
inline constexpr double kJitterFactor = 1.2;

// client-go's rules: leaseDuration > renewDeadline > retryPeriod * kJitterFactor, all > 0,
// identity set.
Status validate(const LeaderElectionConfig& config);

struct LeaderRecord {
  std::string holder;
  int lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime, e.g. 2026-11-21T16:00:00.123456Z
  std::string renew_time;
  int transitions = 0;
  bool operator==(const LeaderRecord&) const = default;
};

class LeaderElector {
 public:
  // Every duration is measured on `clock`, which must outlive the elector.
  static Result<std::unique_ptr<LeaderElector>> create(Api& api, Clock& clock, LeaderElectionConfig config);

  // Campaigns until elected, leads until leadership is lost or `stop` is requested, then
  // returns (after on_stopped_leading). Call again to campaign again.
  void run(std::stop_token stop);

  // True from election until run() stops leading (before on_stopped_leading).
  bool is_leader() const { return leading_.load(); }
  // The holder last observed ("" when none).
  std::string leader() const;

  // One acquire-or-renew attempt; true when we hold the lease afterwards. Exposed so
  // decisions can be tested step by step with a FakeClock.
  bool try_acquire_or_renew(std::chrono::milliseconds request_timeout);
  // Gives the lease up if we hold it.
  bool release();

 private:
  LeaderElector(Api& api, Clock& clock, LeaderElectionConfig config);
  // When elected: the monotonic time the winning attempt started.
  std::optional<MonoTime> acquire(std::stop_token stop);
  void renew(std::stop_token stop, MonoTime acquired_at);
  bool holds_record() const;
  void observe(const LeaderRecord& record, json object);
  // try_acquire_or_renew without a Lease, and with one to take over or renew. `call` gives
  // each request what is left of the attempt's deadline.
  using DeadlineCall = std::function<CallOptions()>;
  bool create_record(const LeaderRecord& desired, const DeadlineCall& call);
  bool write_record(const json& current, LeaderRecord desired, const DeadlineCall& call);
  // After losing a race for the Lease: learn the winner's record, so its observed time starts now.
  void observe_winner(const DeadlineCall& call);
  void maybe_report_transition();
  std::chrono::milliseconds jittered_retry();

  Api& api_;
  LeaderElectionConfig config_;
  Clock& clock_;
  mutable std::mutex mutex_;
  std::optional<LeaderRecord> observed_;
  MonoTime observed_time_{};
  json observed_object_;
  std::string reported_leader_;
  std::atomic<bool> leading_{false};
};

}  // namespace eslease::kube
