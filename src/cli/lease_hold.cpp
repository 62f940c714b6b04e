#include "cli/lease_hold.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "api/session.h"
#include "cli/lease_follow.h"
#include "common/duration.h"
#include "common/text.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

class SessionLeaseHold final : public LeaseHold {
 public:
  SessionLeaseHold(kube::Api& api, Clock& clock, const json& held, std::string pod_uid, Millis safety_margin,
                   Messages& messages)
      : api_(api),
        clock_(clock),
        granted_(decode_lease_view(held)),
        grant_{granted_.name, granted_.fencing_token},
        lease_duration_(api::lease_duration(granted_.spec.lease_duration_seconds)),
        pod_uid_(std::move(pod_uid)),
        safety_margin_(safety_margin),
        messages_(messages) {
    observe_lease(granted_);
    // The session is renewed every third of the shortest lease duration of the namespace; a
    // stream silent for longer than half of this one's is suspect and is replaced.
    FollowOptions follow;
    follow.idle_timeout = std::max(Millis(1000), lease_duration_ / 2);
    FollowOptions follow_lease_options = follow;
    follow_lease_options.resource_version = granted_.resource_version;
    lease_follower_ = start_following(kube::resources::eslease_leases(), granted_.name, follow_lease_options,
                                      [this](const std::optional<json>& lease) {
                                        if (!lease) {
                                          std::lock_guard lock(mutex_);
                                          lose("Lease " + granted_.name + " was deleted");
                                          return true;
                                        }
                                        observe_lease(decode_lease_view(*lease));
                                        std::lock_guard lock(mutex_);
                                        return state_.lost;
                                      });
    session_follower_ = start_following(kube::resources::coordination_leases(), api::kSessionName, follow,
                                        [this](const std::optional<json>& session) {
                                          observe_session(session);
                                          std::lock_guard lock(mutex_);
                                          return state_.lost;
                                        });
  }

  ~SessionLeaseHold() override { stop_following(); }

  Status wait_until_confirmed(Millis needed, Millis limit) override {
    const MonoTime give_up = clock_.monotonic() + limit;
    std::unique_lock lock(mutex_);
    for (;;) {
      if (state_.lost) return make_error(ErrorCode::kLost, state_.why);
      if (session_failure_) return *session_failure_;
      const MonoTime now = clock_.monotonic();
      if (has_validity_ && state_.confirmed_until > now + needed) return {};
      if (now >= give_up) return make_error(ErrorCode::kTimeout, not_confirmed(needed, limit));
      // Until the session, the Lease or a watch changes something, or the limit: time alone
      // only runs the validity down.
      clock_.wait_until(lock, changed_, give_up, {}, [&] {
        return state_.lost || session_failure_ ||
               (has_validity_ && state_.confirmed_until > clock_.monotonic() + needed);
      });
    }
  }

  State check() override {
    const MonoTime now = clock_.monotonic();
    std::lock_guard lock(mutex_);
    for (std::string* error : {&lease_error_, &session_error_}) {
      // Said here, on the supervisor's thread, which owns stderr while the command runs.
      if (!error->empty()) messages_.say(*error);
      error->clear();
    }
    // Once the deadline has passed the grant is over for this process, whatever a later
    // session version says: its command may have been stopped, and a paused process must
    // not believe in a grant it could not watch.
    if (has_validity_ && now >= state_.confirmed_until) {
      lose("the validity published for Lease " + granted_.name + " ended before a renewal was seen");
    }
    return state_;
  }

