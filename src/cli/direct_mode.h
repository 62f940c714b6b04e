// Direct mode (--es URL): the tool locks straight in Elasticsearch, for processes outside
// Kubernetes. Every command serves every lock shape one way: one lock is a lock of capacity 1
// with one slot, several LOCK arguments a set, --capacity N a semaphore, --exclusive a writer.
// The documents are those the controller reads, and respects as it respects any it did not write.
#pragma once

#include "cli/cli.h"

namespace eslease::cli {

// Runs one direct-mode command; names are checked before anything is contacted.
int run_direct_mode(const Options& options, Environment& env);

// A lock still held when --wait runs out exits 3, as in Kubernetes mode, whatever kept it from
// us at the end (a holder, someone moving first, grants paused for the fencing tokens); a
// backend that cannot be reached stays a failure (1).
int acquire_exit_code(const Error& error);

}  // namespace eslease::cli
