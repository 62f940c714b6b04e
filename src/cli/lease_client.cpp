#include "cli/lease_client.h"

#include "api/session.h"
#include "cli/lease_follow.h"
#include "cli/wait_control.h"
#include "common/duration.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

std::string describe_existing(const LeaseView& v) {
  return v.describe_locks() + ", " + v.spec.describe_holder() + ", phase " +
         (v.phase.empty() ? "none yet" : v.phase);
}

std::string queue_text(const LeaseView& v) {
  if (!v.queue_position) return "waiting";
  const int ahead = *v.queue_position;
  if (ahead == 0) return "waiting, next in line";
  return "waiting, " + std::to_string(ahead) + (ahead == 1 ? " claim" : " claims") + " ahead";
}

// The controller runs but cannot use Elasticsearch: nothing is granted until it can.
std::string backend_text(const LeaseView& v) {
  return "eslease-controller reports that it cannot use Elasticsearch, so nothing is granted (" +
         (v.backend_message.empty() ? std::string("BackendAvailable=False") : v.backend_message) + ")";
}

}  // namespace

std::string explain_api_error(const Error& error, const std::string& doing, const std::string& ns) {
  std::string message = "cannot " + doing + ": " + error.message;
  if (error.code == ErrorCode::kForbidden) {
    message +=
        ". Access denied (403): the service account needs get, create, watch, patch and delete on "
        "leases.eslease.io, and get and watch on leases.coordination.k8s.io named eslease-session, in "
        "namespace " +
        ns + " (examples/workloads/job.yaml has such a Role)";
  } else if (error.code == ErrorCode::kUnauthorized) {
    message += " (the API server did not accept the credentials)";
  } else if (error.code == ErrorCode::kNotFound &&
             error.message.find("the server could not find") != std::string::npos) {
    message += " (is the Lease CRD installed? kubectl apply -f crds/)";
  }
  for (const std::string& detail : error.details) message += "\n  " + detail;
  return message;
}

Result<json> create_claim(kube::Api& api, const ClaimRequest& request) {
  auto created = api.create(kube::resources::eslease_leases(), request.ns, make_claim(request));
  if (created.ok()) return created;
  if (created.error().code == ErrorCode::kAlreadyExists) {
    std::string message = "Lease " + request.name + " already exists in namespace " + request.ns;
    if (auto existing = api.get(kube::resources::eslease_leases(), request.ns, request.name); existing.ok()) {
      message += " (" + describe_existing(decode_lease_view(*existing)) + ")";
    }
    message +=
        "; it was left alone. If it is left over from an earlier run, release it with 'eslease release " +
        request.name + "'; otherwise choose another name with --lease";
    return make_error(ErrorCode::kAlreadyExists, message, 409);
  }
  Error error = created.error();
  error.message = explain_api_error(
      created.error(), "create Lease " + request.name + " in namespace " + request.ns, request.ns);
  return error;
}

namespace {

// Why a watch of the Lease `name` ended without an answer.
std::string watch_failure(const Status& followed, const std::string& name, const std::string& ns) {
  return explain_api_error(
      followed.ok() ? make_error(ErrorCode::kInternal, "the watch ended") : followed.error(),
      "watch Lease " + name, ns);
}

// One wait for a grant: fed by the watch, read by the hint on the control's thread.
class GrantWait {
 public:
  GrantWait(const json& created, const std::string& pod_uid, bool try_lock, Messages& messages)
      : mine_(decode_lease_view(created)), pod_uid_(pod_uid), try_lock_(try_lock), messages_(messages) {
    outcome_.lease = created;
  }

  const LeaseView& mine() const { return mine_; }
  bool decided() const { return decided_; }
  WaitOutcome& outcome() { return outcome_; }

  // The watch's observer: true once the claim is decided.
  bool observe(const std::optional<json>& lease) {
    if (!lease)
      return decide(WaitResult::kRefused, "Lease " + mine_.name + " was deleted while waiting for the lock");
    const LeaseView v = decode_lease_view(*lease);
    if (v.uid != mine_.uid)
      return decide(WaitResult::kRefused, "Lease " + mine_.name + " was replaced by another object");
    outcome_.lease = *lease;
    if (v.being_deleted)
      return decide(WaitResult::kRefused, "Lease " + mine_.name + " is being deleted by someone else");
    {
      std::lock_guard lock(seen_mutex_);
      has_status_ = has_status_ || !v.phase.empty() || !v.backend_status.empty();
    }
    return judge(v);
  }

  void on_error(const Error& error) {
    if (error.message == last_error_) return;
    last_error_ = error.message;
    messages_.say("cannot watch Lease " + mine_.name + " (retrying): " + error.message);
  }

  void hint() {
    std::lock_guard lock(seen_mutex_);
    if (has_status_) return;
    messages_.say("Lease " + mine_.name +
                  " has no status yet: is eslease-controller running and watching namespace " + mine_.ns +
                  "? Still waiting");
  }

