// The seam between controller logic and the Kubernetes API server: unstructured objects
// (nlohmann::json) addressed by a Resource. HttpApi implements it over http::Transport;
// InstrumentedApi wraps another Api with request metrics and a client-side rate limit; tests
// may implement it directly.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "common/result.h"
#include "kube/resource.h"

namespace eslease::kube {

using nlohmann::json;

// Per-call settings; an unset timeout means the client's default.
struct CallOptions {
  std::optional<std::chrono::milliseconds> timeout;
  // A write that hands a lock over to a successor (a takeover) or takes it from a holder
  // that may still run: while one is waiting for its token or in flight, every write that
  // can wait (Api::patch_unless_busy) is left for later, so in a burst of deaths the API
  // server serves the hand-overs first.
  bool hands_over = false;
  // The caller reads only the answer's metadata (the resourceVersion its write produced): a
  // client may leave the rest of the object undecoded.
  bool metadata_only = false;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int limit = 0;               // 0 = no paging
  std::string continue_token;  // from the previous page
  std::string resource_version;
  CallOptions call;
};

struct ListPage {
  std::vector<json> items;
  std::string resource_version;  // of the list: where a watch continues from
  std::string continue_token;    // empty on the last page
};

enum class PatchType { kMerge, kJson };

struct DeleteOptions {
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<int> grace_period_seconds;
  CallOptions call;
};

struct WatchEvent {
  enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
  Type type = Type::kAdded;
  json object;  // the object, or a Status for kError
};

const char* to_string(WatchEvent::Type type);

struct WatchOptions {
  std::string resource_version;
  std::string label_selector;
  std::string field_selector;
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // server-side end of the watch; 0 = server default
  // Longest silence tolerated on the stream before giving up (kTimeout). Bookmarks keep a
  // healthy watch talking, so this should be comfortably above the bookmark interval.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(2)};
};

// Called for every decoded event. Return false to end the watch.
using WatchHandler = std::function<bool(const WatchEvent&)>;

class Api {
 public:
  virtual ~Api() = default;

  virtual Result<json> get(const Resource& r, const std::string& ns, const std::string& name,
                           const CallOptions& call = {}) = 0;
  // One page of a list.
  virtual Result<ListPage> list(const Resource& r, const std::string& ns,
                                const ListOptions& options = {}) = 0;
  virtual Result<json> create(const Resource& r, const std::string& ns, const json& object,
                              const CallOptions& call = {}) = 0;
  // Replaces the object named by object.metadata; metadata.resourceVersion, when set, makes
  // the write conditional (409 kConflict when stale).
  virtual Result<json> update(const Resource& r, const json& object, const CallOptions& call = {}) = 0;
  virtual Result<json> update_status(const Resource& r, const json& object, const CallOptions& call = {}) = 0;
  virtual Result<json> patch(const Resource& r, const std::string& ns, const std::string& name,
                             PatchType type, const json& patch, bool status_subresource = false,
                             const CallOptions& call = {}) = 0;
  virtual Status remove(const Resource& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& options = {}) = 0;
  // Writes that can wait (a queue position, a condition, an annotation, a finalizer, an
  // event): sent only while the client is not busy with the writes that move locks (grants,
  // revocations, sessions), so those never queue behind them. nullopt when the write was not
  // sent, which is not an error: the caller tries again later (the reconcile is idempotent,
  // so a requeue does); else the server's answer, as create and patch give it. These defaults
  // send at once; InstrumentedApi holds them back while its rate limit is busy.
  virtual Result<std::optional<json>> create_unless_busy(const Resource& r, const std::string& ns,
                                                         const json& object);
  virtual Result<std::optional<json>> patch_unless_busy(const Resource& r, const std::string& ns,
                                                        const std::string& name, PatchType type,
                                                        const json& patch, bool status_subresource = false,
                                                        const CallOptions& call = {});
  // Streams events until the server ends the stream (ok), the handler returns false (ok),
  // `stop` is requested (kCancelled), the stream stays silent past idle_timeout (kTimeout)
  // or fails. An HTTP error answer becomes its typed Error (410 kGone, ...). ERROR events
  // inside the stream are handed to the handler as they are.
  virtual Status watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                       const WatchHandler& on_event, std::stop_token stop) = 0;
};

// An ordinary write's answer in the shape of a write that can wait: always sent.
Result<std::optional<json>> as_sent(Result<json> answer);

// Pages through a whole list (limit per page); the result has the last page's
// resourceVersion. A continue token that expires mid-way (410) is returned as kGone.
Result<ListPage> list_all(Api& api, const Resource& r, const std::string& ns, ListOptions options);
// The same, handing each object to `each` as its page arrives instead of keeping them all,
// so a caller that keeps only a few fields never holds a whole list of full objects; returns
// the list's resourceVersion.
Result<std::string> list_each(Api& api, const Resource& r, const std::string& ns, ListOptions options,
                              const std::function<void(json object)>& each);

// "namespace/name" (or "name" for cluster-scoped objects), the informer cache key.
std::string object_key(const json& object);
// metadata.<field> as a string, "" when absent or not a string.
std::string meta_string(const json& object, const char* field);

}  // namespace eslease::kube
