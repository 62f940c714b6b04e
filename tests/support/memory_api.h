// An in-memory kube::Api for unit tests: objects with resourceVersions and optimistic
// concurrency, scripted list failures and scripted watch streams.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "kube/api.h"
#include "support/wait.h"

namespace eslease::kube::testing {

class MemoryApi final : public Api {
 public:
  // A scripted watch: receives the options and the handler, returns how the watch ended.
  using WatchScript = std::function<Status(const WatchOptions&, const WatchHandler&)>;

  json put_object(const Resource& r, json object) {
    std::lock_guard lock(mutex_);
    object["metadata"]["resourceVersion"] = std::to_string(++rv_);
    if (!object["metadata"].contains("uid")) object["metadata"]["uid"] = "uid-" + object_key(object);
    store_[kind_of(r)][object_key(object)] = object;
    return object;
  }
  void erase_object(const Resource& r, const std::string& key) {
    std::lock_guard lock(mutex_);
    store_[kind_of(r)].erase(key);
    ++rv_;
  }
  void push_list_error(Error error) {
    std::lock_guard lock(mutex_);
    list_errors_.push_back(std::move(error));
  }
  void push_watch(WatchScript script) {
    std::lock_guard lock(mutex_);
    watches_.push_back(std::move(script));
  }
  // A scripted watch of one resource only, served before the scripts for any resource.
  void push_watch(const Resource& r, WatchScript script) {
    std::lock_guard lock(mutex_);
    watches_of_[kind_of(r)].push_back(std::move(script));
  }
  void fail_next(const std::string& verb, Error error) {
    std::lock_guard lock(mutex_);
    failures_[verb].push_back(std::move(error));
  }
  // The next `verb` of resource `r` only fails.
  void fail_next(const std::string& verb, const Resource& r, Error error) {
    std::lock_guard lock(mutex_);
    failures_[verb + " " + kind_of(r)].push_back(std::move(error));
  }
  // The next update of resource `r` is applied, but its caller gets `error` (a timeout, say)
  // instead of the answer: a write whose outcome the caller cannot know.
  void lose_answer_of_next_update(const Resource& r, Error error) {
    std::lock_guard lock(mutex_);
    lost_answers_["update " + kind_of(r)].push_back(std::move(error));
  }
  // While set, every write that can wait (create_unless_busy, patch_unless_busy) is left for
  // later and not applied, as the client's rate limit does while urgent writes use it up.
  void set_rate_limit_busy(bool busy) {
    std::lock_guard lock(mutex_);
    rate_limit_busy_ = busy;
  }
  // The next write that can wait of resource `r` is left for later, as above.
  void defer_next(const Resource& r) {
    std::lock_guard lock(mutex_);
    ++deferrals_[kind_of(r)];
  }
  void set_watch_fallback(WatchScript script) {
    std::lock_guard lock(mutex_);
    fallback_ = std::move(script);
  }
  int list_calls() const {
    std::lock_guard lock(mutex_);
    return list_calls_;
  }
  std::vector<WatchOptions> watch_calls() const {
    std::lock_guard lock(mutex_);
    return watch_calls_;
  }
  std::vector<std::pair<std::string, json>> writes() const {
    std::lock_guard lock(mutex_);
    return writes_;
  }
  std::string current_rv() const {
    std::lock_guard lock(mutex_);
    return std::to_string(rv_);
  }

  // Runs at the start of every get, outside the store's lock: a test can hold a call in flight.
  void before_each_get(std::function<void()> hook) {
    std::lock_guard lock(mutex_);
    before_get_ = std::move(hook);
  }

  Result<json> get(const Resource& r, const std::string& ns, const std::string& name,
                   const CallOptions&) override {
    std::function<void()> hook;
    {
      std::lock_guard lock(mutex_);
      hook = before_get_;
    }
    if (hook) hook();
    std::lock_guard lock(mutex_);
    if (auto e = take_failure("get", r)) return *e;
    auto& objects = store_[kind_of(r)];
    auto it = objects.find(ns.empty() ? name : ns + "/" + name);
    if (it == objects.end()) return make_error(ErrorCode::kNotFound, name + " not found", 404);
    return it->second;
  }

  Result<ListPage> list(const Resource& r, const std::string& ns, const ListOptions& options) override {
    std::lock_guard lock(mutex_);
    ++list_calls_;
    if (!list_errors_.empty()) {
      Error e = list_errors_.front();
      list_errors_.pop_front();
      return e;
    }
    auto& objects = store_[kind_of(r)];
    ListPage page;
    auto it = options.continue_token.empty() ? objects.begin() : objects.upper_bound(options.continue_token);
    for (; it != objects.end(); ++it) {
      if (options.limit > 0 && static_cast<int>(page.items.size()) == options.limit) {
        page.continue_token = std::prev(it)->first;
        break;
      }
      page.items.push_back(it->second);
    }
    page.resource_version = std::to_string(rv_);
    return page;
  }

  Result<json> create(const Resource& r, const std::string& ns, const json& object,
                      const CallOptions& call) override {
    std::lock_guard lock(mutex_);
    if (auto e = take_failure("create", r)) return *e;
    json stored = object;
    stored["metadata"]["namespace"] = ns;
    std::string key = object_key(stored);
    if (store_[kind_of(r)].count(key))
      return make_error(ErrorCode::kAlreadyExists, key + " already exists", 409);
    stored["metadata"]["resourceVersion"] = std::to_string(++rv_);
    stored["metadata"]["uid"] = "uid-" + key;
    store_[kind_of(r)][key] = stored;
    writes_.emplace_back("create", stored);
    return stored;
  }

