// How both executables reach the lock index: the nine --es* flags they share (one table, so
// `eslease` and `eslease-controller` read them alike), and the one way to open the lock
// store from them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "lock/lock_store.h"

namespace eslease::lock {

struct ConnectionSettings {
  std::vector<std::string> hosts;         // --es URL, repeatable: tried in order
  std::string index = kDefaultIndex;      // --index
  std::string ca_file;                    // --es-ca-file; empty: the system's CAs
  bool insecure_skip_tls_verify = false;  // --es-insecure-skip-tls-verify
  // Credentials are only ever paths to files.
  std::string username;           // --es-username, with --es-password-file
  std::string password_file;      // --es-password-file
  std::string api_key_file;       // --es-api-key-file
  std::string bearer_token_file;  // --es-bearer-token-file
  Millis request_timeout{5000};   // --es-timeout: within what grants ride out at the default lease duration
};

// The shortest --es-timeout accepted.
inline constexpr Millis kMinRequestTimeout{100};

// One of the nine flags.
struct ConnectionFlag {
  enum class Kind { kText, kList, kBool, kDuration };
  const char* name;  // without the dashes: "es-timeout"
  Kind kind;
  const char* value_name;    // "URL", "FILE", ... ("" for the boolean)
  std::string default_text;  // ConnectionSettings{}'s value as a user writes it; "" for none
  const char* help;
  // Applies one value (a list: one element; the boolean: a spelling parse_bool reads, in
  // common/text.h), checked on its own: the URL's form, the index name's rules, the
  // timeout's form and minimum. The error (kInvalidArgument) says what is wrong without
  // naming the flag: the caller knows where the value came from.
  std::function<Status(ConnectionSettings&, const std::string& value)> apply;
};

// The nine flags in the order help lists them.
const std::vector<ConnectionFlag>& connection_flags();
// nullptr when `name` (without the dashes) is not one of them.
const ConnectionFlag* find_connection_flag(std::string_view name);

// The rules between the flags, and the Elasticsearch client's: at least one host, one kind
// of credentials at most, basic authentication with both of its parts.
Status validate(const ConnectionSettings& settings);

struct OpenOptions {
  std::string writer;  // StoreOptions::writer; empty: a random one
  // Observes every Elasticsearch exchange (op, HTTP status or 0, duration): metrics.
  std::function<void(std::string_view op, int status, Millis duration)> on_request;
  std::function<void(const FencingReport&)> on_fencing;  // StoreOptions::on_fencing
  bool awaits_token_history = false;                     // StoreOptions::awaits_token_history
};

// The Elasticsearch client for `settings` (HTTP, TLS as they say) and the lock store over
// it, which owns it. Nothing is contacted; an invalid setting is kInvalidArgument.
Result<std::unique_ptr<LockStore>> open_lock_store(const ConnectionSettings& settings, Clock& clock,
                                                   OpenOptions options = {});

}  // namespace eslease::lock
