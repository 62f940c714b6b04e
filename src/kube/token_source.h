// Where the bearer token comes from: a fixed string, or a file that is re-read as it
// rotates (projected service-account tokens are replaced about hourly). client-go re-reads
// its token file at most once a minute; we check the file's modification time and size on
// every request (one stat) and re-read only when they change, so a rotation is picked up
// at the next request. When a re-read fails, the last good token keeps being used.
#pragma once

#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"

namespace eslease::kube {

class TokenSource {
 public:
  static TokenSource fixed(std::string token);
  static TokenSource from_file(std::filesystem::path path);
  TokenSource(TokenSource&& other) noexcept;

  // The current token; an Error only when the file has never been readable.
  Result<std::string> token();

 private:
  TokenSource() = default;

  std::mutex mutex_;
  std::string token_;
  std::filesystem::path path_;  // empty for a fixed token
  std::optional<std::filesystem::file_time_type> seen_mtime_;
  std::uintmax_t seen_size_ = 0;
  bool loaded_ = false;
};

}  // namespace eslease::kube
