#include "es/credentials.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "common/base64.h"
#include "common/text.h"

namespace eslease::es {

Status validate(const CredentialOptions& options) {
  const bool basic = !options.username.empty() || !options.password_file.empty();
  const int kinds =
      (basic ? 1 : 0) + (options.api_key_file.empty() ? 0 : 1) + (options.bearer_token_file.empty() ? 0 : 1);
  if (kinds > 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "choose one kind of Elasticsearch credentials: username with password file, "
                      "API key file, or bearer token file");
  }
  if (basic && (options.username.empty() || options.password_file.empty())) {
    return make_error(ErrorCode::kInvalidArgument,
                      "basic authentication needs both a username and a password file");
  }
  if (options.username.find(':') != std::string::npos) {
    return make_error(ErrorCode::kInvalidArgument, "the Elasticsearch username must not contain ':'");
  }
  return {};
}

CredentialProvider::CredentialProvider(CredentialOptions options) : options_(std::move(options)) {}

void CredentialProvider::invalidate() {
  std::lock_guard lock(mutex_);
  stamp_.reset();
}

Result<std::string> CredentialProvider::read_secret(const std::string& path, FileStamp& stamp) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(ErrorCode::kInvalidArgument, "cannot read credentials file " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::kInvalidArgument, "credentials file " + path + " is not a regular file");
  }
  stamp.device = st.st_dev;
  stamp.inode = st.st_ino;
  stamp.size = st.st_size;
  stamp.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kInvalidArgument, "cannot read credentials file " + path);
  std::ostringstream content;
  content << in.rdbuf();
  std::string secret = trim(content.str());
  if (secret.empty())
    return make_error(ErrorCode::kInvalidArgument, "credentials file " + path + " is empty");
  for (unsigned char c : secret) {
    if (c < 0x20 || c == 0x7F) {
      return make_error(ErrorCode::kInvalidArgument,
                        "credentials file " + path + " holds control characters (one secret, one line)");
    }
  }
  return secret;
}

Result<std::optional<std::string>> CredentialProvider::authorization() {
  const std::string& path = !options_.password_file.empty()  ? options_.password_file
                            : !options_.api_key_file.empty() ? options_.api_key_file
                                                             : options_.bearer_token_file;
  if (path.empty()) return std::optional<std::string>{};
  std::lock_guard lock(mutex_);
  struct stat st {};
  if (stamp_ && ::stat(path.c_str(), &st) == 0) {
    const long long mtime_ns =
        static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
    const FileStamp now{st.st_dev, st.st_ino, st.st_size, mtime_ns};
    if (now == *stamp_) return std::optional<std::string>(header_);
  }
  FileStamp stamp;
  auto secret = read_secret(path, stamp);
  if (!secret.ok()) return secret.error();
  if (!options_.password_file.empty()) {
    header_ = "Basic " + base64_encode(options_.username + ":" + *secret);
  } else if (!options_.api_key_file.empty()) {
    // The API returns both the id/key pair and its base64 "encoded" form; accept either.
    header_ = "ApiKey " + (secret->find(':') != std::string::npos ? base64_encode(*secret) : *secret);
  } else {
    header_ = "Bearer " + *secret;
  }
  stamp_ = stamp;
  return std::optional<std::string>(header_);
}

}  // namespace eslease::es
