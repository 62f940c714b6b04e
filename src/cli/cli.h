// The `eslease` tool in direct mode: parsing, dispatch and output, with the backend and
// the clock injected so every command is tested without a network.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "cli/options.h"
#include "common/clock.h"
#include "lock/lock_store.h"

namespace eslease::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

using StoreFactory = std::function<Result<std::unique_ptr<lock::LockStore>>(const ConnectionOptions&)>;

struct Environment {
  std::ostream& out;
  std::ostream& err;
  Clock& clock;
  StoreFactory open_store;
  std::string hostname = "localhost";
  int pid = 0;
};

// The production factory: cpprest transport, HTTP DocumentApi, Elasticsearch lock store.
StoreFactory elasticsearch_store_factory(Clock& clock);

// Runs one invocation (args without the program name); returns the exit code.
int run_cli(const std::vector<std::string>& args, Environment& env);

// A random 128-bit identifier in hex: the claim id written as leaseUID.
std::string random_claim_id();

}  // namespace eslease::cli
