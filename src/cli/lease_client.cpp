#include "cli/lease_client.h"

#include "api/session.h"
#include "cli/lease_follow.h"
#include "cli/wait_control.h"
#include "common/duration.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

std::string describe_existing(const LeaseView& v) {
  std::string holder = v.pod_name.empty() ? "pods " + v.selector : "pod " + v.pod_name;
  return "lock " + v.lock_name + ", " + holder + ", phase " + (v.phase.empty() ? "none yet" : v.phase);
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

WaitOutcome wait_until_held(kube::Api& api, Clock& clock, const json& created, const std::string& pod_uid,
                            const WaitSettings& settings, Messages& messages) {
  const LeaseView mine = decode_lease_view(created);
  WaitOutcome outcome;
  outcome.lease = created;
  bool decided = false;
  bool has_status = false;
  std::string last_progress;
  std::string last_error;
  std::mutex seen_mutex;  // has_status is read by the hint on the control's thread

  WaitControl control(clock, settings.limit, settings.catch_signals, settings.no_status_hint_after, [&] {
    std::lock_guard lock(seen_mutex);
    if (!has_status) {
      messages.say("Lease " + mine.name +
                   " has no status yet: is eslease-controller running and watching namespace " + mine.ns +
                   "? Still waiting");
    }
  });

  const auto decide = [&](WaitResult result, std::string message) {
    outcome.result = result;
    outcome.message = std::move(message);
    decided = true;
    return true;
  };
  const ObjectObserver observe = [&](const std::optional<json>& lease) {
    if (!lease)
      return decide(WaitResult::kRefused, "Lease " + mine.name + " was deleted while waiting for the lock");
    const LeaseView v = decode_lease_view(*lease);
    if (v.uid != mine.uid)
      return decide(WaitResult::kRefused, "Lease " + mine.name + " was replaced by another object");
    outcome.lease = *lease;
    if (v.being_deleted)
      return decide(WaitResult::kRefused, "Lease " + mine.name + " is being deleted by someone else");
    {
      std::lock_guard lock(seen_mutex);
      has_status = has_status || !v.phase.empty() || !v.backend_status.empty();
    }
    if (v.phase == api::to_string(api::Phase::kHeld) && !v.fencing_token.empty() &&
        (v.holder_uid.empty() || v.holder_uid == pod_uid)) {
      return decide(WaitResult::kHeld, "");
    }
    if (v.phase == api::to_string(api::Phase::kTimedOut)) {
      return decide(WaitResult::kTimedOut,
                    "the controller timed the claim out (acquireTimeoutSeconds): " + v.held_message);
    }
    if (v.phase == api::to_string(api::Phase::kInvalid))
      return decide(WaitResult::kRefused, "the controller found the claim invalid: " + v.held_message);
    if (v.phase == api::to_string(api::Phase::kReleased)) {
      return decide(WaitResult::kRefused,
                    "the claim was released because its pod finished: " + v.held_message);
    }
    if (v.phase == api::to_string(api::Phase::kPending) || v.backend_status == "False") {
      const std::string progress = "waiting for lock " + v.lock_name + " (Lease " + v.name +
                                   "): " + (v.backend_status == "False" ? backend_text(v) : queue_text(v));
      if (progress != last_progress) {
        messages.say(progress);
        last_progress = progress;
      }
    }
    return false;
  };
  const FollowErrorObserver on_error = [&](const Error& error) {
    if (error.message == last_error) return;
    last_error = error.message;
    messages.say("cannot watch Lease " + mine.name + " (retrying): " + error.message);
  };

  FollowOptions follow;
  follow.resource_version = mine.resource_version;
  const Status followed =
      follow_lease(api, clock, mine.ns, mine.name, follow, observe, on_error, control.token());
  if (decided) return outcome;
  if (control.timed_out()) {
    const LeaseView last = decode_lease_view(outcome.lease);
    std::string why;
    if (last.backend_status == "False") {
      why = backend_text(last);
    } else if (last.phase.empty()) {
      why = "Lease " + mine.name +
            " never got a status, so no eslease-controller picked it up (is it running, and watching "
            "namespace " +
            mine.ns + "?)";
    } else {
      why = "lock " + mine.lock_name + " is still taken: " + queue_text(last);
    }
    if (!last_error.empty()) why += "; the last error was: " + last_error;
    outcome.result = WaitResult::kTimedOut;
    outcome.message = "gave up after " + format_duration(*settings.limit) + ": " + why;
    return outcome;
  }
  if (int signal_number = control.interrupted_by(); signal_number != 0) {
    outcome.result = WaitResult::kInterrupted;
    outcome.signal = signal_number;
    outcome.message = "interrupted while waiting for lock " + mine.lock_name;
    return outcome;
  }
  outcome.result = WaitResult::kFailed;
  outcome.message = explain_api_error(
      followed.ok() ? make_error(ErrorCode::kInternal, "the watch ended") : followed.error(),
      "watch Lease " + mine.name, mine.ns);
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

}  // namespace

DeleteOutcome delete_and_wait(kube::Api& api, Clock& clock, const std::string& ns, const std::string& name,
                              const std::string& uid, const WaitSettings& settings, Messages& messages) {
  DeleteOutcome outcome;
  if (settings.let_go_of_a_grant) mark_let_go(api, ns, name, settings.granted_token, messages);
  kube::DeleteOptions options;
  if (!uid.empty()) options.precondition_uid = uid;
  // A delete is idempotent: one whose answer was lost (it may have been applied) is sent
  // again, and a Lease already gone answers NotFound.
  Status deleted = api.remove(kube::resources::eslease_leases(), ns, name, options);
  for (int retry = 0; retry < 3 && !deleted.ok() && deleted.error().unavailable(); ++retry) {
    clock.sleep_for(Millis(200 << retry), {});
    deleted = api.remove(kube::resources::eslease_leases(), ns, name, options);
  }
  if (!deleted.ok()) {
    if (deleted.error().code == ErrorCode::kNotFound) {
      outcome.result = DeleteResult::kNotFound;
      outcome.message = "Lease " + name + " not found in namespace " + ns;
      return outcome;
    }
    if (!uid.empty() && deleted.error().code == ErrorCode::kConflict) {
      // The uid precondition failed: the name now belongs to another object.
      outcome.result = DeleteResult::kGone;
      return outcome;
    }
    outcome.result = DeleteResult::kFailed;
    outcome.message = explain_api_error(deleted.error(), "delete Lease " + name, ns);
    return outcome;
  }

  bool gone = false;
  std::string lock;
  std::string last_error;
  std::function<void()> hint;
  if (!settings.expect_revocation) {
    hint = [&] {
      messages.say("the controller has not released the lock of Lease " + name +
                   " yet (finalizer eslease.io/release): is eslease-controller running? Still waiting");
    };
  }
  WaitControl control(clock, settings.limit, settings.catch_signals, settings.no_status_hint_after, hint);
  std::string marked_token;
  const ObjectObserver observe = [&](const std::optional<json>& lease) {
    if (!lease) return gone = true;
    const LeaseView v = decode_lease_view(*lease);
    if (!uid.empty() && v.uid != uid) return gone = true;  // ours is gone, a new one took the name
    lock = v.lock_name;
    if (settings.let_go_of_a_grant && v.held() && v.fencing_token != marked_token &&
        lease->value(json::json_pointer("/metadata/annotations/eslease.io~1released"), "") !=
            v.fencing_token) {
      marked_token = v.fencing_token;
      (void)mark_released(api, ns, name, v.fencing_token);
    }
    return false;
  };
  const FollowErrorObserver on_error = [&](const Error& error) { last_error = error.message; };
  const Status followed =
      follow_lease(api, clock, ns, name, FollowOptions{}, observe, on_error, control.token());
  if (gone) {
    outcome.result = DeleteResult::kGone;
    return outcome;
  }
  if (control.timed_out()) {
    outcome.result = DeleteResult::kTimedOut;
    outcome.message =
        "Lease " + name + " is being deleted, but after " + format_duration(*settings.limit) +
        " the controller has still not released lock " + lock +
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
  outcome.message = explain_api_error(
      followed.ok() ? make_error(ErrorCode::kInternal, "the watch ended") : followed.error(),
      "watch Lease " + name, ns);
  return outcome;
}

}  // namespace eslease::cli
