// Small, well-tested text helpers used wherever untrusted strings meet URLs or JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace eslease {

// Percent-encodes everything except RFC 3986 unreserved characters, so the result is
// safe as one path segment or query value: "/", "?", "#", "%" and ".." cannot escape it.
std::string percent_encode(std::string_view in);
// Decodes %XX escapes (and '+' as space when form_encoding). nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view in, bool form_encoding = false);

bool is_valid_utf8(std::string_view in);

// Untrusted text as a message may quote it: valid UTF-8 as it is (so 'lück' reads 'lück'),
// control characters and a backslash escaped (\n, \t, \r, \\, \xNN), invisible characters that
// reorder or hide text as \uNNNN, bytes that are not UTF-8 as \xNN; cut after `max_bytes` of
// input with "...".
std::string printable(std::string_view in, std::size_t max_bytes = 64);

// RFC 3339 in UTC with millisecond precision, e.g. 2026-11-21T15:49:41.123Z.
std::string format_rfc3339_millis(WallTime t);
// RFC 3339 in UTC with microsecond precision, as Kubernetes writes metav1.MicroTime.
std::string format_rfc3339_micros(WallTime t);
// RFC 3339 in UTC with second precision, as Kubernetes writes metav1.Time.
std::string format_rfc3339_seconds(WallTime t);
// Accepts both forms above and numeric offsets. nullopt when malformed.
std::optional<WallTime> parse_rfc3339(std::string_view in);

std::string to_lower(std::string_view in);

// The one spelling of a boolean wherever eslease reads one (the flags of both programs, the
// controller's environment and config file): true, t or 1 and false, f or 0, in any letter
// case. These are the spellings of Go's strconv.ParseBool, which kubebuilder controllers read
// their flags with. Anything else ("yes", "on", "", " true") is kInvalidArgument, worded
// `must be true or false, not "yes"` for the caller to prefix with where the value came from.
Result<bool> parse_bool(std::string_view value);

std::string trim(std::string_view in);

// `parts` with `separator` between them.
std::string join(const std::vector<std::string>& parts, std::string_view separator);

// "namespace/name", or "name" when `ns` is empty (a cluster-scoped object): how eslease names
// a namespaced thing everywhere, as the informer caches' keys, a lock's document id and the
// lease and holder a lock document names.
std::string object_key(std::string_view ns, std::string_view name);
// key == object_key(ns, name), without building it.
bool is_object_key(std::string_view key, std::string_view ns, std::string_view name);

// Rows as left-aligned columns two spaces apart, one line each, as kubectl prints tables.
std::string format_columns(const std::vector<std::vector<std::string>>& rows);

// Wraps `words` into lines of at most `width`, each after `indent` spaces but the first:
// the right-hand column of a --help text.
std::string wrap_words(const std::string& words, std::size_t indent, std::size_t width);

}  // namespace eslease
