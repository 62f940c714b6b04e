#include "cli/kube_mode.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>

#include "api/session.h"
#include "cli/cli.h"
#include "cli/exit_codes.h"
#include "cli/lease_client.h"
#include "cli/lease_hold.h"
#include "cli/lease_view.h"
#include "cli/release.h"
#include "cli/sidecar.h"
#include "cli/status_report.h"
#include "cli/supervisor.h"
#include "common/duration.h"
#include "common/text.h"
#include "kube/config.h"
#include "kube/http_api.h"
#include "lock/names.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

// How long a try-lock (--wait 0) waits for the controller's verdict, which comes in its first
// reconcile of the claim: generous, so a loaded controller is never mistaken for a busy lock.
constexpr Millis kTryLockVerdictWait{30000};

bool is_try_lock(const Options& o) {
  return o.wait_given && o.wait == Millis(0);
}

struct Invocation {
  const Options& options;
  Environment& env;
  kube::Api& api;
  Messages& messages;
  PodIdentitySources sources;
};

// The outcome of taking a claim: held (exit_code unset), or the code to exit with.
struct Claimed {
  std::optional<int> exit_code;
  json lease;
  std::string pod_uid;
};

// Deletes a claim that will not be used (it may have been granted meanwhile: no command ran
// under it, so it is let go); says so, or says how to clean up by hand.
void withdraw(Invocation& s, const LeaseView& claim) {
  WaitSettings settings;
  settings.limit = Millis(10000);
  settings.catch_signals = false;
  settings.let_go_of_a_grant = true;
  const DeleteOutcome deleted =
      delete_and_wait(s.api, s.env.clock, claim.ns, claim.name, claim.uid, settings, s.messages);
  if (deleted.result == DeleteResult::kGone || deleted.result == DeleteResult::kNotFound) {
    s.messages.say("deleted Lease " + claim.name);
  } else if (deleted.result == DeleteResult::kTimedOut) {
    s.messages.say("Lease " + claim.name +
                   " is being deleted; the controller releases it when it gets to it");
  } else {
    s.messages.say(deleted.message + "; delete it with 'kubectl delete leases.eslease.io " + claim.name +
                   " -n " + claim.ns + "'");
  }
}

// The claim this pod already has on the locks under the requested name: a container that
// restarts (restartPolicy Always or OnFailure) finds the Lease of its earlier run, whose owner,
// the pod, lives on. Its earlier run is gone with the old container, so the claim, and a grant
// it holds, are taken back as they are. Anything else with the name is left alone.
std::optional<json> own_leftover_claim(kube::Api& api, const ClaimRequest& request) {
  auto existing = api.get(kube::resources::eslease_leases(), request.ns, request.name);
  if (!existing.ok()) return std::nullopt;
  const LeaseView v = decode_lease_view(*existing);
  if (v.being_deleted || !same_locks(v.locks(), request.locks) || v.spec.pod_name != request.pod)
    return std::nullopt;
  const json owners = existing->value(json::json_pointer("/metadata/ownerReferences"), json::array());
  if (!owners.is_array()) return std::nullopt;
  for (const json& owner : owners) {
    if (owner.is_object() && owner.value("kind", "") == "Pod" && owner.value("uid", "") == request.pod_uid) {
      return *existing;
    }
  }
  return std::nullopt;
}

// The claiming pod's uid, which the ownerReference needs, read from the pod; the error's
// message is the one to show.
Result<std::string> read_pod_uid(Invocation& s, const PodIdentity& identity) {
  auto pod = s.api.get(kube::resources::pods(), identity.ns, identity.name);
  if (pod.ok()) return kube::meta_string(*pod, "uid");
  std::string message = pod.error().code == ErrorCode::kNotFound
                            ? "pod " + identity.name + " not found in namespace " + identity.ns +
                                  " (the pod named by " + identity.name_source + ")"
                            : explain_api_error(pod.error(), "read pod " + identity.name, identity.ns);
  if (pod.error().code == ErrorCode::kForbidden) {
    message += "; or set POD_UID from the downward API (fieldRef metadata.uid) so the pod need not be read";
  }
  return make_error(pod.error().code, message);
}

