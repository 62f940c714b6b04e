#include "cli/flags.h"

#include "api/lease_api.h"
#include "cli/pod_identity.h"
#include "common/address.h"
#include "common/duration.h"
#include "common/text.h"
#include "lock/slots.h"

namespace eslease::cli {
namespace {

using Set = std::function<Status(ArgsRead&, const std::string&)>;

Status check_duration_flag(const std::string& flag, const std::string& value, Millis& out, Millis minimum) {
  auto parsed = parse_duration(value);
  if (!parsed.ok()) return usage_error(flag + ": " + parsed.error().message);
  if (*parsed < minimum) return usage_error(flag + " must be at least " + format_duration(minimum));
  out = *parsed;
  return {};
}

// ----------------------------------------------------------------------------------------
// Setters: one per kind of value.

// A Kubernetes-mode or sidecar value taken as it is; what it names is checked once the pod
// is known.
template <class Group>
Set text(Group Options::*group, std::string Group::*field) {
  return [group, field](ArgsRead& read, const std::string& value) {
    read.options.*group.*field = value;
    return Status();
  };
}

Status set_listen(ArgsRead& read, const std::string& value) {
  if (auto parsed = parse_host_port(value); !parsed.ok())
    return usage_error("--listen \"" + value.substr(0, 64) + "\" is not valid (" + parsed.error().message +
                       "); use host:port or :port");
  read.options.sidecar.listen = value;
  return {};
}

// A switch: alone it reads "true"; --flag=VALUE takes parse_bool's spellings.
Set switch_of(const char* flag, bool& (*field)(ArgsRead&)) {
  return [flag, field](ArgsRead& read, const std::string& value) -> Status {
    auto on = parse_bool(value);
    if (!on.ok()) return usage_error(std::string(flag) + ": " + on.error().message);
    field(read) = *on;
    return {};
  };
}

// A duration of at least `minimum`, kept in the optional `field` picks.
Set optional_duration(const char* flag, std::optional<Millis>& (*field)(ArgsRead&), Millis minimum) {
  return [flag, field, minimum](ArgsRead& read, const std::string& value) {
    Millis parsed{0};
    auto s = check_duration_flag(flag, value, parsed, minimum);
    if (s.ok()) field(read) = parsed;
    return s;
  };
}

Status set_priority(ArgsRead& read, const std::string& value) {
  const std::string lower = to_lower(value);
  if (lower == "foreground") {
    read.options.kube.priority = api::to_string(api::Priority::kForeground);
  } else if (lower == "background") {
    read.options.kube.priority = api::to_string(api::Priority::kBackground);
  } else {
    return usage_error("--priority must be Foreground or Background");
  }
  return {};
}

// The Lease's livenessGraceSeconds: whole seconds.
Status set_liveness_grace(ArgsRead& read, const std::string& value) {
  Millis grace{0};
  if (auto s = check_duration_flag("--liveness-grace", value, grace, Millis(0)); !s.ok()) return s;
  if (grace.count() % 1000 != 0 || grace > Millis(3'600'000))
    return usage_error("--liveness-grace must be whole seconds from 0s to 1h");
  read.options.kube.liveness_grace = grace;
  return {};
}

Status set_capacity(ArgsRead& read, const std::string& value) {
  const bool digits =
      !value.empty() && value.size() <= 4 && value.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoll(value) < 1 || std::stoll(value) > lock::kMaxCapacity)
    return usage_error("--capacity must be a whole number from 1 to " + std::to_string(lock::kMaxCapacity));
  read.options.capacity = std::stoll(value);
  read.options.capacity_given = true;
  return {};
}

// --shared and --exclusive: a switch each for the claim's access (--shared=false is
// --exclusive); given both, they must agree.
Set access_switch(const char* flag, api::Access when_on) {
  return [flag, when_on](ArgsRead& read, const std::string& value) -> Status {
    auto on = parse_bool(value);
    if (!on.ok()) return usage_error(std::string(flag) + ": " + on.error().message);
    const api::Access other =
        when_on == api::Access::kShared ? api::Access::kExclusive : api::Access::kShared;
    const api::Access access = *on ? when_on : other;
    if (read.options.access_given && read.options.access != access)
      return usage_error("give either --shared or --exclusive, not both");
    read.options.access = access;
    read.options.access_given = true;
    return {};
  };
}

Status set_output(ArgsRead& read, const std::string& value) {
  if (value == "json") {
    read.options.output = OutputFormat::kJson;
  } else if (value == "table") {
    read.options.output = OutputFormat::kTable;
  } else {
    return usage_error("--output must be table or json");
  }
  return {};
}

// ----------------------------------------------------------------------------------------
// The rows, by mode.

std::vector<ToolFlag> kubernetes_flags() {
  const auto mode = FlagMode::kKubernetes;
  return {
      {{"kubeconfig", 0, true, "FILE"},
       mode,
       "API server access",
       "the in-cluster service account inside a pod, else $KUBECONFIG's first file, else ~/.kube/config",
       text(&Options::kube, &KubeOptions::kubeconfig)},
      {{"context", 0, true, "NAME"},
       mode,
       "kubeconfig context",
       "",
       text(&Options::kube, &KubeOptions::context)},
      {{"pod", 0, true, "NAME"},
       mode,
       "the pod that claims the lock",
       "POD_NAME, else --podinfo-dir",
       text(&Options::kube, &KubeOptions::pod)},
      {{"podinfo-dir", 0, true, "DIR"},
       mode,
       "downward-API files name, namespace and uid",
       kDefaultPodinfoDir,
       text(&Options::kube, &KubeOptions::podinfo_dir)},
      {{"lease", 0, true, "NAME"},
       mode,
       "acquire, run: the Lease to create",
       "LOCK-POD",
       text(&Options::kube, &KubeOptions::lease)},
      {{"priority", 0, true, "P"},
       mode,
       "acquire, run: Foreground or Background",
       "Foreground",
       set_priority},
      {{"liveness-grace", 0, true, "D"},
       mode,
       "acquire, run: whole seconds the pod may be not Ready before the controller judges it dead",
       "10s",
       set_liveness_grace},
      {{"safety-margin", 0, true, "D"},
       mode,
       "run: how long before its validity ends CMD must be gone; sidecar: how long before it ends a "
       "grant stops being reported",
       "min(2s, ttl/5)",
       optional_duration(
           "--safety-margin", [](ArgsRead & r) -> auto& { return r.options.kube.safety_margin; }, Millis(0))},
      {{"all-namespaces", 'A', false, ""},
       mode,
       "status: the locks of every namespace",
       "",
       switch_of("--all-namespaces", [](ArgsRead& r) -> bool& { return r.options.kube.all_namespaces; })},
      {{"force", 0, false, ""},
       mode,
       "release: hand the lock over at once, also for another pod (which may still be running)",
       "",
       switch_of("--force", [](ArgsRead& r) -> bool& { return r.options.kube.force; })},
  };
}

// Kubernetes mode too: where `eslease sidecar` tells its pod's grants.
std::vector<ToolFlag> sidecar_flags() {
  const auto mode = FlagMode::kKubernetes;
  return {
      {{"listen", 0, true, "ADDR"},
       mode,
       "sidecar: where /holds, /holds/LOCK and /healthz are served (:PORT: every address, for a "
       "kubelet's httpGet probe)",
       kDefaultSidecarListen,
       set_listen},
      {{"file", 0, true, "PATH"},
       mode,
       "sidecar: keep the /holds JSON in this file (replaced by an atomic rename)",
       "",
       text(&Options::sidecar, &SidecarFlags::file)},
      {{"on-grant", 0, true, "CMD"},
       mode,
       "sidecar: run CMD (/bin/sh -c) when the pod is granted a lock, with the grant in its environment",
       "",
       text(&Options::sidecar, &SidecarFlags::on_grant)},
      {{"on-loss", 0, true, "CMD"},
       mode,
       "sidecar: run CMD (/bin/sh -c) when a grant stops being reported",
       "",
       text(&Options::sidecar, &SidecarFlags::on_loss)},
  };
}

// The connection flags (the controller's too), then the holder.
std::vector<ToolFlag> direct_flags() {
  std::vector<ToolFlag> rows;
  for (const lock::ConnectionFlag& flag : lock::connection_flags()) {
    const bool boolean = flag.kind == lock::ConnectionFlag::Kind::kBool;
    const bool shown = !boolean && flag.default_text != "none";
    rows.push_back({{flag.name, 0, !boolean, flag.value_name},
                    FlagMode::kDirect,
                    flag.help,
                    shown ? flag.default_text : "",
                    [&flag](ArgsRead& read, const std::string& value) -> Status {
                      if (auto s = flag.apply(read.options.connection, value); !s.ok())
                        return usage_error("--" + std::string(flag.name) + ": " + s.error().message);
                      return {};
                    }});
  }
  rows.push_back({{"holder", 0, true, "NAME"},
                  FlagMode::kDirect,
                  "who holds the lock; renew and release need the one acquire used",
                  "HOST/PID",
                  [](ArgsRead& read, const std::string& value) {
                    read.options.holder = value;
                    return Status();
                  }});
  return rows;
}

Status set_namespace(ArgsRead& read, const std::string& value) {
  read.options.ns = value;
  read.options.ns_given = true;
  return {};
}

Status set_ttl(ArgsRead& read, const std::string& value) {
  read.options.ttl_given = true;
  return check_duration_flag("--ttl", value, read.options.ttl, Millis(1000));
}

Status set_wait(ArgsRead& read, const std::string& value) {
  read.options.wait_given = true;
  return check_duration_flag("--wait", value, read.options.wait, Millis(0));
}

Status set_version(ArgsRead& read, const std::string& value) {
  auto on = parse_bool(value);
  if (!on.ok()) return usage_error("--version: " + on.error().message);
  if (*on) read.options.command = Command::kVersion;
  return {};
}

std::vector<ToolFlag> shared_flags() {
  const auto mode = FlagMode::kBoth;
  const std::string kube_ttl = std::to_string(api::kDefaultLeaseDurationSeconds) + "s";
  return {
      {{"namespace", 'n', true, "NS"},
       mode,
       "the namespace of the lock (and of the Lease)",
       "the pod's namespace in Kubernetes mode, default in direct mode",
       set_namespace},
      {{"ttl", 0, true, "D"},
       mode,
       "how long a grant lasts without renewal; whole seconds in Kubernetes mode (leaseDurationSeconds)",
       kube_ttl + " in Kubernetes mode, " + format_duration(lock::kDefaultTtl) + " in direct mode",
       set_ttl},
      {{"wait", 0, true, "D"},
       mode,
       "acquire, run, release: give up after D (exit 3); acquire and run with 0: a try-lock, granted "
       "only if it can be at once (exit 3 at once when not)",
       "no limit",
       set_wait},
      {{"hold-at-least", 0, true, "D"},
       mode,
       "run: keep the grant until D after it was granted, also when CMD ends earlier (with --wait 0: "
       "once per period across replicas)",
       "",
       optional_duration(
           "--hold-at-least", [](ArgsRead & r) -> auto& { return r.options.hold_at_least; }, Millis(0))},
      {{"grace", 0, true, "D"},
       mode,
       "run: how long CMD has between SIGTERM and SIGKILL",
       "min(10s, ttl/5) in Kubernetes mode, min(10s, ttl/3) in direct mode",
       optional_duration(
           "--grace", [](ArgsRead & r) -> auto& { return r.options.grace; }, Millis(0))},
      {{"capacity", 0, true, "N"},
       mode,
       "how many hold the lock at once, one slot each (a semaphore); direct mode's renew, release and "
       "status read that many slots",
       "1",
       set_capacity},
      {{"exclusive", 0, false, ""},
       mode,
       "acquire, run: hold the lock alone, every one of its N slots (a writer of a read-write lock)",
       "",
       access_switch("--exclusive", api::Access::kExclusive)},
      {{"shared", 0, false, ""},
       mode,
       "acquire, run: hold one slot, beside other Shared holders up to the capacity",
       "the default",
       access_switch("--shared", api::Access::kShared)},
      {{"output", 'o', true, "FORMAT"}, mode, "status: table or json", "table", set_output},
      {{"version", 0, false, ""}, mode, "print the version and exit", "", set_version},
      {{"help", 'h', false, ""},
       mode,
       "print this help and exit",
       "",
       switch_of("--help", [](ArgsRead& r) -> bool& { return r.help; })},
  };
}

std::vector<ToolFlag> make_tool_flags() {
  std::vector<ToolFlag> rows;
  for (const std::vector<ToolFlag>& group :
       {kubernetes_flags(), sidecar_flags(), direct_flags(), shared_flags()})
    rows.insert(rows.end(), group.begin(), group.end());
  return rows;
}

}  // namespace

