// A claim request as `eslease acquire` builds it, for tests that need Leases to work on.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/lease_view.h"

namespace eslease::cli::testing {

// A claim on a lock set (spec.lockNames).
inline ClaimRequest set_request(std::string ns, std::string name, std::vector<std::string> locks,
                                std::string pod, std::string uid) {
  ClaimRequest r;
  r.ns = std::move(ns);
  r.name = std::move(name);
  r.locks = std::move(locks);
  r.pod = std::move(pod);
  r.pod_uid = std::move(uid);
  return r;
}

// A claim on one lock (spec.lockName).
inline ClaimRequest request(std::string ns, std::string name, std::string lock, std::string pod,
                            std::string uid) {
  return set_request(std::move(ns), std::move(name), {std::move(lock)}, std::move(pod), std::move(uid));
}

}  // namespace eslease::cli::testing
