// Lock names, namespaces and index names are checked before any request is built, so a
// hostile name is refused with a clear message and can never reach another endpoint.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "api/lease_spec.h"
#include "common/result.h"
#include "common/text.h"

namespace eslease::lock {

// The Lease's rules for lock names and namespaces (api/lease_spec.h), which every document id
// follows.
using api::kMaxLockNameBytes;
using api::kMaxNamespaceBytes;
using api::validate_lock_name;
using api::validate_namespace;

// Holder, lease and writer identities written into the document.
inline constexpr std::size_t kMaxIdentityBytes = 512;

// A validated lock identity. Its document id is `<namespace>/<lockName>`; the namespace
// holds no '/', so the id names exactly one (namespace, lockName) pair.
class LockKey {
 public:
  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  std::string id() const { return object_key(ns_, name_); }
  friend bool operator==(const LockKey&, const LockKey&) = default;

 private:
  friend Result<LockKey> make_lock_key(std::string_view ns, std::string_view name);
  std::string ns_;
  std::string name_;
};

// Refuses (kInvalidArgument) a namespace or lock name that breaks the Lease's rules.
Result<LockKey> make_lock_key(std::string_view ns, std::string_view name);
// Parses a document id back into its key (for listings).
Result<LockKey> parse_lock_id(std::string_view id);

// The same checks for identity strings (holder, lease, writer); `what` names the field.
Status validate_identity(std::string_view what, std::string_view value, bool allow_empty);

// `prefix` followed by `words` times 32 random bits in hex: identities that must differ between
// processes and grants (a writer, a lease UID outside Kubernetes, a grant's id).
std::string random_id(std::string_view prefix, int words);

// Elasticsearch's index name rules: lowercase, at most 255 bytes, none of \ / * ? " < > |
// space , # :, not starting with - _ +, not "." or "..".
Status validate_index_name(std::string_view index);

}  // namespace eslease::lock
