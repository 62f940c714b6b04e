// Lock names, namespaces and index names are checked before any request is built, so a
// hostile name is refused with a clear message and can never reach another endpoint.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace eslease::lock {

// Kubernetes limits, shared with the Lease CRD: spec.lockName maxLength 253, namespace a
// DNS label of at most 63 bytes.
inline constexpr std::size_t kMaxLockNameBytes = 253;
inline constexpr std::size_t kMaxNamespaceBytes = 63;
// Holder, lease and writer identities written into the document.
inline constexpr std::size_t kMaxIdentityBytes = 512;

// A validated lock identity. Its document id is `<namespace>/<lockName>`; the namespace
// holds no '/', so the id names exactly one (namespace, lockName) pair.
class LockKey {
 public:
  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  std::string id() const { return ns_ + "/" + name_; }
  friend bool operator==(const LockKey&, const LockKey&) = default;

 private:
  friend Result<LockKey> make_lock_key(std::string_view ns, std::string_view name);
  std::string ns_;
  std::string name_;
};

// Refuses (kInvalidArgument) an empty, over-long, non-UTF-8 name or one with control
// characters; the namespace additionally must not contain '/'.
Result<LockKey> make_lock_key(std::string_view ns, std::string_view name);
// Parses a document id back into its key (for listings).
Result<LockKey> parse_lock_id(std::string_view id);

// The same checks for identity strings (holder, lease, writer); `what` names the field.
Status validate_identity(std::string_view what, std::string_view value, bool allow_empty);

// Elasticsearch's index name rules: lowercase, at most 255 bytes, none of \ / * ? " < > |
// space , # :, not starting with - _ +, not "." or "..".
Status validate_index_name(std::string_view index);

}  // namespace eslease::lock
