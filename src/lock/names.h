// Lock names, namespaces and index names are checked before any request is built, so a
// hostile name is refused with a clear message and can never reach another endpoint.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/text.h"

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
  std::string id() const { return object_key(ns_, name_); }
  friend bool operator==(const LockKey&, const LockKey&) = default;

 private:
  friend Result<LockKey> make_lock_key(std::string_view ns, std::string_view name);
  std::string ns_;
  std::string name_;
};

// The Lease CRD's rule for spec.lockName, the same in both modes so that any lock one mode
// takes the other can contend for: 1-253 lower-case letters, digits, '-', '_' and '.',
// starting and ending with a letter or digit. It leaves out '/' (the separator of a document
// id) and '#' (reserved for a lock's slot documents). kInvalidArgument quoting the name.
Status validate_lock_name(std::string_view name);
// A namespace is a DNS label, as in Kubernetes: at most 63 lower-case letters, digits and
// '-', starting and ending with a letter or digit.
Status validate_namespace(std::string_view ns);
// Refuses (kInvalidArgument) a namespace or lock name that breaks the rules above.
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
