#include "cli/options.h"

#include <algorithm>
#include <functional>
#include <map>

#include "api/lease_api.h"
#include "api/session.h"
#include "common/duration.h"
#include "common/text.h"
#include "lock/slots.h"

namespace eslease::cli {
namespace {

Error usage_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Result<Command> parse_command(const std::string& word) {
  static const std::map<std::string, Command> kCommands{
      {"acquire", Command::kAcquire}, {"renew", Command::kRenew}, {"release", Command::kRelease},
      {"status", Command::kStatus},   {"run", Command::kRun},     {"help", Command::kHelp}};
  auto it = kCommands.find(word);
  if (it == kCommands.end()) {
    return usage_error("unknown command '" + word.substr(0, 64) + "' (acquire, renew, release, status, run)");
  }
  return it->second;
}

Status check_duration_flag(const std::string& flag, const std::string& value, Millis& out, Millis minimum) {
  auto parsed = parse_duration(value);
  if (!parsed.ok()) return usage_error(flag + ": " + parsed.error().message);
  if (*parsed < minimum) return usage_error(flag + " must be at least " + format_duration(minimum));
  out = *parsed;
  return {};
}

// Lease durations and the run deadlines of Kubernetes mode, checked before anything is
// contacted when --ttl is given (else once the Lease shows its duration). The Lease's
// leaseDurationSeconds is whole seconds.
Status check_kubernetes_timings(const Options& options) {
  if (options.ttl_given && (options.ttl.count() % 1000 != 0 || options.ttl > Millis(3'600'000))) {
    return usage_error("--ttl must be whole seconds from 1s to 1h in Kubernetes mode (leaseDurationSeconds)");
  }
  if (options.command != Command::kRun || !options.ttl_given) return {};
  if (auto s = check_run_slack(options.ttl, kube_grace(options, options.ttl),
                               kube_safety_margin(options, options.ttl));
      !s.ok()) {
    return usage_error(s.error().message);
  }
  return {};
}

// "--es-timeout" -> its row of the connection flags both executables share; nullptr for
// any other flag.
const lock::ConnectionFlag* connection_flag(const std::string& name) {
  return name.starts_with("--") ? lock::find_connection_flag(std::string_view(name).substr(2)) : nullptr;
}

// A flag of the other mode is a mistake worth stopping for: it would otherwise be ignored.
// `connection_flags_given`: the --es* and --index flags on the command line.
Status check_mode_flags(const Options& options, const std::string& command_word,
                        const std::vector<std::string>& connection_flags_given) {
  const KubeOptions& k = options.kube;
  if (options.mode == Mode::kDirect) {
    const std::vector<std::pair<bool, const char*>> kube_only{
        {!k.kubeconfig.empty(), "--kubeconfig"},
        {!k.context.empty(), "--context"},
        {!k.pod.empty(), "--pod"},
        {!k.lease.empty(), "--lease"},
        {!k.podinfo_dir.empty(), "--podinfo-dir"},
        {k.priority.has_value(), "--priority"},
        {k.liveness_grace.has_value(), "--liveness-grace"},
        {k.safety_margin.has_value(), "--safety-margin"},
        {k.all_namespaces, "--all-namespaces"},
        {k.force, "--force"}};
    for (const auto& [given, flag] : kube_only) {
      if (given) {
        return usage_error(std::string(flag) +
                           " is for Kubernetes mode; it cannot be combined with --es (direct mode)");
      }
    }
    return {};
  }
  std::vector<std::string> direct_only = connection_flags_given;
  if (!options.holder.empty()) direct_only.push_back("--holder");
  if (!direct_only.empty()) {
    return usage_error(direct_only.front() +
                       " is for direct mode and needs --es URL; in Kubernetes mode the holder is a pod "
                       "(--pod) and the controller talks to Elasticsearch");
  }
  if (options.command == Command::kRenew) {
    return usage_error(command_word +
                       " is for direct mode (--es URL); in Kubernetes mode the controller renews held locks");
  }
  if (k.all_namespaces && options.command != Command::kStatus) {
    return usage_error("--all-namespaces is only for status");
  }
  if (k.force && options.command != Command::kRelease) return usage_error("--force is only for release");
  if (k.all_namespaces && options.ns_given) {
    return usage_error("give either --namespace or --all-namespaces, not both");
  }
  if (!k.lease.empty() && options.command != Command::kAcquire && options.command != Command::kRun) {
    return usage_error("--lease names the Lease that acquire or run creates; release takes it as LEASE");
  }
  return check_kubernetes_timings(options);
}

// Lock sets and shapes: the locks distinct; Kubernetes mode has no controller support yet.
Status check_lock_shape(const Options& options) {
  for (std::size_t i = 0; i < options.locks.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (options.locks[i] == options.locks[j])
        return usage_error("lock " + options.locks[i].substr(0, 64) +
                           " is named twice; a lock set names each lock once");
    }
  }
  if (options.shared && options.command != Command::kAcquire && options.command != Command::kRun)
    return usage_error("--shared is for acquire and run");
  if (!options.connection.hosts.empty() || !has_lock_shape(options)) return {};
  return usage_error(
      "lock sets, --capacity above 1 and --shared are not supported in Kubernetes mode yet: a Lease claims "
      "one "
      "lock, capacity 1, Exclusive (controller support is coming). Direct mode (--es URL) has them now");
}

}  // namespace

