#include "cli/options.h"

#include <algorithm>
#include <map>

#include "api/lease_api.h"
#include "api/session.h"
#include "cli/flags.h"
#include "common/command_line.h"
#include "common/duration.h"
#include "common/text.h"
#include "lock/slots.h"

namespace eslease::cli {

Error usage_error(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

namespace {

const std::map<std::string, Command>& command_words() {
  static const std::map<std::string, Command> kCommands{
      {"acquire", Command::kAcquire}, {"renew", Command::kRenew}, {"release", Command::kRelease},
      {"status", Command::kStatus},   {"run", Command::kRun},     {"sidecar", Command::kSidecar},
      {"help", Command::kHelp}};
  return kCommands;
}

Result<Command> parse_command(const std::string& word) {
  const std::map<std::string, Command>& kCommands = command_words();
  auto it = kCommands.find(word);
  if (it == kCommands.end()) {
    return usage_error("unknown command '" + word.substr(0, 64) +
                       "' (acquire, renew, release, status, run, sidecar)");
  }
  return it->second;
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

// Flags of one command alone, by that command's word.
const std::map<std::string_view, std::string> kCommandOfFlag = {{"listen", "sidecar"},
                                                                {"file", "sidecar"},
                                                                {"on-grant", "sidecar"},
                                                                {"on-loss", "sidecar"},
                                                                {"hold-at-least", "run"}};

// A flag of the other mode, or of another command, is a mistake worth stopping for: it would
// otherwise be ignored.
Status check_flag_modes(const Options& options, const std::vector<const ToolFlag*>& given) {
  if (options.command == Command::kSidecar && options.mode == Mode::kDirect)
    return usage_error(
        "sidecar is for Kubernetes mode: it reports the grants the controller makes to its pod");
  for (const ToolFlag* flag : given) {
    const std::string name = "--" + std::string(flag->syntax.name);
    if (options.mode == Mode::kDirect && flag->mode == FlagMode::kKubernetes)
      return usage_error(name + " is for Kubernetes mode; it cannot be combined with --es (direct mode)");
    if (options.mode == Mode::kKubernetes && flag->mode == FlagMode::kDirect)
      return usage_error(name +
                         " is for direct mode and needs --es URL; in Kubernetes mode the holder is a pod "
                         "(--pod) and the controller talks to Elasticsearch");
    if (auto only = kCommandOfFlag.find(flag->syntax.name);
        only != kCommandOfFlag.end() && command_words().at(only->second) != options.command)
      return usage_error(name + " is only for " + only->second);
  }
  return {};
}

// What Kubernetes mode does not do, or only for some commands.
Status check_kubernetes_flags(const Options& options, const std::string& command_word) {
  const KubeOptions& k = options.kube;
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

// Lock sets and shapes, the same in both modes: the locks distinct.
Status check_lock_shape(const Options& options) {
  for (auto lock = options.locks.begin(); lock != options.locks.end(); ++lock) {
    if (std::find(options.locks.begin(), lock, *lock) != lock)
      return usage_error("lock " + lock->substr(0, 64) + " is named twice; a lock set names each lock once");
  }
  if (options.access_given && options.command != Command::kAcquire && options.command != Command::kRun)
    return usage_error("--shared and --exclusive are for acquire and run");
  return {};
}

}  // namespace

Millis kube_safety_margin(const Options& options, Millis ttl) {
  return options.kube.safety_margin.value_or(api::default_holder_margin(ttl));
}

Millis kube_grace(const Options& options, Millis ttl) {
  return options.grace.value_or(api::default_holder_grace(ttl));
}

Status check_run_slack(Millis ttl, Millis grace, Millis margin) {
  if (api::holder_slack(ttl, grace, margin) > Millis(0)) return {};
  return usage_error("--grace plus --safety-margin (" + format_duration(grace) + " + " +
                     format_duration(margin) +
                     ") must be shorter than three quarters of the lease duration (" + format_duration(ttl) +
                     "): a holder's validity is renewed every quarter of it, so the command would be stopped "
                     "between any two renewals");
}

std::optional<std::string> run_slack_warning(Millis ttl, Millis grace, Millis margin) {
  const Millis slack = api::holder_slack(ttl, grace, margin);
  if (slack >= api::kDefaultRenewalPause) return std::nullopt;
  return "with a lease duration of " + format_duration(ttl) + ", --grace " + format_duration(grace) +
         " and --safety-margin " + format_duration(margin) + " the command rides out only " +
         format_duration(slack) + " without a renewal; a controller failover takes up to " +
         format_duration(api::kDefaultRenewalPause) +
         " at the controller's defaults and would stop it (use the default " +
         format_duration(api::lease_duration(api::kDefaultLeaseDurationSeconds)) +
         " --ttl, or a shorter --grace)";
}

namespace {

// Reads every argument against the table, applying each flag as it comes; stops at --version
// (which needs nothing else) and at "--" (the rest is run's command).
Result<ArgsRead> read_args(const std::vector<std::string>& args) {
  ArgsRead read;
  for (std::size_t next = 0; next < args.size();) {
    auto word = read_command_line_word(args, next, tool_flag_syntax());
    if (!word.ok()) return word.error();
    switch (word->kind) {
      case CommandLineWord::Kind::kEndOfOptions:
        read.options.child.assign(args.begin() + static_cast<std::ptrdiff_t>(next), args.end());
        return read;
      case CommandLineWord::Kind::kArgument:
        read.positional.push_back(word->value);
        break;
      case CommandLineWord::Kind::kUnknownOption:
        return usage_error("unknown flag " + word->spelled.substr(0, 64));
      case CommandLineWord::Kind::kOption: {
        const ToolFlag& flag = tool_flags()[word->row];
        if (auto s = flag.set(read, word->value); !s.ok()) return s.error();
        read.given.push_back(&flag);
        if (read.options.command == Command::kVersion) return read;
        break;
      }
    }
  }
  return read;
}

// The LOCK arguments after the command: acquire, run, renew and release take a lock set
// (several LOCKs), status at most one, sidecar none.
Status take_locks(Options& options, const std::vector<std::string>& positional) {
  if (options.command == Command::kSidecar && positional.size() > 1)
    return usage_error("sidecar takes no LOCK: it reports every grant its pod holds");
  const bool takes_lock = options.command != Command::kStatus && options.command != Command::kSidecar;
  const std::size_t max_positional = takes_lock ? 1 + lock::kMaxLockSet : 2;
  if (positional.size() > max_positional) {
    if (takes_lock)
      return usage_error("a lock set has at most " + std::to_string(lock::kMaxLockSet) + " locks");
    return usage_error("unexpected argument '" + positional[2].substr(0, 64) + "'");
  }
  if (positional.size() >= 2) options.lock = positional[1];
  options.locks.assign(positional.begin() + 1, positional.end());
  if (auto s = check_lock_shape(options); !s.ok()) return s;
  const bool kubernetes = options.connection.hosts.empty();
  if (takes_lock && options.lock.empty()) {
    return usage_error(positional[0] + (kubernetes && options.command == Command::kRelease
                                            ? " needs a LEASE name (acquire prints it) or a LOCK name"
                                            : " needs a LOCK name"));
  }
  if (options.command == Command::kRun && options.child.empty())
    return usage_error("run needs a command after --, e.g. eslease run LOCK -- ./job.sh");
  if (options.command != Command::kRun && !options.child.empty())
    return usage_error("only run takes a command after --");
  return {};
}

// Direct mode: the connection settings as a whole, and what the command needs of them.
Status check_direct(const Options& options, const std::string& command_word) {
  if (auto s = lock::validate(options.connection); !s.ok()) return usage_error(s.error().message);
  if (options.grace && *options.grace >= options.ttl)
    return usage_error(
        "--grace must be shorter than --ttl: the command must be stopped before the lock expires");
  if ((options.command == Command::kRenew || options.command == Command::kRelease) && options.holder.empty())
    return usage_error(command_word + " needs --holder NAME (the holder given to acquire)");
  return {};
}

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
  auto read = read_args(args);
  if (!read.ok()) return read.error();
  Options& options = read->options;
  const std::vector<std::string>& positional = read->positional;
  if (options.command == Command::kVersion) return std::move(options);
  if (read->help || positional.empty()) {
    options.command = Command::kHelp;
    return std::move(options);
  }
  auto command = parse_command(positional[0]);
  if (!command.ok()) return command.error();
  options.command = *command;
  if (options.command == Command::kHelp) return std::move(options);
  if (auto s = take_locks(options, positional); !s.ok()) return s.error();
  options.mode = options.connection.hosts.empty() ? Mode::kKubernetes : Mode::kDirect;
  if (auto s = check_flag_modes(options, read->given); !s.ok()) return s.error();
  const Status checked = options.mode == Mode::kDirect ? check_direct(options, positional[0])
                                                       : check_kubernetes_flags(options, positional[0]);
  if (!checked.ok()) return checked.error();
  return std::move(options);
}

}  // namespace eslease::cli
