// Fuzzes the watch-stream decoder: any bytes, cut into pieces at positions taken from the
// input itself, must decode without crashing, and cutting must not change the outcome.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kube/watch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 17;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);

  eslease::kube::WatchDecoder whole(4096);
  auto all = whole.feed(input);
  const bool whole_finished = all.ok() && whole.finish().ok();

  eslease::kube::WatchDecoder pieces(4096);
  std::size_t events = 0;
  bool ok = true;
  for (std::size_t at = 0; at < input.size() && ok; at += step) {
    auto got = pieces.feed(input.substr(at, step));
    ok = got.ok();
    if (ok) events += got->size();
  }
  // Same verdict and the same events whichever way the bytes arrive.
  if (ok != all.ok()) std::abort();
  if (ok && events != all->size()) std::abort();
  if (ok && (pieces.finish().ok() != whole_finished)) std::abort();
  return 0;
}
