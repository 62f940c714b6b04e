#include "emulators/kube/garbage_collector.h"

#include <algorithm>

#include "emulators/kube/object_meta.h"

namespace eslease::kubeemu {

using nlohmann::json;

namespace {

constexpr const char* kForeground = "foregroundDeletion";
constexpr const char* kOrphan = "orphan";
constexpr int kMaxPassesPerWake = 100;

const json& references_of(const json& object) {
  static const json none = json::array();
  const json& meta = object.contains("metadata") ? object["metadata"] : none;
  if (!meta.is_object() || !meta.contains("ownerReferences") || !meta["ownerReferences"].is_array())
    return none;
  return meta["ownerReferences"];
}

bool deleting(const json& object) {
  return object["metadata"].contains("deletionTimestamp");
}

bool has_finalizer(const json& object, const std::string& finalizer) {
  const auto all = finalizers_of(object);
  return std::find(all.begin(), all.end(), finalizer) != all.end();
}

json without_finalizer(json object, const std::string& finalizer) {
  json& list = object["metadata"]["finalizers"];
  list.erase(std::remove(list.begin(), list.end(), json(finalizer)), list.end());
  if (list.empty()) object["metadata"].erase("finalizers");
  return object;
}

std::string uid_of(const json& reference) {
  return reference.is_object() ? reference.value("uid", "") : "";
}

}  // namespace

GarbageCollector::GarbageCollector(std::mutex& api_mutex, ObjectStore& store,
                                   const ResourceRegistry& registry, GarbageCollectorTarget& target)
    : api_mutex_(api_mutex), store_(store), registry_(registry), target_(target) {}

GarbageCollector::~GarbageCollector() {
  stop();
}

void GarbageCollector::start() {
  {
    std::lock_guard lock(api_mutex_);
    store_.set_observer("garbage-collector", [this](const EventPtr& event) { observe(event); });
  }
  thread_ = std::jthread([this](std::stop_token stop) { run(std::move(stop)); });
}

void GarbageCollector::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(api_mutex_);
    store_.set_observer("garbage-collector", nullptr);
  }
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

void GarbageCollector::observe(const EventPtr& event) {
  // Runs under api_mutex_: keeps the count of referenced owners and wakes the thread only
  // for changes that can give it work.
  bool work = false;
  auto count = [&](const ObjectPtr& object, int delta) {
    if (!object) return;
    for (const auto& ref : references_of(*object)) {
      const std::string uid = uid_of(ref);
      if (uid.empty()) continue;
      if ((referenced_[uid] += delta) <= 0) referenced_.erase(uid);
    }
  };
  const json& object = *event->object;
  if (event->type == "DELETED") {
    count(event->object, -1);
    // Work when it owned something, or when it was a dependent its owner may be waiting for.
    work = referenced_.count(meta_string(object, "uid")) > 0 || !references_of(object).empty();
  } else {
    const bool refs_changed = !event->previous || references_of(*event->previous) != references_of(object);
    if (refs_changed) {
      count(event->previous, -1);
      count(event->object, 1);
      work = !references_of(object).empty();
    }
    work =
        work || (deleting(object) && (has_finalizer(object, kForeground) || has_finalizer(object, kOrphan)));
  }
  if (!work) return;
  {
    std::lock_guard lock(wake_mutex_);
    dirty_ = true;
  }
  wake_.notify_one();
}

void GarbageCollector::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(wake_mutex_);
      wake_.wait(lock, stop, [&] { return dirty_; });
      if (stop.stop_requested()) return;
      dirty_ = false;
    }
    std::lock_guard api(api_mutex_);
    for (int i = 0; i < kMaxPassesPerWake && !stop.stop_requested() && pass(); ++i) {
    }
  }
}

ObjectPtr GarbageCollector::owner_of(const json& reference, const std::string& dependent_ns) const {
  const std::string api_version = reference.value("apiVersion", "");
  const auto slash = api_version.find('/');
  const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  for (const auto& type : registry_.all()) {
    if (type->group != group || type->kind != reference.value("kind", "")) continue;
    return store_.get(type->id(), type->namespaced ? dependent_ns : "", reference.value("name", ""));
  }
  return nullptr;
}

