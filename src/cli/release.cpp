#include "cli/release.h"

#include "cli/exit_codes.h"
#include "common/text.h"
#include "lock/names.h"

namespace eslease::cli {
namespace {

std::string who_i_am(const std::optional<PodIdentity>& me) {
  if (!me) return "this tool has no pod identity (no --pod, POD_NAME or downward-API files)";
  return "this tool acts for pod " + me->name + " (from " + me->name_source + ")";
}

std::string describe_claim(const LeaseView& v) {
  return v.name + " (" + v.spec.describe_holder() + ", " + (v.phase.empty() ? "no status yet" : v.phase) +
         ")";
}

// The exit code of one Lease's release, saying what happened.
int release_one(kube::Api& api, Clock& clock, const ReleaseRequest& request, const LeaseView& lease,
                Messages& messages) {
  const ReleasePlan plan = plan_release(lease, request.me, request.force);
  if (!plan.notice.empty()) messages.say(plan.notice);
  WaitSettings settings;
  settings.limit = request.wait;
  settings.catch_signals = request.catch_signals;
  settings.let_go_of_a_grant = plan.mark_released;
  settings.expect_revocation = plan.wait_for_validity;
  const DeleteOutcome deleted =
      delete_and_wait(api, clock, lease.ns, lease.name, lease.uid, settings, messages);
  switch (deleted.result) {
    case DeleteResult::kGone:
      messages.say(plan.mark_released
                       ? "released Lease " + lease.name + " (deleted; its lock, if held, is released)"
                       : "deleted Lease " + lease.name + "; its lock, if it was held, has moved on");
      return kExitOk;
    case DeleteResult::kNotFound:
      messages.say(deleted.message + "; nothing to release");
      return kExitOk;
    case DeleteResult::kTimedOut:
      messages.say(deleted.message);
      return kExitWaitTimedOut;
    case DeleteResult::kInterrupted:
      messages.say(deleted.message + " (it is being deleted; the controller releases it)");
      return 128 + deleted.signal;
    case DeleteResult::kFailed:
      messages.say(deleted.message);
      return kExitFailed;
  }
  return kExitFailed;
}

// Whether a claim is on the locks released by name: the one lock, alone or in a set, or
// exactly the lock set.
bool claims_named(const LeaseView& v, const std::vector<std::string>& locks) {
  return locks.size() == 1 ? v.claims(locks.front()) : same_locks(v.locks(), locks);
}

// What release names when it finds no Lease by that name: one lock, or a lock set (which is
// never a Lease name), with the words its messages use.
struct NamedLocks {
  std::vector<std::string> locks;
  std::string what;   // "lock a", "lock set a+b"
  std::string lead;   // one lock: "no Lease named a in namespace NS, and "
  std::string where;  // a set: " in namespace NS"
};

NamedLocks named_locks(const ReleaseRequest& request) {
  NamedLocks named;
  named.locks = request.locks.empty() ? std::vector<std::string>{request.name} : request.locks;
  named.what = describe_locks(named.locks);
  if (named.locks.size() == 1)
    named.lead = "no Lease named " + request.name + " in namespace " + request.ns + ", and ";
  else
    named.where = " in namespace " + request.ns;
  return named;
}

// The Lease acquire would have created, when it is this pod's claim on the locks: found with
// `get` alone, which the workload Role has.
std::optional<LeaseView> own_default_claim(kube::Api& api, const ReleaseRequest& request,
                                           const NamedLocks& named) {
  if (!request.me) return std::nullopt;
  auto own = api.get(kube::resources::eslease_leases(), request.ns,
                     default_lease_name(named.locks, request.me->name));
  if (!own.ok()) return std::nullopt;
  const std::vector<LeaseView> mine = own_claims_on({decode_lease_view(*own)}, named.locks, *request.me);
  if (mine.empty()) return std::nullopt;
  return mine.front();
}

// NAME is no Lease: look for this pod's claim on the lock NAME (or the lock set). The Lease
// acquire would have created comes first (it needs only `get`), then a listing (which needs
// `list`).
int release_by_lock_name(kube::Api& api, Clock& clock, const ReleaseRequest& request, Messages& messages) {
  const NamedLocks named = named_locks(request);
  if (auto own = own_default_claim(api, request, named)) {
    messages.say("releasing Lease " + own->name + ", this pod's claim on " + own->describe_locks());
    return release_one(api, clock, request, *own, messages);
  }
  kube::ListOptions options;
  options.limit = 500;
  auto listed = kube::list_all(api, kube::resources::eslease_leases(), request.ns, options);
  if (!listed.ok()) {
    if (request.me) {
      // Without `list` (the workload Role has none) this pod's claim under the default name
      // is all that can be checked, and it is gone.
      messages.say(named.lead + "this pod has no claim on " + named.what + named.where +
                   " under the default name " + default_lease_name(named.locks, request.me->name) +
                   "; nothing to release (a claim made with --lease NAME is released "
                   "by that name; listing Leases to look further was refused: " +
                   listed.error().message + ")");
      return kExitOk;
    }
    messages.say(explain_api_error(listed.error(), "list Leases in namespace " + request.ns, request.ns));
    return kExitFailed;
  }
  std::vector<LeaseView> claims;
  for (const auto& item : listed->items) {
    LeaseView v = decode_lease_view(item);
    if (claims_named(v, named.locks)) claims.push_back(std::move(v));
  }
  if (claims.empty()) {
    messages.say(named.lead + "no claim on " + named.what + named.where + "; nothing to release");
    return kExitOk;
  }
  const std::vector<LeaseView> mine =
      request.me ? own_claims_on(claims, named.locks, *request.me) : std::vector<LeaseView>{};
  if (mine.empty()) {
    std::string names;
    for (const LeaseView& c : claims) names += (names.empty() ? "" : ", ") + describe_claim(c);
    messages.say(named.lead + named.what + named.where + " is claimed through " +
                 (claims.size() == 1 ? "Lease " : "Leases ") + names + ", none of them this pod's (" +
                 who_i_am(request.me) + "); release a claim by its Lease name");
    return kExitFailed;
  }
  int code = kExitOk;
  for (const LeaseView& claim : mine) {
    messages.say("releasing Lease " + claim.name + ", this pod's claim on " + claim.describe_locks());
    const int one = release_one(api, clock, request, claim, messages);
    if (code == kExitOk) code = one;
  }
  return code;
}

}  // namespace

ReleasePlan plan_release(const LeaseView& lease, const std::optional<PodIdentity>& me, bool force) {
  ReleasePlan plan;
  const std::string holder = lease.holder_pod.empty() ? lease.spec.pod_name : lease.holder_pod;
  const std::string holder_uid = lease.held() ? lease.holder_uid : std::string();
  plan.by_holder = me && !holder.empty() && me->ns == lease.ns && me->name == holder &&
                   (me->uid.empty() || holder_uid.empty() || me->uid == holder_uid);
  if (plan.by_holder || !lease.held()) {
    // The holder speaks for itself; a claim that holds nothing is simply withdrawn (granted
    // meanwhile, it is marked only by its own pod).
    plan.mark_released = plan.by_holder;
    return plan;
  }
  const std::string grant =
      lease.describe_locks() + " through Lease " + lease.name + " (token " + lease.fencing_token + ")";
  if (force) {
    plan.mark_released = true;
    plan.notice = "warning: --force: marking " + grant + " released for pod " + holder +
                  ", which may still be running and acting as its holder; " + who_i_am(me) +
                  ". The next claim gets the lock at once";
    return plan;
  }
  plan.wait_for_validity = true;
  plan.notice = "pod " + holder + " holds " + grant + ", and " + who_i_am(me) +
                ": deleting the Lease revokes the grant, and the lock goes to the next claim only once "
                "the validity published to " +
                holder + " has ended (at most " + std::to_string(lease.spec.lease_duration_seconds) +
                "s), or as soon as the pod stops. Run release from pod " + holder +
                " to hand it over at once, or add --force if you know it has stopped";
  return plan;
}

std::vector<LeaseView> own_claims_on(const std::vector<LeaseView>& leases,
                                     const std::vector<std::string>& locks, const PodIdentity& me) {
  std::vector<LeaseView> mine;
  for (const LeaseView& v : leases) {
    if (claims_named(v, locks) && !v.spec.pod_name.empty() && v.spec.pod_name == me.name && v.ns == me.ns)
      mine.push_back(v);
  }
  return mine;
}

int release_by_name(kube::Api& api, Clock& clock, const ReleaseRequest& request, Messages& messages) {
  if (request.locks.size() > 1) return release_by_lock_name(api, clock, request, messages);
  const bool lease_name = validate_object_name("Lease name", request.name).ok();
  if (lease_name) {
    auto found = api.get(kube::resources::eslease_leases(), request.ns, request.name);
    if (found.ok()) return release_one(api, clock, request, decode_lease_view(*found), messages);
    if (found.error().code != ErrorCode::kNotFound) {
      messages.say(explain_api_error(found.error(), "read Lease " + request.name, request.ns));
      return kExitFailed;
    }
  }
  if (!lock::validate_lock_name(request.name).ok()) {
    messages.say("Lease " + request.name + " not found in namespace " + request.ns + "; nothing to release");
    return kExitOk;
  }
  return release_by_lock_name(api, clock, request, messages);
}

}  // namespace eslease::cli