  // Why the lock is not held when the wait runs out.
  std::string why_not_held() const {
    const LeaseView last = decode_lease_view(outcome_.lease);
    std::string why;
    if (last.backend_status == "False") {
      why = backend_text(last);
    } else if (last.phase.empty()) {
      why = "Lease " + mine_.name +
            " never got a status, so no eslease-controller picked it up (is it running, and watching "
            "namespace " +
            mine_.ns + "?)";
    } else {
      why = mine_.describe_locks() + " is still taken: " + queue_text(last);
    }
    if (!last_error_.empty()) why += "; the last error was: " + last_error_;
    return why;
  }

 private:
  bool decide(WaitResult result, std::string message) {
    outcome_.result = result;
    outcome_.message = std::move(message);
    decided_ = true;
    return true;
  }

  // What the claim's phase says: granted to this pod, ended, or still waiting (said once per
  // change of the queue).
  bool judge(const LeaseView& v) {
    if (v.phase == api::to_string(api::Phase::kHeld) && !v.fencing_token.empty() &&
        (v.holder_uid.empty() || v.holder_uid == pod_uid_))
      return decide(WaitResult::kHeld, "");
    if (v.phase == api::to_string(api::Phase::kTimedOut))
      return decide(WaitResult::kTimedOut,
                    try_lock_
                        ? "not granted at once (--wait 0): " + v.held_message
                        : "the controller timed the claim out (acquireTimeoutSeconds): " + v.held_message);
    if (v.phase == api::to_string(api::Phase::kInvalid))
      return decide(WaitResult::kRefused, "the controller found the claim invalid: " + v.held_message);
    if (v.phase == api::to_string(api::Phase::kReleased))
      return decide(WaitResult::kRefused,
                    "the claim was released because its pod finished: " + v.held_message);
    if (v.phase == api::to_string(api::Phase::kPending) || v.backend_status == "False") {
      const std::string progress = "waiting for " + v.describe_locks() + " (Lease " + v.name +
                                   "): " + (v.backend_status == "False" ? backend_text(v) : queue_text(v));
      if (progress != last_progress_) {
        messages_.say(progress);
        last_progress_ = progress;
      }
    }
    return false;
  }

  const LeaseView mine_;
  const std::string pod_uid_;
  const bool try_lock_;
  Messages& messages_;
  WaitOutcome outcome_;
  bool decided_ = false;
  std::string last_progress_;
  std::string last_error_;
  std::mutex seen_mutex_;  // has_status_ is read by the hint on the control's thread
  bool has_status_ = false;
};

}  // namespace

WaitOutcome wait_until_held(kube::Api& api, Clock& clock, const json& created, const std::string& pod_uid,
                            const WaitSettings& settings, Messages& messages) {
  GrantWait wait(created, pod_uid, settings.try_lock, messages);
  const LeaseView& mine = wait.mine();
  WaitControl control(clock, settings.limit, settings.catch_signals, settings.no_status_hint_after,
                      [&] { wait.hint(); });
  if (control.failure()) return WaitOutcome{WaitResult::kFailed, {}, control.failure()->message};
  FollowOptions follow;
  follow.resource_version = mine.resource_version;
  const Status followed = follow_object(
      api, clock, kube::resources::eslease_leases(), mine.ns, mine.name, follow,
      [&](const std::optional<json>& lease) { return wait.observe(lease); },
      [&](const Error& error) { wait.on_error(error); }, control.token());
  WaitOutcome& outcome = wait.outcome();
  if (wait.decided()) return outcome;
  if (control.timed_out() && settings.try_lock) {
    outcome.result = WaitResult::kFailed;
    outcome.message = "no verdict on the try-lock (--wait 0) within " + format_duration(*settings.limit) +
                      ": " + wait.why_not_held();
  } else if (control.timed_out()) {
    outcome.result = WaitResult::kTimedOut;
    outcome.message = "gave up after " + format_duration(*settings.limit) + ": " + wait.why_not_held();
  } else if (int signal_number = control.interrupted_by(); signal_number != 0) {
    outcome.result = WaitResult::kInterrupted;
    outcome.signal = signal_number;
    outcome.message = "interrupted while waiting for " + mine.describe_locks();
  } else {
    outcome.result = WaitResult::kFailed;
    outcome.message = watch_failure(followed, mine.name, mine.ns);
  }
  return outcome;
}