bool GarbageCollector::pass() {
  std::multimap<std::string, Dependent> dependents;  // owner uid -> dependent
  std::vector<std::pair<ResourceRegistry::TypePtr, ObjectPtr>> owners_finishing;
  std::vector<std::pair<ResourceRegistry::TypePtr, ObjectPtr>> with_owners;
  for (const auto& type : registry_.all()) {
    for (const auto& object : store_.list(type->id(), "")) {
      for (const auto& ref : references_of(*object))
        dependents.emplace(uid_of(ref), Dependent{type, object, ref});
      if (!references_of(*object).empty()) with_owners.emplace_back(type, object);
      if (deleting(*object) && (has_finalizer(*object, kForeground) || has_finalizer(*object, kOrphan))) {
        owners_finishing.emplace_back(type, object);
      }
    }
  }
  bool acted = false;
  for (const auto& [type, owner] : owners_finishing) acted = finish_owner(type, owner, dependents) || acted;
  if (acted) return true;  // look again: what it deleted or updated changes the picture
  for (const auto& [type, object] : with_owners) acted = collect_dependent(type, object) || acted;
  return acted;
}

bool GarbageCollector::finish_owner(const ResourceRegistry::TypePtr& type, const ObjectPtr& owner,
                                    const std::multimap<std::string, Dependent>& dependents) {
  const std::string uid = meta_string(*owner, "uid");
  auto [first, last] = dependents.equal_range(uid);
  if (has_finalizer(*owner, kOrphan)) {
    // Orphan: the dependents lose their reference to the owner, then the finalizer goes.
    for (auto it = first; it != last; ++it) {
      json next = *it->second.object;
      json& refs = next["metadata"]["ownerReferences"];
      refs.erase(std::remove_if(refs.begin(), refs.end(), [&](const json& r) { return uid_of(r) == uid; }),
                 refs.end());
      if (refs.empty()) next["metadata"].erase("ownerReferences");
      target_.collect_update(it->second.type, it->second.object, std::move(next));
    }
    target_.collect_update(type, owner, without_finalizer(*owner, kOrphan));
    return true;
  }
  // Foreground: every dependent is deleted; the owner waits for those that block it.
  bool blocked = false;
  bool acted = false;
  for (auto it = first; it != last; ++it) {
    const Dependent& d = it->second;
    if (d.reference.value("blockOwnerDeletion", false)) blocked = true;
    if (deleting(*d.object)) continue;
    const bool has_own_dependents = dependents.count(meta_string(*d.object, "uid")) > 0;
    json options = {{"propagationPolicy", has_own_dependents ? "Foreground" : "Background"},
                    {"preconditions", {{"uid", meta_string(*d.object, "uid")}}}};
    target_.collect_delete(d.type, meta_string(*d.object, "namespace"), meta_string(*d.object, "name"),
                           options);
    acted = true;
  }
  if (blocked) return acted;
  target_.collect_update(type, owner, without_finalizer(*owner, kForeground));
  return true;
}

bool GarbageCollector::collect_dependent(const ResourceRegistry::TypePtr& type, const ObjectPtr& object) {
  if (deleting(*object)) return false;
  const std::string ns = meta_string(*object, "namespace");
  json solid = json::array();
  json dangling = json::array();
  bool waiting = false;
  const auto types = registry_.all();
  for (const auto& ref : references_of(*object)) {
    // An owner of a kind the server does not serve cannot be looked up: it is never taken
    // for absent.
    const bool resolvable = std::any_of(types.begin(), types.end(),
                                        [&](const auto& t) { return t->kind == ref.value("kind", ""); });
    auto owner = owner_of(ref, ns);
    if (!resolvable || (owner && meta_string(*owner, "uid") == uid_of(ref))) {
      if (owner && deleting(*owner) && has_finalizer(*owner, kForeground)) {
        waiting = true;  // finish_owner deletes this dependent
      } else {
        solid.push_back(ref);
      }
    } else {
      dangling.push_back(ref);
    }
  }
  if (dangling.empty()) return false;
  if (!solid.empty() || waiting) {
    // Other owners remain: only the references to owners that are gone are removed.
    json next = *object;
    json kept = json::array();
    for (const auto& ref : references_of(*object)) {
      if (std::find(dangling.begin(), dangling.end(), ref) == dangling.end()) kept.push_back(ref);
    }
    next["metadata"]["ownerReferences"] = kept;
    target_.collect_update(type, object, std::move(next));
    return true;
  }
  json options = {{"propagationPolicy", "Background"},
                  {"preconditions", {{"uid", meta_string(*object, "uid")}}}};
  target_.collect_delete(type, ns, meta_string(*object, "name"), options);
  return true;
}

}  // namespace eslease::kubeemu
