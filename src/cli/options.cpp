#include "cli/options.h"

#include <functional>
#include <map>

#include "common/duration.h"

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

}  // namespace

Result<Options> parse_options(const std::vector<std::string>& args) {
  Options options;
  std::vector<std::string> positional;
  using Setter = std::function<Status(const std::string&)>;
  const std::map<std::string, Setter> valued{
      {"--es",
       [&](const std::string& v) {
         options.connection.hosts.push_back(v);
         return Status();
       }},
      {"--index",
       [&](const std::string& v) {
         options.connection.index = v;
         return Status();
       }},
      {"--es-ca-file",
       [&](const std::string& v) {
         options.connection.ca_file = v;
         return Status();
       }},
      {"--es-username",
       [&](const std::string& v) {
         options.connection.username = v;
         return Status();
       }},
      {"--es-password-file",
       [&](const std::string& v) {
         options.connection.password_file = v;
         return Status();
       }},
      {"--es-api-key-file",
       [&](const std::string& v) {
         options.connection.api_key_file = v;
         return Status();
       }},
      {"--es-bearer-token-file",
       [&](const std::string& v) {
         options.connection.bearer_token_file = v;
         return Status();
       }},
      {"--es-timeout",
       [&](const std::string& v) {
         return check_duration_flag("--es-timeout", v, options.connection.request_timeout, Millis(100));
       }},
      {"--namespace",
       [&](const std::string& v) {
         options.ns = v;
         return Status();
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
       [&](const std::string& v) { return check_duration_flag("--wait", v, options.wait, Millis(0)); }},
      {"--grace",
       [&](const std::string& v) {
         Millis grace{0};
         auto s = check_duration_flag("--grace", v, grace, Millis(0));
         if (s.ok()) options.grace = grace;
         return s;
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
    if (arg == "--es-insecure-skip-tls-verify") {
      options.connection.insecure_skip_tls_verify = true;
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      std::string name = arg;
      std::optional<std::string> value;
      if (auto eq = arg.find('='); eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
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
  const std::size_t max_positional = 2;
  if (positional.size() > max_positional)
    return usage_error("unexpected argument '" + positional[2].substr(0, 64) + "'");
  if (positional.size() == 2) options.lock = positional[1];
  if (takes_lock && options.lock.empty()) return usage_error(positional[0] + " needs a LOCK name");
  if ((options.command == Command::kRenew || options.command == Command::kRelease) &&
      options.holder.empty()) {
    return usage_error(positional[0] + " needs --holder NAME (the holder given to acquire)");
  }
  if (options.command == Command::kRun && options.child.empty()) {
    return usage_error("run needs a command after --, e.g. eslease run LOCK -- ./job.sh");
  }
  if (options.command != Command::kRun && !options.child.empty()) {
    return usage_error("only run takes a command after --");
  }
  if (options.grace && *options.grace >= options.ttl) {
    return usage_error(
        "--grace must be shorter than --ttl: the command must be stopped before the lock expires");
  }
  if (options.connection.hosts.empty())
    return usage_error("give at least one Elasticsearch URL with --es URL");
  return options;
}

std::string usage() {
  return R"(usage: eslease [connection flags] COMMAND [flags]

Locks kept as Elasticsearch documents, straight from the command line (direct mode).

Commands:
  acquire LOCK [--namespace NS] [--holder NAME] [--ttl 30s] [--wait 0s]
      Takes the lock, waiting up to --wait while another holder has it, and prints the
      fencing token. Exit 0 when held, 1 when not.
  renew LOCK --holder NAME [--namespace NS] [--ttl D]
      Extends the holder's lock by its TTL (or --ttl) and prints the fencing token.
  release LOCK --holder NAME [--namespace NS]
      Gives the holder's lock up.
  status [LOCK] [--namespace NS] [--output table|json]
      Shows one lock (realtime) or every lock (search: about a second behind).
  run LOCK [--namespace NS] [--holder NAME] [--ttl 30s] [--wait 0s] [--grace D] -- CMD ARGS...
      Holds the lock while CMD runs (ESLEASE_FENCING_TOKEN in its environment), renews
      it every ttl/3, stops CMD (SIGTERM, then SIGKILL after --grace, default
      min(10s, ttl/3)) if the lock is lost or cannot be confirmed before it expires, and
      releases it when CMD exits. Exits with CMD's exit code.

Connection flags:
  --es URL                       Elasticsearch URL (repeat for several hosts)
  --index NAME                   lock index (default eslease-locks)
  --es-ca-file FILE              CA bundle (PEM) for https
  --es-insecure-skip-tls-verify  do not verify the server certificate
  --es-username NAME             basic authentication, with --es-password-file FILE
  --es-api-key-file FILE         API key ("id:key" or its base64 form)
  --es-bearer-token-file FILE    bearer token
  --es-timeout D                 per-request timeout (default 10s)

Durations: 500ms, 30s, 5m, 1h, 1m30s. Usage errors exit 2.
)";
}

}  // namespace eslease::cli