const std::vector<ToolFlag>& tool_flags() {
  static const std::vector<ToolFlag> rows = make_tool_flags();
  return rows;
}

const std::vector<OptionSyntax>& tool_flag_syntax() {
  static const std::vector<OptionSyntax> syntax = [] {
    std::vector<OptionSyntax> out;
    for (const ToolFlag& flag : tool_flags()) out.push_back(flag.syntax);
    return out;
  }();
  return syntax;
}

// ----------------------------------------------------------------------------------------
// Help.

namespace {

constexpr std::size_t kColumn = 33;
constexpr std::size_t kWidth = 96;

constexpr std::string_view kIntroductionAndKubernetesMode =
    R"(usage: eslease [connection flags] COMMAND [flags]
       eslease --version | --help

Distributed locks for workloads. Kubernetes mode (the default, without --es) declares
Lease objects for a pod and lets eslease-controller decide; the pod
needs no Elasticsearch credentials. Direct mode (--es URL) locks straight in Elasticsearch,
for processes outside Kubernetes.

Kubernetes mode:
  acquire LOCK [LOCK...] [--pod P] [--lease NAME] [--priority Foreground|Background]
               [--ttl 16s] [--wait D] [--liveness-grace 10s] [--capacity N] [--exclusive]
      Creates a Lease claiming LOCK for the pod (owned by it, so it goes when the pod goes),
      waits by watching until the controller grants it, and prints the fencing token. With
      --wait it gives up after D (exit 3), and the Lease is deleted. The Lease is named
      LOCK-POD unless --lease says otherwise (a lock set: FIRST-set-HASH-POD, FIRST being
      its first lock in sorted order); a pod's own Lease of that name left by an earlier
      run of its container (a restart) is taken back.
  release LEASE|LOCK|LOCK... [--wait D] [--force]
      Deletes the Lease (given a LOCK instead: this pod's claim on it, alone or in a set;
      given several: this pod's claim on that set) and waits until the controller has
      released it. Run from the holder's own pod, it first marks the grant released, and
      the lock moves at once. From anywhere else the deletion is a revocation: the holder
      may still be running, so the lock moves only once the validity published to it has
      ended (or its pod has stopped); --force marks it released anyway.
  status [LOCK] [-A] [-o table|json]
      Holders, fencing tokens and the queue in the order it is served, with priorities and
      waiting times, for one lock or every lock of the namespace (-A: all namespaces).
  run LOCK [LOCK...] [acquire flags] [--grace D] [--safety-margin D] -- CMD ARGS...
      Acquires, runs CMD with ESLEASE_FENCING_TOKEN, ESLEASE_LOCK (namespace/lock; a set's
      locks comma-separated) and ESLEASE_LEASE set, and follows the Lease and the
      namespace's session (eslease-session). It stops CMD (SIGTERM, then SIGKILL after
      --grace, default min(10s, ttl/5)) the moment the Lease stops being Held, the session
      lists the grant as revoked, or less than --safety-margin (default min(2s, ttl/5)) +
      --grace is left of the validity the session published; it never resumes. When CMD
      ends, whatever it left running in its process group is stopped the same way, then the
      Lease is released (with --hold-at-least D, not before D after the grant). Exits with
      CMD's exit code, or 4 when the lock was lost.
  sidecar [--listen 127.0.0.1:8642] [--file PATH] [--on-grant CMD] [--on-loss CMD]
      Runs beside the pod's containers (a native sidecar) and tells them within milliseconds
      which locks the pod holds, whatever their language: GET /holds lists the grants as
      JSON ({"holds": [{"lease", "lock" or "locks", "token", "validUntil"}]}), GET
      /holds/LOCK answers 200 with the grant while the pod holds LOCK and 503 otherwise (a
      readiness probe), GET /healthz. It follows every Lease of the namespace whose holder
      is the pod (claim or election mode) and the namespace's session, and stops reporting a
      grant --safety-margin before the validity the session published ends unless it sees a
      renewal, never to report it again. --file keeps the same JSON in a file; --on-grant
      and --on-loss run CMD with ESLEASE_EVENT, ESLEASE_FENCING_TOKEN, ESLEASE_LOCK,
      ESLEASE_LEASE, ESLEASE_VALID_UNTIL (and ESLEASE_LOSS_REASON) set, one at a time.

