// Incremental decoder for a watch stream: the API server writes one JSON event per line
// ({"type": "...", "object": {...}}), and the transport hands us bytes cut anywhere.
// Pure (no I/O): a fuzz target.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "kube/api.h"

namespace eslease::kube {

class WatchDecoder {
 public:
  static constexpr std::size_t kDefaultMaxLine = 16 * 1024 * 1024;
  explicit WatchDecoder(std::size_t max_line_bytes = kDefaultMaxLine) : max_line_(max_line_bytes) {}

  // Adds bytes and returns the events completed by them. After an error the stream is
  // unusable and every later call fails too.
  Result<std::vector<WatchEvent>> feed(std::string_view bytes);
  // At the end of the stream: an error when a partial event is left over (truncated).
  Status finish() const;

 private:
  Result<WatchEvent> decode_line(std::string_view line) const;

  std::size_t max_line_;
  std::string pending_;
  std::optional<Error> failed_;
};

// Decodes one complete event (one line without its newline).
Result<WatchEvent> decode_watch_event(std::string_view line);

}  // namespace eslease::kube
