// The `eslease` tool: parsing, dispatch and output. Direct mode (--es) locks straight in
// Elasticsearch; Kubernetes mode (kube_mode.h) declares Leases for the controller. The
// backends, the environment and the clock are injected so every command is tested without
// a network.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/kube_mode.h"
#include "cli/options.h"
#include "cli/pod_identity.h"
#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::cli {

using StoreFactory = std::function<Result<std::unique_ptr<lock::LockStore>>(const lock::ConnectionSettings&)>;

struct Environment {
  std::ostream& out;
  std::ostream& err;
  Clock& clock;
  StoreFactory open_store;
  std::string hostname = "localhost";
  int pid = 0;
  // Kubernetes mode.
  KubeConnector connect_kube;  // empty: only direct mode is available
  Getenv getenv;
  ReadSmallFile read_file;
  bool catch_signals = true;  // SIGINT/SIGTERM end a wait and clean up
};

// The production factory: lock::open_lock_store on `clock`.
StoreFactory elasticsearch_store_factory(Clock& clock);

// Runs one invocation (args without the program name); returns the exit code.
int run_cli(const std::vector<std::string>& args, Environment& env);

}  // namespace eslease::cli