bool has_lock_shape(const Options& options) {
  return options.locks.size() > 1 || options.capacity > 1 || options.shared;
}

Millis kube_safety_margin(const Options& options, Millis ttl) {
  return options.kube.safety_margin.value_or(api::default_holder_margin(ttl));
}

Millis kube_grace(const Options& options, Millis ttl) {
  return options.grace.value_or(api::default_holder_grace(ttl));
}

Status check_run_slack(Millis ttl, Millis grace, Millis margin) {
  if (api::holder_slack(ttl, grace, margin) > Millis(0)) return {};
  return usage_error("--grace plus --safety-margin (" + format_duration(grace) + " + " +
                     format_duration(margin) + ") must be shorter than two thirds of the lease duration (" +
                     format_duration(ttl) +
                     "): a holder's validity is renewed every third of it, so the command would be stopped "
                     "between any two renewals");
}

std::optional<std::string> run_slack_warning(Millis ttl, Millis grace, Millis margin) {
  const Millis slack = api::holder_slack(ttl, grace, margin);
  if (slack >= api::kDefaultRenewalPause) return std::nullopt;
  return "with a lease duration of " + format_duration(ttl) + ", --grace " + format_duration(grace) +
         " and --safety-margin " + format_duration(margin) + " the command rides out only " +
         format_duration(slack) + " without a renewal; a controller failover takes up to " +
         format_duration(api::kDefaultRenewalPause) +
         " at the controller's defaults and would stop it (use the default 60s --ttl, or a shorter --grace)";
}

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options options;
  std::vector<std::string> positional;
  using Setter = std::function<Status(const std::string&)>;
  const std::map<std::string, Setter> valued{
      {"--namespace",
       [&](const std::string& v) {
         options.ns = v;
         options.ns_given = true;
         return Status();
       }},
      {"--kubeconfig",
       [&](const std::string& v) {
         options.kube.kubeconfig = v;
         return Status();
       }},
      {"--context",
       [&](const std::string& v) {
         options.kube.context = v;
         return Status();
       }},
      {"--pod",
       [&](const std::string& v) {
         options.kube.pod = v;
         return Status();
       }},
      {"--lease",
       [&](const std::string& v) {
         options.kube.lease = v;
         return Status();
       }},
      {"--podinfo-dir",
       [&](const std::string& v) {
         options.kube.podinfo_dir = v;
         return Status();
       }},
      {"--priority",
       [&](const std::string& v) {
         const std::string lower = to_lower(v);
         if (lower == "foreground")
           options.kube.priority = api::to_string(api::Priority::kForeground);
         else if (lower == "background")
           options.kube.priority = api::to_string(api::Priority::kBackground);
         else
           return Status(usage_error("--priority must be Foreground or Background"));
         return Status();
       }},
      {"--liveness-grace",
       [&](const std::string& v) {
         Millis grace{0};
         auto s = check_duration_flag("--liveness-grace", v, grace, Millis(0));
         if (!s.ok()) return s;
         if (grace.count() % 1000 != 0 || grace > Millis(3'600'000))
           return Status(usage_error("--liveness-grace must be whole seconds from 0s to 1h"));
         options.kube.liveness_grace = grace;
         return Status();
       }},
      {"--safety-margin",
       [&](const std::string& v) {
         Millis margin{0};
         auto s = check_duration_flag("--safety-margin", v, margin, Millis(0));
         if (s.ok()) options.kube.safety_margin = margin;
         return s;
       }},
      {"--holder",
       [&](const std::string& v) {
         options.holder = v;
         return Status();
       }},
      {"--ttl",
       [&](const std::string& v) {
         options.ttl_given = true;
         return check_duration_flag("--ttl", v, options.ttl, Millis(1000));
       }},
      {"--wait",
       [&](const std::string& v) {
         options.wait_given = true;
         return check_duration_flag("--wait", v, options.wait, Millis(0));
       }},
      {"--grace",
       [&](const std::string& v) {
         Millis grace{0};
         auto s = check_duration_flag("--grace", v, grace, Millis(0));
         if (s.ok()) options.grace = grace;
         return s;
       }},
      {"--capacity",
       [&](const std::string& v) {
         const bool digits =
             !v.empty() && v.size() <= 4 && v.find_first_not_of("0123456789") == std::string::npos;
         if (!digits || std::stoll(v) < 1 || std::stoll(v) > lock::kMaxCapacity)
           return Status(usage_error("--capacity must be a whole number from 1 to " +
                                     std::to_string(lock::kMaxCapacity)));
         options.capacity = std::stoll(v);
         options.capacity_given = true;
         return Status();
       }},
      {"--output",
       [&](const std::string& v) {
         if (v == "json")
           options.output = OutputFormat::kJson;
         else if (v == "table")
           options.output = OutputFormat::kTable;
         else
           return Status(usage_error("--output must be table or json"));
         return Status();
       }},
  };

  bool help = false;
  std::vector<std::string> connection_flags_given;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      options.child.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      help = true;
      continue;
    }
    if (arg == "--version") {
      options.command = Command::kVersion;
      return options;
    }
    if (arg == "--shared") {
      options.shared = true;
      continue;
    }
    if (arg == "-A" || arg == "--all-namespaces") {
      options.kube.all_namespaces = true;
      continue;
    }
    if (arg == "--force") {
      options.kube.force = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      std::string name = arg;
      std::optional<std::string> value;
      if (auto eq = arg.find('='); eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      }
      // kubectl's short forms, which people type out of habit (also as -n=NS).
      if (name == "-o") name = "--output";
      if (name == "-n") name = "--namespace";
      if (const lock::ConnectionFlag* flag = connection_flag(name)) {
        if (flag->kind == lock::ConnectionFlag::Kind::kBool) {
          if (!value) value = "true";
        } else if (!value) {
          if (i + 1 >= args.size()) return usage_error(name + " needs a value");
          value = args[++i];
        }
        if (auto s = flag->apply(options.connection, *value); !s.ok())
          return usage_error(name + ": " + s.error().message);
        connection_flags_given.push_back(name);
        continue;
      }
      auto setter = valued.find(name);
      if (setter == valued.end()) return usage_error("unknown flag " + name.substr(0, 64));
      if (!value) {
        if (i + 1 >= args.size()) return usage_error(name + " needs a value");
        value = args[++i];
      }
      if (auto s = setter->second(*value); !s.ok()) return s.error();
      continue;
    }
    positional.push_back(arg);
  }
  if (help || positional.empty()) {
    options.command = Command::kHelp;
    return options;
  }
  auto command = parse_command(positional[0]);
  if (!command.ok()) return command.error();
  options.command = *command;
  if (options.command == Command::kHelp) return options;

  const bool takes_lock = options.command != Command::kStatus;
  // acquire, run, renew and release take a lock set: several LOCK arguments.
  const std::size_t max_positional = takes_lock ? 1 + lock::kMaxLockSet : 2;
  if (positional.size() > max_positional) {
    if (takes_lock)
      return usage_error("a lock set has at most " + std::to_string(lock::kMaxLockSet) + " locks");
    return usage_error("unexpected argument '" + positional[2].substr(0, 64) + "'");
  }
  if (positional.size() >= 2) options.lock = positional[1];
  options.locks.assign(positional.begin() + std::min<std::ptrdiff_t>(1, std::ptrdiff_t(positional.size())),
                       positional.end());
  if (auto s = check_lock_shape(options); !s.ok()) return s.error();
  const bool kubernetes = options.connection.hosts.empty();
  if (takes_lock && options.lock.empty()) {
    return usage_error(positional[0] + (kubernetes && options.command == Command::kRelease
                                            ? " needs a LEASE name (acquire prints it) or a LOCK name"
                                            : " needs a LOCK name"));
  }
  if (options.command == Command::kRun && options.child.empty()) {
    return usage_error("run needs a command after --, e.g. eslease run LOCK -- ./job.sh");
  }
  if (options.command != Command::kRun && !options.child.empty()) {
    return usage_error("only run takes a command after --");
  }
  options.mode = kubernetes ? Mode::kKubernetes : Mode::kDirect;
  if (auto s = check_mode_flags(options, positional[0], connection_flags_given); !s.ok()) return s.error();
  if (options.mode == Mode::kDirect) {
    if (auto s = lock::validate(options.connection); !s.ok()) return usage_error(s.error().message);
    if (options.grace && *options.grace >= options.ttl) {
      return usage_error(
          "--grace must be shorter than --ttl: the command must be stopped before the lock expires");
    }
    if ((options.command == Command::kRenew || options.command == Command::kRelease) &&
        options.holder.empty()) {
      return usage_error(positional[0] + " needs --holder NAME (the holder given to acquire)");
    }
  }
  return options;
}

