#include "cli/cli.h"

#include <ostream>

#include "cli/direct_mode.h"
#include "cli/flags.h"

namespace eslease::cli {

StoreFactory elasticsearch_store_factory(Clock& clock) {
  return [&clock](const lock::ConnectionSettings& connection) {
    return lock::open_lock_store(connection, clock);
  };
}

int run_cli(const std::vector<std::string>& args, Environment& env) {
  auto parsed = parse_options(args);
  if (!parsed.ok()) {
    env.err << "eslease: " << parsed.error().message << "\nRun 'eslease --help' for usage.\n";
    return kExitUsage;
  }
  const Options& options = *parsed;
  if (options.command == Command::kHelp) {
    env.out << usage();
    return kExitOk;
  }
  if (options.command == Command::kVersion) {
    env.out << "eslease " << ESLEASE_VERSION << "\n";
    return kExitOk;
  }
  if (options.mode == Mode::kKubernetes) return run_kubernetes_mode(options, env);
  return run_direct_mode(options, env);
}

}  // namespace eslease::cli
