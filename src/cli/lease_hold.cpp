#include "cli/lease_hold.h"

#include <mutex>
#include <thread>

#include "cli/lease_follow.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

class LeaseHold final : public Hold {
 public:
  LeaseHold(kube::Api& api, Clock& clock, const json& held, std::string pod_uid, LeaseHoldOptions options,
            Messages& messages)
      : api_(api),
        clock_(clock),
        granted_(decode_lease_view(held)),
        pod_uid_(std::move(pod_uid)),
        options_(options),
        messages_(messages) {
    observe(granted_);
    FollowOptions follow;
    follow.resource_version = granted_.resource_version;
    // Renewals come every third of the lease duration; a stream silent for longer than half
    // of it is suspect and is replaced (the Lease is read again).
    follow.idle_timeout = std::max(Millis(1000), Millis(granted_.lease_duration_seconds * 1000 / 2));
    follower_ = std::jthread([this, follow](std::stop_token stop) {
      const Status followed = follow_lease(
          api_, clock_, granted_.ns, granted_.name, follow,
          [this](const std::optional<json>& lease) {
            if (!lease) {
              std::lock_guard lock(mutex_);
              lose("Lease " + granted_.name + " was deleted");
              return true;
            }
            observe(decode_lease_view(*lease));
            std::lock_guard lock(mutex_);
            return state_.lost;
          },
          [this](const Error& error) {
            std::lock_guard lock(mutex_);
            pending_error_ = error.describe();
          },
          stop);
      if (!followed.ok() && followed.error().code != ErrorCode::kCancelled) {
        // Nothing confirms the grant any more: the command is stopped before it expires.
        std::lock_guard lock(mutex_);
        pending_error_ = "stopped watching: " + followed.error().describe();
      }
    });
  }

  ~LeaseHold() override { stop_following(); }

  State check() override {
    std::lock_guard lock(mutex_);
    if (!pending_error_.empty()) {
      // Said here, on the supervisor's thread, which owns stderr while the command runs.
      if (pending_error_ != last_error_) {
        messages_.say("cannot watch Lease " + granted_.name + " (retrying): " + pending_error_);
        last_error_ = pending_error_;
      }
      pending_error_.clear();
    }
    return state_;
  }

  void finish(bool) override {
    stop_following();
    WaitSettings settings;
    settings.limit = options_.release_wait;
    settings.catch_signals = false;  // signals are still the supervisor's; this wait is bounded instead
    const DeleteOutcome deleted =
        delete_and_wait(api_, clock_, granted_.ns, granted_.name, granted_.uid, settings, messages_);
    switch (deleted.result) {
      case DeleteResult::kGone:
      case DeleteResult::kNotFound:
        messages_.say("released lock " + granted_.lock_name + " (Lease " + granted_.name + " deleted)");
        break;
      case DeleteResult::kTimedOut:
        messages_.say(deleted.message + "; it will be released when the controller gets to it");
        break;
      default:
        messages_.say(deleted.message + "; delete it with 'kubectl delete leases.eslease.io " +
                      granted_.name + " -n " + granted_.ns + "' (until then the lock stays with this pod)");
    }
  }

 private:
  void stop_following() {
    follower_.request_stop();
    if (follower_.joinable()) follower_.join();
  }

  void lose(std::string why) {
    if (state_.lost) return;
    state_.lost = true;
    state_.why = std::move(why);
  }

  // Every state of the Lease the watch shows: still ours and renewed, or the grant is over.
  void observe(const LeaseView& v) {
    // Clocks are read outside the lock; the confirmed end is this process's monotonic time
    // when the published wall-clock expiry (less the margin) comes.
    const WallTime wall_now = clock_.now();
    const MonoTime mono_now = clock_.monotonic();
    std::lock_guard lock(mutex_);
    if (v.uid != granted_.uid) return lose("Lease " + granted_.name + " was replaced by another object");
    if (v.being_deleted) return lose("Lease " + granted_.name + " is being deleted");
    if (!v.held()) {
      std::string why = "lock " + granted_.lock_name + " is no longer held by Lease " + granted_.name +
                        " (phase " + (v.phase.empty() ? "none" : v.phase);
      if (!v.held_reason.empty()) why += ", " + v.held_reason;
      if (!v.held_message.empty()) why += ": " + v.held_message;
      return lose(why + ")");
    }
    if (v.fencing_token != granted_.fencing_token) {
      return lose("lock " + granted_.lock_name + " was granted again with fencing token " + v.fencing_token +
                  "; the command's token " + granted_.fencing_token + " is stale");
    }
    if (!v.holder_uid.empty() && !pod_uid_.empty() && v.holder_uid != pod_uid_) {
      return lose("lock " + granted_.lock_name + " is now held by pod " + v.holder_pod);
    }
    if (v.expire_time) {
      const auto remaining =
          std::chrono::duration_cast<Millis>(*v.expire_time - wall_now) - options_.safety_margin;
      state_.confirmed_until = mono_now + remaining;
    }
  }

  kube::Api& api_;
  Clock& clock_;
  const LeaseView granted_;
  const std::string pod_uid_;
  const LeaseHoldOptions options_;
  Messages& messages_;
  std::mutex mutex_;
  State state_;
  std::string pending_error_;
  std::string last_error_;
  std::jthread follower_;  // last: it uses everything above
};

}  // namespace

std::unique_ptr<Hold> make_lease_hold(kube::Api& api, Clock& clock, const json& held,
                                      const std::string& pod_uid, const LeaseHoldOptions& options,
                                      Messages& messages) {
  return std::make_unique<LeaseHold>(api, clock, held, pod_uid, options, messages);
}

}  // namespace eslease::cli
