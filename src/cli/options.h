// Command-line parsing for `eslease`, both modes. Pure: no I/O, so every flag rule is
// unit-tested. Which mode a flag belongs to is checked here too, so a direct-mode flag given
// in Kubernetes mode (or the reverse) is a usage error, never silently ignored.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/lease_api.h"
#include "common/clock.h"
#include "common/result.h"
#include "lock/connection.h"

namespace eslease::cli {

enum class Command { kHelp, kVersion, kAcquire, kRenew, kRelease, kStatus, kRun, kSidecar };
// Direct mode locks straight in Elasticsearch (--es); Kubernetes mode declares Lease objects
// and lets the controller decide (--kubeconfig, or the in-cluster service account).
enum class Mode { kDirect, kKubernetes };
enum class OutputFormat { kTable, kJson };

// Kubernetes mode only.
struct KubeOptions {
  std::string kubeconfig;                // --kubeconfig; empty: the in-cluster service account
  std::string context;                   // --context
  std::string pod;                       // --pod; empty: this pod (POD_NAME or the downward-API files)
  std::string lease;                     // --lease NAME for acquire/run; default <lock>-<pod>
  std::string podinfo_dir;               // --podinfo-dir; empty: /etc/podinfo
  std::optional<std::string> priority;   // --priority Foreground|Background
  std::optional<Millis> liveness_grace;  // --liveness-grace (whole seconds)
  std::optional<Millis> safety_margin;   // --safety-margin (run)
  bool all_namespaces = false;           // -A / --all-namespaces (status)
  bool force = false;                    // --force (release): hand over at once for another pod
};

// `eslease sidecar` (Kubernetes mode): where it tells its pod's grants.
inline constexpr const char* kDefaultSidecarListen = "127.0.0.1:8642";
struct SidecarFlags {
  std::string listen = kDefaultSidecarListen;  // --listen HOST:PORT for /holds and /healthz
  std::string file;                            // --file PATH: the same JSON, kept current
  std::string on_grant;                        // --on-grant CMD, run by /bin/sh -c
  std::string on_loss;                         // --on-loss CMD
};

struct Options {
  Command command = Command::kHelp;
  Mode mode = Mode::kKubernetes;
  lock::ConnectionSettings connection;  // direct mode: the --es* flags and --index
  KubeOptions kube;
  std::string lock;  // positional LOCK (the Lease name for release in Kubernetes mode)
  // Every LOCK given: several make a lock set (in Kubernetes mode a Lease's spec.lockNames).
  // Lock shapes: --capacity N (a semaphore of Shared holders) and --exclusive (a writer,
  // holding every slot); --shared states the default.
  std::vector<std::string> locks;
  std::int64_t capacity = 1;
  bool capacity_given = false;
  api::Access access = api::kDefaultAccess;
  bool access_given = false;
  std::string ns = "default";      // --namespace
  bool ns_given = false;           // Kubernetes mode defaults to the pod's namespace instead
  std::string holder;              // --holder (required for renew/release)
  Millis ttl = lock::kDefaultTtl;  // --ttl
  bool ttl_given = false;
  Millis wait{0};                       // --wait
  bool wait_given = false;              // without --wait both modes wait without limit
  std::optional<Millis> grace;          // --grace (run)
  std::optional<Millis> hold_at_least;  // --hold-at-least (run): keep the grant this long
  SidecarFlags sidecar;
  OutputFormat output = OutputFormat::kTable;  // --output
  std::vector<std::string> child;              // run: CMD ARGS... after "--"
};

// Parses argv (without the program name) against the table of flags (cli/flags.h), then
// checks the whole: the command, its LOCKs, the flags of the mode in use. kInvalidArgument
// with a message meant for the user on any mistake; the caller prints it with the usage
// hint and exits 2.
Result<Options> parse_options(const std::vector<std::string>& args);

// A usage mistake: kInvalidArgument with `message` for the user.
Error usage_error(std::string message);

// Kubernetes-mode run: how long SIGTERM may take before SIGKILL (--grace, default the
// smaller of 10 s and a fifth of the TTL), and how long before the published validity ends
// the command must be gone (--safety-margin, default the smaller of 2 s and a fifth of the
// TTL), which absorbs the difference between the controller's clock and this node's.
Millis kube_grace(const Options& options, Millis ttl);
Millis kube_safety_margin(const Options& options, Millis ttl);

// An error when the command could never run (no slack at all: api::holder_slack), else a
// warning when a controller failover at the controller's default timings would stop it.
Status check_run_slack(Millis ttl, Millis grace, Millis margin);
std::optional<std::string> run_slack_warning(Millis ttl, Millis grace, Millis margin);

}  // namespace eslease::cli
