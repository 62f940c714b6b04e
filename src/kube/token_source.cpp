#include "kube/token_source.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/log.h"
#include "common/text.h"

namespace eslease::kube {

TokenSource TokenSource::fixed(std::string token) {
  TokenSource source;
  source.token_ = std::move(token);
  source.loaded_ = true;
  return source;
}

TokenSource TokenSource::from_file(std::filesystem::path path) {
  TokenSource source;
  source.path_ = std::move(path);
  return source;
}

TokenSource::TokenSource(TokenSource&& other) noexcept {
  std::lock_guard lock(other.mutex_);
  token_ = std::move(other.token_);
  path_ = std::move(other.path_);
  seen_mtime_ = other.seen_mtime_;
  seen_size_ = other.seen_size_;
  loaded_ = other.loaded_;
}

Result<std::string> TokenSource::token() {
  std::lock_guard lock(mutex_);
  if (path_.empty()) return token_;
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(path_, ec);
  std::uintmax_t size = ec ? 0 : std::filesystem::file_size(path_, ec);
  if (!ec && loaded_ && seen_mtime_ == mtime && seen_size_ == size) return token_;
  std::ifstream in(path_, std::ios::binary);
  std::stringstream content;
  if (!ec && in) content << in.rdbuf();
  if (ec || (!in.good() && !in.eof())) {
    if (loaded_) {
      log::warn("kube token file unreadable, using the last token read", {{"path", path_.string()}});
      return token_;
    }
    return make_error(ErrorCode::kInvalidArgument, "cannot read token file " + path_.string());
  }
  std::string token = trim(content.str());
  if (token.empty() && loaded_) return token_;  // a file caught mid-rewrite
  token_ = std::move(token);
  seen_mtime_ = mtime;
  seen_size_ = size;
  loaded_ = true;
  return token_;
}

}  // namespace eslease::kube
