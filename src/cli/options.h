// Command-line parsing for `eslease` (direct mode). Pure: no I/O, so every flag rule is
// unit-tested.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"

namespace eslease::cli {

enum class Command { kHelp, kAcquire, kRenew, kRelease, kStatus, kRun };
enum class OutputFormat { kTable, kJson };

struct ConnectionOptions {
  std::vector<std::string> hosts;  // --es, repeatable
  std::string index;               // --index
  std::string ca_file;             // --es-ca-file
  bool insecure_skip_tls_verify = false;
  std::string username;           // --es-username
  std::string password_file;      // --es-password-file
  std::string api_key_file;       // --es-api-key-file
  std::string bearer_token_file;  // --es-bearer-token-file
  Millis request_timeout{10000};  // --es-timeout
};

struct Options {
  Command command = Command::kHelp;
  ConnectionOptions connection;
  std::string lock;            // positional LOCK
  std::string ns = "default";  // --namespace
  std::string holder;          // --holder (required for renew/release)
  Millis ttl{30000};           // --ttl
  bool ttl_given = false;
  Millis wait{0};                              // --wait
  std::optional<Millis> grace;                 // --grace (run)
  OutputFormat output = OutputFormat::kTable;  // --output
  std::vector<std::string> child;              // run: CMD ARGS... after "--"
};

// Parses argv (without the program name). kInvalidArgument with a message meant for the
// user on any mistake; the caller prints it with the usage hint and exits 2.
Result<Options> parse_options(const std::vector<std::string>& args);

std::string usage();

}  // namespace eslease::cli
