// The kube-apiserver stand-in as a plain request handler: routing, authentication, fault
// injection, discovery, CRUD with the generic registry's rules, and watch streams. It owns
// no sockets, so tests can drive it with an in-memory ServerResponse; KubeEmulator mounts
// it on the HTTP server.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "emulators/kube/api_status.h"
#include "emulators/kube/faults.h"
#include "emulators/kube/garbage_collector.h"
#include "emulators/kube/kubelet.h"
#include "emulators/kube/managed_fields.h"
#include "emulators/kube/object_store.h"
#include "emulators/kube/resource_registry.h"
#include "http/server.h"

namespace eslease::kubeemu {

struct ApiServerOptions {
  std::optional<std::string> bearer_token;
  std::size_t watch_history = 10000;
  std::chrono::milliseconds bookmark_interval{1000};
  std::size_t max_body_bytes = 3 * 1024 * 1024;  // kube-apiserver's limit for JSON bodies
  std::string server_address = "127.0.0.1:0";    // reported by /api
  // Runs a SimulatedKubelet with its nodes: created pods are reset to Pending and then
  // scheduled and started, and DELETE of a pod is graceful. Off, pods keep the status
  // written and are deleted at once.
  bool simulate_kubelet = false;
  KubeletOptions kubelet;
};

class ApiServer : private GarbageCollectorTarget {
 public:
  explicit ApiServer(ApiServerOptions options, Clock& clock = SystemClock::instance());
  ~ApiServer() override;
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  void handle(const http::ServerRequest& request, http::ServerResponse& response);
  // Stops the simulated kubelet, ends every open watch stream and refuses new ones
  // (server shutdown).
  void shutdown();
  void set_server_address(std::string address);

 private:
  // One resource request, parsed from the URL.
  struct Call {
    std::string verb;  // get, list, watch, create, update, patch, delete, deletecollection
    ResourceRegistry::TypePtr type;
    std::string version;
    std::string ns;
    std::string name;
    std::string subresource;  // "", "status" or "scale"
    std::map<std::string, std::string> query;
    const http::ServerRequest* request = nullptr;  // null for the server's own calls
    std::string acting_manager;                    // their field manager
    bool wants_table = false;
    std::string param(const std::string& key) const {
      auto it = query.find(key);
      return it == query.end() ? std::string() : it->second;
    }
    // Go's strconv.ParseBool truths, as the apiserver parses boolean query parameters.
    bool flag(const std::string& key) const {
      const std::string v = param(key);
      return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
    }
  };

  // Admin endpoints (admin.cpp).
  void handle_admin(const http::ServerRequest& request, http::ServerResponse& response);
  // /_emulator/kubelet/pods/{ns}/{name} and /_emulator/kubelet/nodes/{name}.
  void handle_kubelet_admin(const std::vector<std::string>& segments, const http::ServerRequest& request,
                            http::ServerResponse& response);
  // The node or pod as stored after the change the body asks for.
  std::variant<nlohmann::json, ApiError> change_node_as_kubelet(const std::string& name,
                                                                const nlohmann::json& body);
  std::variant<nlohmann::json, ApiError> change_pod_as_kubelet(const std::string& ns, const std::string& name,
                                                               const nlohmann::json& body);

  // Routing (api_server.cpp).
  bool handle_discovery(const std::vector<std::string>& segments, const http::ServerRequest& request,
                        http::ServerResponse& response);
  // The group, version, namespace, resource, name and subresource a path names.
  std::optional<ApiError> resolve_path(const std::vector<std::string>& segments, Call& call,
                                       std::string& group);
  std::optional<ApiError> parse_call(const std::vector<std::string>& segments,
                                     const http::ServerRequest& request, Call& call);
  nlohmann::json openapi_document(const std::string& group, const std::string& version);

  // Reads (reads.cpp).
  struct WatchRequest;
  void get(const Call& call, http::ServerResponse& response);
  void list(const Call& call, http::ServerResponse& response);
  void watch(const Call& call, http::ServerResponse& response);
  std::variant<WatchRequest, ApiError> watch_request(const Call& call) const;
  // The events of an open watch, with bookmarks, until its deadline, the client leaving or the
  // stream closing. Returns whether the client is still there.
  bool stream_events(const Call& call, const WatchRequest& wanted, WatchStream& stream,
                     http::ServerResponse& response);
  // Writes `object` as a watch event of `type` carries it: at the requested version, or as a
  // Table. Returns whether the client is still there.
  bool send_watched(http::ServerResponse& response, const Call& call, const std::string& type,
                    const nlohmann::json& object) const;

