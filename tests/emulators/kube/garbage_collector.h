// The garbage collector of kube-controller-manager, as a background thread: objects whose
// owners (metadata.ownerReferences, matched by kind, name and uid) are all gone are deleted;
// an owner deleted in the foreground (finalizer foregroundDeletion) first has its dependents
// deleted and keeps the finalizer until none with blockOwnerDeletion is left; an owner
// deleted with propagationPolicy Orphan (finalizer orphan) has its ownerReferences removed
// from its dependents first. Like the real one it acts after the write that caused it,
// through the API server's own delete and update paths, so watchers see ordinary events.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "emulators/kube/object_store.h"
#include "emulators/kube/resource_registry.h"

namespace eslease::kubeemu {

// The API calls the collector makes; called with the API server's mutex held.
class GarbageCollectorTarget {
 public:
  virtual ~GarbageCollectorTarget() = default;
  // DELETE with these DeleteOptions; a failure (already gone, uid changed) is ignored.
  virtual void collect_delete(const ResourceRegistry::TypePtr& type, const std::string& ns,
                              const std::string& name, const nlohmann::json& options) = 0;
  // An update from the collector (ownerReferences or finalizers removed).
  virtual void collect_update(const ResourceRegistry::TypePtr& type, const ObjectPtr& current,
                              nlohmann::json next) = 0;
};

class GarbageCollector {
 public:
  GarbageCollector(std::mutex& api_mutex, ObjectStore& store, const ResourceRegistry& registry,
                   GarbageCollectorTarget& target);
  ~GarbageCollector();
  GarbageCollector(const GarbageCollector&) = delete;
  GarbageCollector& operator=(const GarbageCollector&) = delete;

  // Registers the store observer and starts the thread. Call without api_mutex held.
  void start();
  // Unregisters the observer and joins the thread. Call without api_mutex held.
  void stop();

 private:
  struct Dependent {
    ResourceRegistry::TypePtr type;
    ObjectPtr object;
    nlohmann::json reference;  // its ownerReference to the owner
  };

  void observe(const EventPtr& event);
  void run(std::stop_token stop);
  // One look at every object, with api_mutex held; whether it changed anything.
  bool pass();
  bool finish_owner(const ResourceRegistry::TypePtr& type, const ObjectPtr& owner,
                    const std::multimap<std::string, Dependent>& dependents);
  bool collect_dependent(const ResourceRegistry::TypePtr& type, const ObjectPtr& object);
  ObjectPtr owner_of(const nlohmann::json& reference, const std::string& dependent_ns) const;

  std::mutex& api_mutex_;
  ObjectStore& store_;
  const ResourceRegistry& registry_;
  GarbageCollectorTarget& target_;
  // Owner uids some object refers to, counted: deleting one of them is work for the collector.
  std::map<std::string, int> referenced_;
  std::mutex wake_mutex_;
  std::condition_variable_any wake_;
  bool dirty_ = false;
  std::jthread thread_;
};

}  // namespace eslease::kubeemu