// Who claims: this pod, with its uid; or the code to exit with (the message said).
struct Claimant {
  std::optional<int> exit_code;
  PodIdentity pod;
};

Claimant identify_claimant(Invocation& s) {
  auto identity = resolve_pod_identity(s.sources);
  if (!identity.ok()) {
    s.messages.say(identity.error().message);
    return {kExitUsage, {}};
  }
  for (const Status& check :
       {validate_object_name("pod name (from " + identity->name_source + ")", identity->name),
        lock::validate_namespace(identity->ns)}) {
    if (!check.ok()) {
      s.messages.say(check.error().message);
      return {kExitUsage, {}};
    }
  }
  // The uid comes from the downward API when it is there, which spares the workload the
  // permission to read pods.
  if (identity->uid.empty()) {
    auto uid = read_pod_uid(s, *identity);
    if (!uid.ok()) {
      s.messages.say(uid.error().message);
      return {kExitFailed, {}};
    }
    identity->uid = *uid;
  }
  return {std::nullopt, *identity};
}

ClaimRequest claim_request(const Options& o, const PodIdentity& pod) {
  ClaimRequest request;
  request.ns = pod.ns;
  request.locks = o.locks;
  request.pod = pod.name;
  request.pod_uid = pod.uid;
  request.name = o.kube.lease.empty() ? default_lease_name(o.locks, pod.name) : o.kube.lease;
  request.priority = o.kube.priority;
  if (o.ttl_given) request.lease_duration_seconds = static_cast<int>(o.ttl.count() / 1000);
  // The controller gives up on the claim too, so a claim whose waiter was killed (SIGKILL, a
  // node gone) does not stay in the queue past the time it was meant for. It counts from when
  // it queued the claim (status.queuedAt), or before it has written that, from the Lease's
  // creationTimestamp, which has whole seconds (cut, not rounded): one second more keeps it
  // from giving up before the tool's own wait of D has passed. --wait 0 is a try-lock,
  // decided by the controller alone (acquireTimeoutSeconds 0): no timer of ours races it.
  if (o.wait_given) request.acquire_timeout_seconds = is_try_lock(o) ? 0 : acquire_timeout_for_wait(o.wait);
  if (o.kube.liveness_grace)
    request.liveness_grace_seconds = static_cast<int>(o.kube.liveness_grace->count() / 1000);
  request.capacity = o.capacity;
  request.access = o.access;
  return request;
}

// Creates the claim's Lease, or takes back this pod's own claim found under its name.
Result<json> create_or_take_back(Invocation& s, const ClaimRequest& request) {
  auto created = create_claim(s.api, request);
  // AlreadyExists: an earlier run of this container left it. Unavailable or a timeout: the
  // create may have been applied while its answer was lost. Either way a claim of this pod
  // found under the name is ours to carry on with, never to leave behind.
  if (created.ok() || (created.error().code != ErrorCode::kAlreadyExists && !created.error().unavailable()))
    return created;
  auto leftover = own_leftover_claim(s.api, request);
  if (!leftover) return created;
  s.messages.say(
      "taking back Lease " + request.name + ", this pod's claim on " + describe_locks(request.locks) +
      (created.error().code == ErrorCode::kAlreadyExists ? " left by an earlier run of its container"
                                                         : " (the answer to its creation was lost)"));
  // Read afresh by the wait below (no resourceVersion): it may be Held already.
  leftover->at("metadata").erase("resourceVersion");
  return std::move(*leftover);
}