namespace {

// Writes the fencing token its holder lets go of into the Lease's eslease.io/released
// annotation (api/session.h says why).
Status mark_released(kube::Api& api, const std::string& ns, const std::string& name,
                     const std::string& token) {
  const json patch = {{"metadata", {{"annotations", {{api::kReleasedAnnotation, token}}}}}};
  auto patched = api.patch(kube::resources::eslease_leases(), ns, name, kube::PatchType::kMerge, patch);
  if (patched.ok()) return {};
  return patched.error();
}

// The holder let go of `token` (empty: of the grant the Lease shows Held, if any). Without
// the mark (no patch right) the deletion reads as a revocation, and the lock moves when the
// validity published to the holder has ended.
void mark_let_go(kube::Api& api, const std::string& ns, const std::string& name, std::string token,
                 Messages& messages) {
  if (token.empty()) {
    auto lease = api.get(kube::resources::eslease_leases(), ns, name);
    if (!lease.ok()) return;
    const LeaseView v = decode_lease_view(*lease);
    if (!v.held()) return;
    token = v.fencing_token;
  }
  if (token.empty()) return;
  if (Status marked = mark_released(api, ns, name, token); !marked.ok())
    messages.say(explain_api_error(marked.error(), "mark Lease " + name + " released", ns) +
                 "; deleting it anyway (its lock moves once the holder's validity ends)");
}

// Sends the delete; a delete is idempotent, so one whose answer was lost (it may have been
// applied) is sent again, and a Lease already gone answers NotFound. An outcome when there is
// nothing to wait for.
std::optional<DeleteOutcome> send_delete(kube::Api& api, Clock& clock, const std::string& ns,
                                         const std::string& name, const std::string& uid) {
  kube::DeleteOptions options;
  if (!uid.empty()) options.precondition_uid = uid;
  Status deleted = api.remove(kube::resources::eslease_leases(), ns, name, options);
  for (int retry = 0; retry < 3 && !deleted.ok() && deleted.error().unavailable(); ++retry) {
    clock.sleep_for(Millis(200 << retry), {});
    deleted = api.remove(kube::resources::eslease_leases(), ns, name, options);
  }
  if (deleted.ok()) return std::nullopt;
  if (deleted.error().code == ErrorCode::kNotFound)
    return DeleteOutcome{DeleteResult::kNotFound, "Lease " + name + " not found in namespace " + ns};
  // The uid precondition failed: the name now belongs to another object.
  if (!uid.empty() && deleted.error().code == ErrorCode::kConflict)
    return DeleteOutcome{DeleteResult::kGone, ""};
  return DeleteOutcome{DeleteResult::kFailed, explain_api_error(deleted.error(), "delete Lease " + name, ns)};
}

}  // namespace

DeleteOutcome delete_and_wait(kube::Api& api, Clock& clock, const std::string& ns, const std::string& name,
                              const std::string& uid, const WaitSettings& settings, Messages& messages) {
  if (settings.let_go_of_a_grant) mark_let_go(api, ns, name, settings.granted_token, messages);
  if (auto sent = send_delete(api, clock, ns, name, uid)) return *sent;

  DeleteOutcome outcome;
  bool gone = false;
  std::string locks = "its lock";  // "lock a" or "lock set a+b" once the Lease is seen
  std::string last_error;
  std::function<void()> hint;
  if (!settings.expect_revocation) {
    hint = [&] {
      messages.say("the controller has not released the lock of Lease " + name +
                   " yet (finalizer eslease.io/release): is eslease-controller running? Still waiting");
    };
  }
  WaitControl control(clock, settings.limit, settings.catch_signals, settings.no_status_hint_after, hint);
  if (control.failure()) return DeleteOutcome{DeleteResult::kFailed, control.failure()->message};
  std::string marked_token;
  const ObjectObserver observe = [&](const std::optional<json>& lease) {
    if (!lease) return gone = true;
    const LeaseView v = decode_lease_view(*lease);
    if (!uid.empty() && v.uid != uid) return gone = true;  // ours is gone, a new one took the name
    locks = v.describe_locks();
    if (settings.let_go_of_a_grant && v.held() && v.fencing_token != marked_token &&
        lease->value(json::json_pointer("/metadata/annotations/eslease.io~1released"), "") !=
            v.fencing_token) {
      marked_token = v.fencing_token;
      (void)mark_released(api, ns, name, v.fencing_token);
    }
    return false;
  };
  const FollowErrorObserver on_error = [&](const Error& error) { last_error = error.message; };
  const Status followed = follow_object(api, clock, kube::resources::eslease_leases(), ns, name,
                                        FollowOptions{}, observe, on_error, control.token());
  if (gone) {
    outcome.result = DeleteResult::kGone;
    return outcome;
  }
  if (control.timed_out()) {
    outcome.result = DeleteResult::kTimedOut;
    outcome.message =
        "Lease " + name + " is being deleted, but after " + format_duration(*settings.limit) +
        " the controller has still not released " + locks +
        (settings.expect_revocation
             ? " (it waits until the validity published to its holder has ended; the Lease goes then)"
             : " (finalizer eslease.io/release is set; is eslease-controller running?)");
    if (!last_error.empty()) outcome.message += "; the last error was: " + last_error;
    return outcome;
  }
  if (int signal_number = control.interrupted_by(); signal_number != 0) {
    outcome.result = DeleteResult::kInterrupted;
    outcome.signal = signal_number;
    outcome.message = "interrupted while waiting for Lease " + name + " to go";
    return outcome;
  }
  outcome.result = DeleteResult::kFailed;
  outcome.message = watch_failure(followed, name, ns);
  return outcome;
}

}  // namespace eslease::cli