  void finish(bool) override {
    stop_following();
    WaitSettings settings;
    settings.limit = Millis(10000);     // for the controller to release the lock
    settings.catch_signals = false;     // signals are still the supervisor's; this wait is bounded instead
    settings.let_go_of_a_grant = true;  // the command and all it started are gone
    settings.granted_token = granted_.fencing_token;
    const DeleteOutcome deleted =
        delete_and_wait(api_, clock_, granted_.ns, granted_.name, granted_.uid, settings, messages_);
    switch (deleted.result) {
      case DeleteResult::kGone:
      case DeleteResult::kNotFound:
        messages_.say("released " + granted_.describe_locks() + " (Lease " + granted_.name + " deleted)");
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
  std::jthread start_following(const kube::Resource& resource, const std::string& name, FollowOptions follow,
                               ObjectObserver observe) {
    const bool is_session = name == api::kSessionName;
    return std::jthread([this, resource, name, follow = std::move(follow), observe = std::move(observe),
                         is_session](std::stop_token stop) {
      const auto remember = [this, is_session, name](const std::string& error) {
        std::lock_guard lock(mutex_);
        (is_session ? session_error_ : lease_error_) = "cannot watch " + name + " (retrying): " + error;
      };
      const Status followed = follow_object(
          api_, clock_, resource, granted_.ns, name, follow, observe,
          [&remember](const Error& error) { remember(error.message); }, stop);
      if (followed.ok() || followed.error().code == ErrorCode::kCancelled) return;
      // Nothing confirms the grant any more: the command is stopped before it expires.
      std::lock_guard lock(mutex_);
      std::string& said = is_session ? session_error_ : lease_error_;
      said = "stopped watching " + name + ": " + followed.error().message;
      if (is_session) {
        Error failure = followed.error();
        failure.message = explain_session_error(failure);
        session_failure_ = failure;
        changed_.notify_all();
      }
    });
  }

  // What was seen when the grant was not confirmed in time: the Lease shows Held, but the
  // session had not published validity enough to start the command. Under mutex_.
  std::string not_confirmed(Millis needed, Millis limit) const {
    std::string message =
        "Lease " + granted_.name + " is Held with token " + granted_.fencing_token + ", but ";
    const std::string session = "session " + std::string(api::kSessionName) + " of namespace " + granted_.ns;
    if (!session_seen_) {
      message += session + " was not seen within " + format_duration(limit);
    } else if (!latest_validity_) {
      message += session + " published no validity for it within " + format_duration(limit);
    } else {
      message += "the validity " + session + " published for it (until " +
                 format_rfc3339_millis(*latest_validity_) + ") did not cover the next " +
                 format_duration(needed + safety_margin_) + " (--grace plus --safety-margin) within " +
                 format_duration(limit);
    }
    return message +
           "; eslease-controller renews the session after a grant and every third of the "
           "namespace's shortest leaseDurationSeconds";
  }

  std::string explain_session_error(const Error& error) const {
    return explain_api_error(
        error, "read session " + std::string(api::kSessionName) + " in namespace " + granted_.ns,
        granted_.ns);
  }

  void stop_following() {
    for (std::jthread* follower : {&lease_follower_, &session_follower_}) {
      follower->request_stop();
      if (follower->joinable()) follower->join();
    }
  }

  void lose(std::string why) {
    if (state_.lost) return;
    state_.lost = true;
    state_.why = std::move(why);
    changed_.notify_all();
  }

  // Every state of the Lease the watch shows: still ours, or the grant is over.
  void observe_lease(const LeaseView& v) {
    std::lock_guard lock(mutex_);
    if (v.uid != granted_.uid) return lose("Lease " + granted_.name + " was replaced by another object");
    if (v.being_deleted) return lose("Lease " + granted_.name + " is being deleted");
    if (!v.held()) {
      std::string why = granted_.describe_locks() + " is no longer held by Lease " + granted_.name +
                        " (phase " + (v.phase.empty() ? "none" : v.phase);
      if (!v.held_reason.empty()) why += ", " + v.held_reason;
      if (!v.held_message.empty()) why += ": " + v.held_message;
      return lose(why + ")");
    }
    if (v.fencing_token != granted_.fencing_token) {
      return lose(granted_.describe_locks() + " was granted again with fencing token " + v.fencing_token +
                  "; the command's token " + granted_.fencing_token + " is stale");
    }
    if (!v.holder_uid.empty() && !pod_uid_.empty() && v.holder_uid != pod_uid_) {
      return lose(granted_.describe_locks() + " is now held by pod " + v.holder_pod);
    }
  }

  // Every version of the session: the latest one that does not list the grant sets its
  // validity; one that lists it ends the grant. A missing session publishes nothing, so the
  // validity already seen runs down.
  void observe_session(const std::optional<json>& object) {
    if (!object) return;
    const api::Session session = api::decode_session(*object);
    // Clocks are read outside the lock; the confirmed end is this process's monotonic time
    // when the published wall-clock validity, less the margin, comes.
    const WallTime wall_now = clock_.now();
    const MonoTime mono_now = clock_.monotonic();
    std::lock_guard lock(mutex_);
    session_seen_ = true;
    if (session.lists(grant_)) {
      return lose(granted_.describe_locks() + " was revoked (session " + api::kSessionName + " lists Lease " +
                  granted_.name + " with token " + granted_.fencing_token + ")");
    }
    const auto deadline =
        api::holder_deadline(session, grant_, lease_duration_, safety_margin_, wall_now, mono_now);
    if (!deadline) return;
    latest_validity_ = deadline->wall + safety_margin_;
    state_.confirmed_until = deadline->mono;
    has_validity_ = true;
    changed_.notify_all();
  }

  kube::Api& api_;
  Clock& clock_;
  const LeaseView granted_;
  const api::GrantRef grant_;
  const Millis lease_duration_;
  const std::string pod_uid_;
  const Millis safety_margin_;
  Messages& messages_;
  std::mutex mutex_;
  std::condition_variable_any changed_;
  State state_;
  bool has_validity_ = false;
  bool session_seen_ = false;
  std::optional<WallTime> latest_validity_;  // the latest published, for messages
  std::string lease_error_;
  std::string session_error_;
  std::optional<Error> session_failure_;  // the session cannot be followed at all
  std::jthread lease_follower_;           // last: they use everything above
  std::jthread session_follower_;
};

}  // namespace

std::unique_ptr<LeaseHold> make_lease_hold(kube::Api& api, Clock& clock, const json& held,
                                           const std::string& pod_uid, Millis safety_margin,
                                           Messages& messages) {
  return std::make_unique<SessionLeaseHold>(api, clock, held, pod_uid, safety_margin, messages);
}

}  // namespace eslease::cli