// Waits until the controller grants the claim; a claim that ends any other way is withdrawn.
Claimed wait_for_grant(Invocation& s, const json& created, const std::string& pod_uid) {
  const LeaseView claim = decode_lease_view(created);
  WaitSettings settings;
  if (s.options.wait_given) settings.limit = s.options.wait;
  if (is_try_lock(s.options)) {
    settings.try_lock = true;
    settings.limit = kTryLockVerdictWait;
  }
  settings.catch_signals = s.env.catch_signals;
  WaitOutcome outcome = wait_until_held(s.api, s.env.clock, created, pod_uid, settings, s.messages);
  if (outcome.result == WaitResult::kHeld) return {std::nullopt, std::move(outcome.lease), pod_uid};
  s.messages.say(outcome.message);
  withdraw(s, claim);
  switch (outcome.result) {
    case WaitResult::kTimedOut:
      return {kExitWaitTimedOut, {}, {}};
    case WaitResult::kInterrupted:
      return {128 + outcome.signal, {}, {}};
    default:
      return {kExitFailed, {}, {}};
  }
}

Claimed take_claim(Invocation& s) {
  Claimant claimant = identify_claimant(s);
  if (claimant.exit_code) return {claimant.exit_code, {}, {}};
  auto created = create_or_take_back(s, claim_request(s.options, claimant.pod));
  if (!created.ok()) {
    s.messages.say(created.error().message);
    return {kExitFailed, {}, {}};
  }
  return wait_for_grant(s, *created, claimant.pod.uid);
}

int command_acquire(Invocation& s) {
  Claimed claimed = take_claim(s);
  if (claimed.exit_code) return *claimed.exit_code;
  const LeaseView v = decode_lease_view(claimed.lease);
  s.env.out << v.fencing_token << "\n";
  s.env.out.flush();
  s.messages.say("acquired " + v.describe_locks() + " as Lease " + v.name + " (token " + v.fencing_token +
                 "); it is held until 'eslease release " + v.name + "' or until pod " + v.holder_pod +
                 " ends");
  return kExitOk;
}

int command_run(Invocation& s) {
  Claimed claimed = take_claim(s);
  if (claimed.exit_code) return *claimed.exit_code;
  const MonoTime granted_at = s.env.clock.monotonic();
  const LeaseView v = decode_lease_view(claimed.lease);
  const Millis ttl = api::lease_duration(v.spec.lease_duration_seconds);
  const Millis grace = kube_grace(s.options, ttl);
  const Millis margin = kube_safety_margin(s.options, ttl);
  auto hold = make_lease_hold(s.api, s.env.clock, claimed.lease, claimed.pod_uid, margin, s.messages);
  // Checked again here: without --ttl the duration is the Lease's, defaulted by the API server.
  if (Status slack = check_run_slack(ttl, grace, margin); !slack.ok()) {
    s.messages.say(slack.error().message + "; not running the command");
    hold->finish(false);
    return kExitUsage;
  }
  if (auto warning = run_slack_warning(ttl, grace, margin)) s.messages.say("warning: " + *warning);
  // The command starts only once the session confirms the grant for longer than it would
  // take to stop it.
  if (Status confirmed = hold->wait_until_confirmed(grace, ttl); !confirmed.ok()) {
    s.messages.say(confirmed.error().message + "; not running the command");
    hold->finish(false);
    return kExitFailed;
  }
  s.messages.say("acquired " + v.describe_locks() + " as Lease " + v.name + " (token " + v.fencing_token +
                 "); running the command");
  SuperviseOptions supervise_options;
  supervise_options.command = s.options.child;
  supervise_options.environment = {{"ESLEASE_FENCING_TOKEN", v.fencing_token},
                                   {"ESLEASE_LOCK", lock_ids(v.ns, v.locks(), ",")},
                                   {"ESLEASE_LEASE", v.name}};
  supervise_options.grace = grace;
  supervise_options.lock_id = lock_ids(v.ns, v.locks(), ", ");
  supervise_options.hold_at_least = s.options.hold_at_least;
  supervise_options.granted_at = granted_at;
  return supervise(*hold, s.env.clock, supervise_options, s.env.err);
}

