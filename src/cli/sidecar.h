// `eslease sidecar`: a long-running companion of the holder pod (a native sidecar container)
// that tells the pod's other containers, whatever their language, which locks the pod holds,
// within milliseconds of the grant: the downward-API annotation file takes the kubelet's sync
// period (up to about a minute). It follows every Lease of the namespace through one watch,
// and the namespace's session, judges each grant by the holder's rule (holds_book.h), and
// tells it three ways: HTTP on --listen (GET /holds, /holds/LOCK: 200 or 503, /healthz), a
// file kept by atomic rename (--file), and commands run on grant and loss (--on-grant,
// --on-loss).
#pragma once

#include <optional>

#include "cli/lease_client.h"
#include "cli/options.h"
#include "cli/pod_identity.h"
#include "common/clock.h"
#include "kube/api.h"

namespace eslease::cli {

struct SidecarSettings {
  SidecarFlags flags;
  std::optional<Millis> safety_margin;  // --safety-margin; unset: each grant's default
  bool catch_signals = true;            // SIGINT/SIGTERM end it (tests stop it through `stop`)
};

// Runs until SIGINT or SIGTERM (or `stop`); the exit code: 0 after a clean stop, 1 when it
// cannot start (no rights to watch, the address is taken). `pod` has its uid.
int run_sidecar(kube::Api& api, Clock& clock, const PodIdentity& pod, const SidecarSettings& settings,
                Messages& messages, std::stop_token stop = {});

}  // namespace eslease::cli