  The pod is --pod, else POD_NAME (and POD_NAMESPACE, POD_UID) from the downward API, else
  the files name, namespace and uid in --podinfo-dir (default /etc/podinfo). Without
  POD_UID the pod is read once for its uid.

)";

constexpr std::string_view kDirectMode = R"(
Direct mode (--es URL):
  acquire LOCK [LOCK...] [--namespace NS] [--holder NAME] [--ttl 30s] [--wait D]
               [--capacity N] [--exclusive]
      Takes the lock, waiting while another holder has it (up to D with --wait, then
      exit 3), and prints the fencing token.
  renew LOCK [LOCK...] --holder NAME [--namespace NS] [--ttl D] [--capacity N]
      Extends the holder's grant by its TTL (or --ttl) and prints the fencing token.
  release LOCK [LOCK...] --holder NAME [--namespace NS] [--capacity N]
      Gives the holder's grant up.
  status [LOCK] [--namespace NS] [--capacity N] [--output table|json]
      Shows the holders of one lock (realtime) or of every lock (search: about a second
      behind) against its capacity, each with its access and slots.
  run LOCK [LOCK...] [acquire flags] [--grace D] -- CMD ARGS...
      Holds the lock while CMD runs (ESLEASE_FENCING_TOKEN and ESLEASE_LOCK in its
      environment), renews it every ttl/3, stops CMD (SIGTERM, then SIGKILL after --grace,
      default min(10s, ttl/3)) if the lock is lost or cannot be confirmed before it expires,
      and releases it when CMD exits.
  renew, release and status find a lock's capacity in its documents; --capacity says it
  when a semaphore's first slot is free.

)";