int command_sidecar(Invocation& s) {
  Claimant claimant = identify_claimant(s);
  if (claimant.exit_code) return *claimant.exit_code;
  const SidecarSettings settings{s.options.sidecar, s.options.kube.safety_margin, s.env.catch_signals};
  return run_sidecar(s.api, s.env.clock, claimant.pod, settings, s.messages);
}

int command_release(Invocation& s) {
  ReleaseRequest request;
  request.ns = resolve_namespace(s.sources);
  request.name = s.options.lock;
  request.locks = s.options.locks;
  if (auto identity = resolve_pod_identity(s.sources); identity.ok()) request.me = *identity;
  request.force = s.options.kube.force;
  if (s.options.wait_given) request.wait = s.options.wait;
  request.catch_signals = s.env.catch_signals;
  return release_by_name(s.api, s.env.clock, request, s.messages);
}

// Each holder's live validity, from its namespace's session. Best effort: a session that
// cannot be read (no rights, none yet) leaves the validity unknown and says so once.
void add_published_validity(Invocation& s, std::vector<LeaseView>& leases) {
  std::map<std::string, std::optional<api::Session>> sessions;
  for (LeaseView& v : leases) {
    if (!v.held()) continue;
    auto [it, inserted] = sessions.try_emplace(v.ns);
    if (inserted) {
      auto object = s.api.get(kube::resources::coordination_leases(), v.ns, api::kSessionName);
      if (object.ok()) {
        it->second = api::decode_session(*object);
      } else if (object.error().code != ErrorCode::kNotFound) {
        s.messages.say("cannot read session " + std::string(api::kSessionName) + " in namespace " + v.ns +
                       " (validity not shown): " + object.error().message);
      }
    }
    if (!it->second) continue;
    v.valid_until = api::published_validity(*it->second, api::GrantRef{v.name, v.fencing_token},
                                            api::lease_duration(v.spec.lease_duration_seconds));
  }
}

int command_status(Invocation& s) {
  const bool all = s.options.kube.all_namespaces;
  const std::string ns = all ? std::string() : resolve_namespace(s.sources);
  kube::ListOptions list;
  list.limit = 500;
  auto page = kube::list_all(s.api, kube::resources::eslease_leases(), ns, list);
  if (!page.ok()) {
    s.messages.say(
        explain_api_error(page.error(), all ? "list Leases" : "list Leases in namespace " + ns, ns));
    return kExitFailed;
  }
  std::vector<LeaseView> leases;
  for (const json& item : page->items) {
    LeaseView v = decode_lease_view(item);
    if (s.options.lock.empty() || v.claims(s.options.lock)) leases.push_back(std::move(v));
  }
  add_published_validity(s, leases);
  auto reports = build_lock_reports(leases);
  // A lock set's claim is listed under each of its locks; `status LOCK` shows that one lock.
  if (!s.options.lock.empty())
    std::erase_if(reports, [&](const LockReport& r) { return r.lock != s.options.lock; });
  const WallTime now = s.env.clock.now();
  if (s.options.output == OutputFormat::kJson) {
    s.env.out << lock_reports_json(reports, now).dump() << "\n";
    return kExitOk;
  }
  if (reports.empty()) {
    const std::string where = all ? "any namespace" : "namespace " + ns;
    s.env.out << (s.options.lock.empty() ? "no Leases in " + where
                                         : "no claims on lock " + s.options.lock + " in " + where)
              << "\n";
    return kExitOk;
  }
  print_lock_reports(s.env.out, reports, now, all);
  return kExitOk;
}

// Each lock of a set by the one rule of both modes (direct mode's make_lock_key applies it).
Status validate_lock_names(const std::vector<std::string>& locks) {
  for (const std::string& lock : locks) {
    if (auto st = lock::validate_lock_name(lock); !st.ok()) return st;
  }
  return {};
}

