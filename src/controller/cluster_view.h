// Read access to the informer caches, as the reconciler needs it. An interface so the
// reconciler is tested on plain maps and runs on the informers' typed caches.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "controller/model.h"

namespace eslease::controller {

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::optional<LeaseRecord> lease(const std::string& key) const = 0;  // "ns/name"
  virtual std::optional<PodRecord> pod(const std::string& key) const = 0;      // "ns/name"
  // `fn` reads the Lease or pod in place, under the cache's lock (no copy): it must not call
  // back into the view. False when there is none.
  virtual bool read_lease(const std::string& key,
                          const std::function<void(const LeaseRecord&)>& fn) const = 0;
  virtual bool read_pod(const std::string& key, const std::function<void(const PodRecord&)>& fn) const = 0;
  virtual void for_each_pod(const std::string& ns, const std::function<void(const PodRecord&)>& fn) const = 0;
  virtual void for_each_lease(const std::function<void(const LeaseRecord&)>& fn) const = 0;
  // The Leases of namespace `ns` shown Held, at a cost that grows with those alone; each is
  // read in place, as by read_lease. Which ones may lag the cache by the event being applied
  // (as if read a moment earlier): `fn` sees each one's latest state and checks its phase.
  virtual void for_each_held_lease(const std::string& ns,
                                   const std::function<void(const LeaseRecord&)>& fn) const = 0;
};

}  // namespace eslease::controller
