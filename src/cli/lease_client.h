// One pod's claim as the eslease tool handles it in Kubernetes mode: create the Lease, wait
// by watching until the controller grants it, delete it and wait until the controller has
// released the lock. Messages say what happened and what to do about it.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stop_token>
#include <string>

#include "cli/lease_view.h"
#include "common/clock.h"
#include "common/result.h"
#include "kube/api.h"

namespace eslease::cli {

// stderr shared by the waiting thread and the thread that says why a wait takes long.
class Messages {
 public:
  explicit Messages(std::ostream& err) : err_(err) {}
  void say(const std::string& line) {
    std::lock_guard lock(mutex_);
    err_ << "eslease: " << line << "\n";
    err_.flush();
  }

 private:
  std::mutex mutex_;
  std::ostream& err_;
};

// The API's answer to a request about a Lease or pod, with what to do about it: RBAC for
// 403, the causes for 422.
std::string explain_api_error(const Error& error, const std::string& doing, const std::string& ns);

// Creates the claim. AlreadyExists becomes a message describing the Lease that has the name
// (it is never touched); every error leaves nothing behind.
Result<nlohmann::json> create_claim(kube::Api& api, const ClaimRequest& request);

enum class WaitResult {
  kHeld,         // granted: `lease` is the Held object
  kTimedOut,     // --wait ran out, or the controller's acquireTimeoutSeconds did
  kInterrupted,  // SIGINT/SIGTERM
  kRefused,      // Invalid, Released, deleted by someone else: `message` says which
  kFailed,       // the API refused to let us watch (403, ...)
};

struct WaitOutcome {
  WaitResult result = WaitResult::kFailed;
  nlohmann::json lease;  // the last state seen
  std::string message;
  int signal = 0;
};

struct WaitSettings {
  std::optional<Millis> limit;
  // wait_until_held: the claim is a try-lock (acquireTimeoutSeconds 0), which the controller
  // grants or times out in its first decision on it. Its verdict is what ends the wait;
  // `limit` running out first means no controller decided it (kFailed), not that it was busy.
  bool try_lock = false;
  bool catch_signals = true;
  Millis no_status_hint_after{5000};  // say the controller may not be running
  // delete_and_wait: the caller speaks for the holder, which has let go. Before the delete
  // its grant (`granted_token`, or else the one the Lease shows Held) is marked released, and
  // so is a grant the Lease shows while it is being deleted, so the controller hands the
  // lock over at once instead of waiting out the validity as for a revocation.
  bool let_go_of_a_grant = false;
  std::string granted_token;
  // delete_and_wait: the Lease is deleted without the mark while its holder may still run, so
  // the controller keeps it until the validity published to the holder has ended. A long wait
  // is then expected, not a sign that no controller runs.
  bool expect_revocation = false;
};

// Watches the claim `created` (as create_claim returned it) until the controller grants it
// to `pod_uid`, the claim ends, the limit runs out or a signal comes.
WaitOutcome wait_until_held(kube::Api& api, Clock& clock, const nlohmann::json& created,
                            const std::string& pod_uid, const WaitSettings& settings, Messages& messages);

enum class DeleteResult { kGone, kNotFound, kTimedOut, kInterrupted, kFailed };
struct DeleteOutcome {
  DeleteResult result = DeleteResult::kFailed;
  std::string message;
  int signal = 0;
};

// Deletes the Lease (only the one with `uid`, when given) and waits until it is gone, that
// is until the controller has released its lock and removed the finalizer.
DeleteOutcome delete_and_wait(kube::Api& api, Clock& clock, const std::string& ns, const std::string& name,
                              const std::string& uid, const WaitSettings& settings, Messages& messages);

}  // namespace eslease::cli
