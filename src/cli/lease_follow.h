// Following one object through the API: GET it, then WATCH it from that version, and start
// again with a GET whenever the stream ends in an error (410 Expired, a dropped connection,
// a silent stream), so every change is seen without polling and a gap is closed by reading
// the current state; an object that does not exist yet is watched from now, so its creation
// is seen at once. Used by acquire (its Lease, until Held), release (until gone), run (its
// Lease and its namespace's session, for as long as the command runs) and sidecar (the
// session).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "kube/api.h"

namespace eslease::cli {

struct FollowOptions {
  // A stream silent this long is given up and the Lease read again. Renewals and bookmarks
  // keep a healthy stream talking.
  Millis idle_timeout{std::chrono::seconds(60)};
  // Where to start watching, when the caller has just read or written the Lease.
  std::string resource_version;
};

// Called with the object as it is now, or nullopt while it does not exist (an object that is
// missing is watched for). Return true to stop.
using ObjectObserver = std::function<bool(const std::optional<nlohmann::json>& lease)>;
// Called when reading failed and the follower will retry after a backoff.
using FollowErrorObserver = std::function<void(const Error& error)>;

// Returns ok when the observer asked to stop, kCancelled when `stop` was requested, and the
// error itself when retrying cannot help (401, 403, a bad request): those need a person.
Status follow_object(kube::Api& api, Clock& clock, const kube::Resource& resource, const std::string& ns,
                     const std::string& name, const FollowOptions& options, const ObjectObserver& observe,
                     const FollowErrorObserver& on_error, std::stop_token stop);

// Errors that no retry will fix.
bool is_permanent(const Error& error);

}  // namespace eslease::cli