constexpr std::string_view kRulesAndExitCodes = R"(
Lock shapes, the same in both modes: acquire and run take several LOCKs (a lock set of 2
to 32, held all or none with one fencing token; ESLEASE_LOCK lists them, comma-separated;
in Kubernetes mode one Lease's spec.lockNames), --capacity N (1..1000, default 1: up to N
holders at once, each holding one slot; every claim on a lock states the same N) and
--exclusive (holds the lock alone, all of its slots: the writer of a read-write lock whose
readers are the default Shared holders). At capacity 1 the two are the same.

In both modes acquire and run wait as long as it takes unless --wait D is given. --wait 0s
is a try-lock: granted only if it can be at once, else exit 3 at once. In Kubernetes mode
the controller decides it (the Lease's acquireTimeoutSeconds is 0) and the Lease is deleted
when it is not granted; in direct mode it is one attempt. LOCK is 1-253 lower-case letters,
digits, '-', '_' and '.', starting and ending with a letter or digit (the Lease's rule for
spec.lockName), in both modes.

Exit codes:
  0  done
  1  failed (the message says why; a Lease this command created was deleted)
  2  usage error: bad flags, names or pod identity; nothing was contacted or changed
  3  --wait ran out before the lock was held (--wait 0: it could not be granted at once; or,
     for release, released)
  4  run: the lock was lost or could not be confirmed, and CMD was stopped
  run otherwise exits with CMD's code (127: CMD could not be started; 128+N: ended by
  signal N, also when eslease itself was interrupted by signal N while waiting).

