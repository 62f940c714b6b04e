// A claim request as `eslease acquire` builds it, for tests that need Leases to work on.
#pragma once

#include <string>
#include <utility>

#include "cli/lease_view.h"

namespace eslease::cli::testing {

inline ClaimRequest request(std::string ns, std::string name, std::string lock, std::string pod,
                            std::string uid) {
  ClaimRequest r;
  r.ns = std::move(ns);
  r.name = std::move(name);
  r.lock = std::move(lock);
  r.pod = std::move(pod);
  r.pod_uid = std::move(uid);
  return r;
}

}  // namespace eslease::cli::testing