// Names are checked before anything is contacted.
Status check_names(const Options& o) {
  if (o.ns_given) {
    if (auto st = lock::validate_namespace(o.ns); !st.ok()) return st;
  }
  if (!o.kube.pod.empty()) {
    if (auto st = validate_object_name("pod name", o.kube.pod); !st.ok()) return st;
  }
  switch (o.command) {
    case Command::kAcquire:
    case Command::kRun:
      if (auto st = validate_lock_names(o.locks); !st.ok()) return st;
      if (!o.kube.lease.empty()) return validate_object_name("Lease name", o.kube.lease);
      return {};
    case Command::kRelease:
      // A lock set as acquire takes it, else a Lease, or a lock (this pod's claim on it).
      if (o.locks.size() > 1) return validate_lock_names(o.locks);
      if (validate_object_name("Lease name", o.lock).ok()) return {};
      if (Status as_lock = lock::validate_lock_name(o.lock); !as_lock.ok()) {
        return make_error(ErrorCode::kInvalidArgument, as_lock.error().message + "; nor is it a Lease name");
      }
      return {};
    case Command::kStatus:
      return o.lock.empty() ? Status() : lock::validate_lock_name(o.lock);
    default:
      return {};
  }
}

}  // namespace

KubeConnector kubernetes_connector() {
  return [](const KubeOptions& k) -> Result<KubeConnection> {
    const bool in_pod = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
    const char* kubeconfig_list = std::getenv("KUBECONFIG");
    const char* home = std::getenv("HOME");
    const bool has_file =
        !k.kubeconfig.empty() || (kubeconfig_list != nullptr && *kubeconfig_list != 0) ||
        (home != nullptr && std::filesystem::exists(std::filesystem::path(home) / ".kube/config"));
    if (!in_pod && !has_file) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "no Kubernetes configuration: not running inside a pod (KUBERNETES_SERVICE_HOST is not "
          "set), no --kubeconfig, $KUBECONFIG or ~/.kube/config; give --kubeconfig FILE for "
          "Kubernetes mode, or --es URL for direct mode");
    }
    if (in_pod && k.kubeconfig.empty() && !k.context.empty()) {
      return make_error(ErrorCode::kInvalidArgument, "--context needs --kubeconfig FILE");
    }
    // The controller's order (kube::load_default): --kubeconfig, the pod's service account,
    // $KUBECONFIG's first file, ~/.kube/config. Outside a pod that is kubectl's order.
    auto config = kube::load_default(k.kubeconfig, k.context);
    if (!config.ok()) {
      Error error = config.error();
      if (error.code == ErrorCode::kInvalidArgument)
        error.code = ErrorCode::kInvalid;  // not the flags' fault
      return error;
    }
    KubeConnection connection;
    connection.default_namespace = config->ns;
    connection.api = kube::HttpApi::connect(std::move(*config));
    return connection;
  };
}

int run_kubernetes_mode(const Options& options, Environment& env) {
  Messages messages(env.err);
  if (auto names = check_names(options); !names.ok()) {
    messages.say(names.error().message);
    return kExitUsage;
  }
  if (!env.connect_kube) {
    messages.say("Kubernetes mode is not available here; give --es URL for direct mode");
    return kExitUsage;
  }
  auto connection = env.connect_kube(options.kube);
  if (!connection.ok()) {
    messages.say(connection.error().message);
    return connection.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  Invocation invocation{
      options, env, *connection->api, messages,
      PodIdentitySources{options.kube.pod, options.ns_given ? options.ns : std::string(),
                         options.kube.podinfo_dir, connection->default_namespace, env.getenv, env.read_file}};
  switch (options.command) {
    case Command::kAcquire:
      return command_acquire(invocation);
    case Command::kRun:
      return command_run(invocation);
    case Command::kRelease:
      return command_release(invocation);
    case Command::kStatus:
      return command_status(invocation);
    case Command::kSidecar:
      return command_sidecar(invocation);
    default:
      messages.say("this command is for direct mode (--es URL)");
      return kExitUsage;
  }
}

}  // namespace eslease::cli