Flags are written --flag VALUE or --flag=VALUE, with one dash or two (-n NS, -n=NS). A
switch (a flag without VALUE) alone is on; --flag=BOOL sets it, BOOL being true, t, 1,
false, f or 0 in any letter case.
Durations: 500ms, 30s, 5m, 1h, 1m30s.
)";

// "  -n, --namespace NS" and its help, for each flag of `mode`.
std::string flag_lines(FlagMode mode) {
  std::string out;
  for (const ToolFlag& flag : tool_flags()) {
    if (flag.mode != mode) continue;
    std::string left = "  ";
    if (flag.syntax.short_name) left += std::string("-") + flag.syntax.short_name + ", ";
    left += "--" + std::string(flag.syntax.name);
    if (!flag.syntax.value_name.empty()) left += " " + std::string(flag.syntax.value_name);
    out += option_help_line(left, flag.help, flag.default_text, kColumn, kWidth);
  }
  return out;
}

}  // namespace

std::string usage() {
  return std::string(kIntroductionAndKubernetesMode) + flag_lines(FlagMode::kKubernetes) +
         std::string(kDirectMode) + flag_lines(FlagMode::kDirect) + "\nBoth modes:\n" +
         flag_lines(FlagMode::kBoth) + std::string(kRulesAndExitCodes);
}

}  // namespace eslease::cli
