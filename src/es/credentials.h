// Elasticsearch credentials, read only from files (a mounted Secret) and re-read when the
// file changes, so a rotated password, API key or token is picked up without a restart.
// The secret never appears in an Error message or a log line.
#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"

namespace eslease::es {

struct CredentialOptions {
  std::string username;  // basic auth, with password_file
  std::string password_file;
  std::string api_key_file;       // "id:key" or its base64 encoding ("encoded" from the API)
  std::string bearer_token_file;  // an OAuth2/JWT bearer token
};

// Checks that at most one kind of credentials is configured and that basic auth has both
// parts.
Status validate(const CredentialOptions& options);

class CredentialProvider {
 public:
  explicit CredentialProvider(CredentialOptions options);

  // The Authorization header value to send, or nullopt without credentials. Re-reads the
  // file when its identity, size or modification time changed since the last read.
  Result<std::optional<std::string>> authorization();
  // Drops the cached secret so the next call reads the file again (after a 401).
  void invalidate();

 private:
  struct FileStamp {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;
    long long mtime_ns = 0;
    friend bool operator==(const FileStamp&, const FileStamp&) = default;
  };

  Result<std::string> read_secret(const std::string& path, FileStamp& stamp);

  CredentialOptions options_;
  std::mutex mutex_;
  std::optional<FileStamp> stamp_;
  std::string header_;
};

}  // namespace eslease::es