namespace {

// The --help lines of the connection flags, from the table the controller's help uses too.
std::string connection_flag_lines() {
  constexpr std::size_t kColumn = 33;
  constexpr std::size_t kWidth = 96;
  std::string out;
  for (const lock::ConnectionFlag& flag : lock::connection_flags()) {
    std::string left = "  --" + std::string(flag.name);
    if (*flag.value_name) left += " " + std::string(flag.value_name);
    left.resize(std::max(left.size() + 2, kColumn), ' ');
    std::string right = flag.help;
    const bool shown = flag.kind != lock::ConnectionFlag::Kind::kBool && !flag.default_text.empty() &&
                       flag.default_text != "none";
    if (shown) right += " (default: " + flag.default_text + ")";
    out += left + wrap_words(right, kColumn, kWidth - kColumn) + "\n";
  }
  return out;
}

}  // namespace

std::string usage() {
  return std::string(R"(usage: eslease [connection flags] COMMAND [flags]
       eslease --version | --help

Distributed locks for workloads. Kubernetes mode (the default, without --es) declares
Lease objects for a pod and lets eslease-controller decide; the pod
needs no Elasticsearch credentials. Direct mode (--es URL) locks straight in Elasticsearch,
for processes outside Kubernetes.

Kubernetes mode:
  acquire LOCK [--pod P] [--lease NAME] [--priority Foreground|Background] [--ttl 60s]
               [--wait D] [--liveness-grace 10s]
      Creates a Lease claiming LOCK for the pod (owned by it, so it goes when the pod goes),
      waits by watching until the controller grants it, and prints the fencing token. With
      --wait it gives up after D (exit 3), and the Lease is deleted. The Lease is named
      LOCK-POD unless --lease says otherwise; a pod's own LOCK-POD Lease left by an earlier
      run of its container (a restart) is taken back.
  release LEASE|LOCK [--wait D] [--force]
      Deletes the Lease (given a LOCK instead: this pod's claim on it) and waits until the
      controller has released it. Run from the holder's own pod, it first marks the grant
      released, and the lock moves at once. From anywhere else the deletion is a
      revocation: the holder may still be running, so the lock moves only once the validity
      published to it has ended (or its pod has stopped); --force marks it released anyway.
  status [LOCK] [-A] [-o table|json]
      Holders, fencing tokens and the queue in the order it is served, with priorities and
      waiting times, for one lock or every lock of the namespace (-A: all namespaces).
  run LOCK [acquire flags] [--grace D] [--safety-margin D] -- CMD ARGS...
      Acquires, runs CMD with ESLEASE_FENCING_TOKEN, ESLEASE_LOCK (namespace/lock) and
      ESLEASE_LEASE set, and follows the Lease and the namespace's session
      (eslease-session). It stops CMD (SIGTERM, then SIGKILL after --grace, default
      min(10s, ttl/3)) the moment the Lease stops being Held, the session lists the grant as
      revoked, or less than --safety-margin (default min(2s, ttl/5)) + --grace is left of
      the validity the session published; it never resumes. When CMD ends it releases the
      Lease. Exits with CMD's exit code, or 4 when the lock was lost.

  The pod is --pod, else POD_NAME (and POD_NAMESPACE, POD_UID) from the downward API, else
  the files name, namespace and uid in --podinfo-dir (default /etc/podinfo). Without
  POD_UID the pod is read once for its uid.

  --kubeconfig FILE    API server access (default: the in-cluster service account inside a
                       pod, else $KUBECONFIG's first file, else ~/.kube/config)
  --context NAME       kubeconfig context
  -n, --namespace NS   default: the pod's namespace

Direct mode (--es URL):
  acquire LOCK [--namespace NS] [--holder NAME] [--ttl 30s] [--wait D]
      Takes the lock, waiting while another holder has it (up to D with --wait, then
      exit 3), and prints the fencing token.
  renew LOCK --holder NAME [--namespace NS] [--ttl D]
      Extends the holder's lock by its TTL (or --ttl) and prints the fencing token.
  release LOCK --holder NAME [--namespace NS]
      Gives the holder's lock up.
  status [LOCK] [--namespace NS] [--output table|json]
      Shows one lock (realtime) or every lock (search: about a second behind).
  run LOCK [--namespace NS] [--holder NAME] [--ttl 30s] [--wait D] [--grace D] -- CMD ARGS...
      Holds the lock while CMD runs (ESLEASE_FENCING_TOKEN and ESLEASE_LOCK in its
      environment), renews it every ttl/3, stops CMD (SIGTERM, then SIGKILL after --grace,
      default min(10s, ttl/3)) if the lock is lost or cannot be confirmed before it expires,
      and releases it when CMD exits.
  Lock shapes: acquire and run take several LOCKs (a lock set of 2 to 32, held all or none
  with one fencing token; ESLEASE_LOCK lists them, comma-separated), --capacity N (1..1000,
  default 1: up to N holders at once; every claim on a lock must state the same N) and
  --shared (shared holders hold side by side up to the capacity; an exclusive one holds the
  lock alone). renew and release act on the holder's whole grant, release LOCK... [--capacity N].
  Kubernetes mode does not support lock sets, --capacity or --shared yet.

)") + connection_flag_lines() +
         R"(
In both modes acquire and run wait as long as it takes unless --wait D is given (--wait 0s:
one attempt). LOCK is 1-253 lower-case letters, digits, '-', '_' and '.', starting and
ending with a letter or digit (the Lease's rule for spec.lockName), in both modes.

Exit codes:
  0  done
  1  failed (the message says why; a Lease this command created was deleted)
  2  usage error: bad flags, names or pod identity; nothing was contacted or changed
  3  --wait ran out before the lock was held (or, for release, released)
  4  run: the lock was lost or could not be confirmed, and CMD was stopped
  run otherwise exits with CMD's code (127: CMD could not be started; 128+N: ended by
  signal N, also when eslease itself was interrupted by signal N while waiting).

Durations: 500ms, 30s, 5m, 1h, 1m30s.
)";
}

}  // namespace eslease::cli