  // Writes (writes.cpp).
  void create(const Call& call, http::ServerResponse& response);
  void update(const Call& call, http::ServerResponse& response);
  void patch(const Call& call, http::ServerResponse& response);
  // GET, PUT and PATCH of a Deployment's (ReplicaSet's, StatefulSet's) scale (scale.cpp).
  void scale(const Call& call, http::ServerResponse& response);
  // Server-side apply (apply.cpp).
  void apply(const Call& call, http::ServerResponse& response);
  // The end of POST (and of an apply that creates), with mutex_ held: `applied` is the
  // managedFields an apply computed; without it the create is recorded as an Update.
  std::variant<std::pair<int, nlohmann::json>, ApiError> create_object(
      const Call& call, nlohmann::json object, std::vector<std::string>& warnings,
      const std::vector<ManagerEntry>* applied);
  // Who a write is recorded for in managedFields: ?fieldManager=, else the User-Agent.
  ManagerEntry writer(const Call& call, const std::string& operation) const;
  ListTypes list_types(const Call& call) const;
  // The fields of `object` a write through `call` can own (status only through /status).
  FieldSet tracked_fields(const Call& call, const nlohmann::json& object) const;
  void remove(const Call& call, http::ServerResponse& response);
  void remove_collection(const Call& call, http::ServerResponse& response);
  // The shared end of PUT and PATCH: status-subresource rules, generation, concurrency,
  // finalizer completion. Called with mutex_ held.
  std::variant<std::pair<int, nlohmann::json>, ApiError> commit_update(
      const Call& call, const ObjectPtr& current, nlohmann::json desired, std::vector<std::string>& warnings,
      const std::vector<ManagerEntry>* applied = nullptr);
  // Custom resources: prune, default, validate against the version's schema.
  std::optional<ApiError> admit_custom(const Call& call, nlohmann::json& object,
                                       std::vector<std::string>& warnings);
  std::optional<ApiError> register_crd(const nlohmann::json& crd);
  void unregister_crd(const nlohmann::json& crd);
  void erase_namespace_contents(const std::string& ns);
  // DeleteOptions of a DELETE: the JSON body, or the query parameters when there is none.
  std::variant<nlohmann::json, ApiError> delete_options(const Call& call);
  // DELETE of one object with mutex_ held: finalizers turn it into setting deletionTimestamp.
  std::variant<std::pair<int, nlohmann::json>, ApiError> delete_object(const Call& call,
                                                                       const std::string& ns,
                                                                       const std::string& name,
                                                                       const nlohmann::json& options);
  // The garbage collector's calls (deletes.cpp), with mutex_ held.
  void collect_delete(const ResourceRegistry::TypePtr& type, const std::string& ns, const std::string& name,
                      const nlohmann::json& options) override;
  void collect_update(const ResourceRegistry::TypePtr& type, const ObjectPtr& current,
                      nlohmann::json next) override;
  Call internal_call(const ResourceRegistry::TypePtr& type, const std::string& verb, const std::string& ns,
                     const std::string& name) const;
  std::vector<nlohmann::json> crds_serving(const std::string& group, const std::string& version) const;

  // The object as served at the requested version (custom resources are stored once and
  // relabelled, as with conversion strategy None).
  nlohmann::json present(const Call& call, const nlohmann::json& stored) const;
  // The same without a copy when the stored object already reads so: `stored` itself, else
  // the relabelled copy, kept in `relabelled`.
  const nlohmann::json& shown(const Call& call, const nlohmann::json& stored,
                              nlohmann::json& relabelled) const;

  ApiServerOptions options_;
  Clock& clock_;
  std::mutex mutex_;  // guards store_ and registry_, as etcd serialises writes
  ObjectStore store_;
  ResourceRegistry registry_;
  std::string server_address_;
  FaultInjector faults_;
  RequestCounters counters_;
  RequestCounters subresource_counters_;  // "<verb> <plural.group>/<subresource>": a status write's own count
  std::atomic<bool> shutting_down_{false};
  // Last: they use mutex_ and store_, so they are stopped (destroyed) before them.
  std::unique_ptr<SimulatedKubelet> kubelet_;
  std::unique_ptr<GarbageCollector> garbage_collector_;
};

// Helpers shared by the handler files.
// A JSON value as the API server prints it (invalid UTF-8 replaced, not refused).
std::string to_text(const nlohmann::json& value);
// `text` is a serialized JSON body.
void send_json_text(http::ServerResponse& response, int code, std::string text,
                    const std::vector<std::string>& warnings = {});
void send_json(http::ServerResponse& response, int code, const nlohmann::json& body,
               const std::vector<std::string>& warnings = {});
void send_error(http::ServerResponse& response, const ApiError& error);
// The percent-decoded segments of a path; nullopt for a malformed escape.
std::optional<std::vector<std::string>> split_path(const std::string& path);

}  // namespace eslease::kubeemu