  Result<json> update(const Resource& r, const json& object, const CallOptions& call) override {
    std::lock_guard lock(mutex_);
    if (auto e = take_failure("update", r)) return *e;
    std::string key = object_key(object);
    auto& objects = store_[kind_of(r)];
    auto it = objects.find(key);
    if (it == objects.end()) return make_error(ErrorCode::kNotFound, key + " not found", 404);
    std::string rv = meta_string(object, "resourceVersion");
    if (!rv.empty() && rv != meta_string(it->second, "resourceVersion")) {
      return make_error(ErrorCode::kConflict, "the object has been modified", 409);
    }
    json stored = object;
    stored["metadata"]["resourceVersion"] = std::to_string(++rv_);
    it->second = stored;
    writes_.emplace_back("update", stored);
    if (auto lost = lost_answers_.find("update " + kind_of(r));
        lost != lost_answers_.end() && !lost->second.empty()) {
      Error e = lost->second.front();
      lost->second.pop_front();
      return e;
    }
    return stored;
  }

  Result<json> update_status(const Resource& r, const json& object, const CallOptions& call) override {
    return update(r, object, call);
  }

  Result<json> patch(const Resource& r, const std::string& ns, const std::string& name, PatchType,
                     const json& patch, bool, const CallOptions& call) override {
    std::lock_guard lock(mutex_);
    if (auto e = take_failure("patch", r)) return *e;
    auto& objects = store_[kind_of(r)];
    auto it = objects.find(ns.empty() ? name : ns + "/" + name);
    if (it == objects.end()) return make_error(ErrorCode::kNotFound, name + " not found", 404);
    // A resourceVersion in the patch is a precondition, as the API server makes it.
    if (patch.contains("metadata") && patch["metadata"].is_object()) {
      const std::string rv = meta_string(patch, "resourceVersion");
      if (!rv.empty() && rv != meta_string(it->second, "resourceVersion"))
        return make_error(ErrorCode::kConflict, "the object has been modified", 409);
    }
    it->second.merge_patch(patch);
    it->second["metadata"]["resourceVersion"] = std::to_string(++rv_);
    writes_.emplace_back("patch", patch);
    return it->second;
  }

  Status remove(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions&) override {
    std::lock_guard lock(mutex_);
    if (auto e = take_failure("delete", r)) return *e;
    if (store_[kind_of(r)].erase(ns.empty() ? name : ns + "/" + name) == 0) {
      return make_error(ErrorCode::kNotFound, name + " not found", 404);
    }
    ++rv_;
    return {};
  }

  Result<std::optional<json>> create_unless_busy(const Resource& r, const std::string& ns,
                                                 const json& object) override {
    if (left_for_later(r)) return std::optional<json>();
    return as_sent(create(r, ns, object, {}));
  }

  Result<std::optional<json>> patch_unless_busy(const Resource& r, const std::string& ns,
                                                const std::string& name, PatchType type, const json& patch,
                                                bool status_subresource, const CallOptions& call) override {
    if (left_for_later(r)) return std::optional<json>();
    return as_sent(this->patch(r, ns, name, type, patch, status_subresource, call));
  }

  Status watch(const Resource& r, const std::string&, const WatchOptions& options,
               const WatchHandler& on_event, std::stop_token stop) override {
    WatchScript script;
    {
      std::lock_guard lock(mutex_);
      watch_calls_.push_back(options);
      if (auto& own = watches_of_[kind_of(r)]; !own.empty()) {
        script = std::move(own.front());
        own.pop_front();
      } else if (!watches_.empty()) {
        script = std::move(watches_.front());
        watches_.pop_front();
      } else {
        script = fallback_;
      }
    }
    if (script) return script(options, on_event);
    // Nothing scripted: behave like a quiet server until stopped.
    eslease::testing::block_until_stopped(stop);
    return make_error(ErrorCode::kCancelled, "stopped");
  }

 private:
  // Resources of different groups may share a plural (coordination.k8s.io and eslease.io
  // leases).
  static std::string kind_of(const Resource& r) { return r.group + "/" + r.plural; }

  bool left_for_later(const Resource& r) {
    std::lock_guard lock(mutex_);
    if (rate_limit_busy_) return true;
    auto it = deferrals_.find(kind_of(r));
    if (it == deferrals_.end() || it->second == 0) return false;
    --it->second;
    return true;
  }

  std::optional<Error> take_failure(const std::string& verb, const Resource& r) {
    if (auto own = failures_.find(verb + " " + kind_of(r)); own != failures_.end() && !own->second.empty()) {
      Error e = own->second.front();
      own->second.pop_front();
      return e;
    }
    auto it = failures_.find(verb);
    if (it == failures_.end() || it->second.empty()) return std::nullopt;
    Error e = it->second.front();
    it->second.pop_front();
    return e;
  }

  mutable std::mutex mutex_;
  std::uint64_t rv_ = 100;
  std::map<std::string, std::map<std::string, json>> store_;
  std::deque<Error> list_errors_;
  std::deque<WatchScript> watches_;
  std::map<std::string, std::deque<WatchScript>> watches_of_;
  WatchScript fallback_;
  std::map<std::string, std::deque<Error>> failures_;
  bool rate_limit_busy_ = false;
  std::map<std::string, int> deferrals_;  // by kind: writes that can wait still to leave for later
  std::function<void()> before_get_;
  std::map<std::string, std::deque<Error>> lost_answers_;
  std::vector<WatchOptions> watch_calls_;
  std::vector<std::pair<std::string, json>> writes_;
  int list_calls_ = 0;
};

inline json make_object(const std::string& ns, const std::string& name, const std::string& rv = "1",
                        const std::string& uid = "") {
  return {{"metadata",
           {{"namespace", ns},
            {"name", name},
            {"resourceVersion", rv},
            {"uid", uid.empty() ? "uid-" + name : uid}}}};
}

}  // namespace eslease::kube::testing
