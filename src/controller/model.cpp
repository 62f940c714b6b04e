#include "controller/model.h"

#include <algorithm>
#include <array>
#include <charconv>

namespace eslease::controller {

const Condition* LeaseStatus::condition(const std::string& type) const {
  for (const Condition& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool LeaseStatus::shows_held(std::int64_t token) const {
  return phase == Phase::kHeld && names_fencing_token(fencing_token, token);
}

std::optional<std::int64_t> parse_fencing_token(std::string_view text) {
  std::int64_t token = 0;
  const char* end = text.data() + text.size();
  auto parsed = std::from_chars(text.data(), end, token);
  if (parsed.ec != std::errc() || parsed.ptr != end) return std::nullopt;
  return token;
}

bool names_fencing_token(std::string_view text, std::int64_t token) {
  std::array<char, 24> digits{};  // an int64's 19 digits and its sign
  const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), token);
  return text == std::string_view(digits.data(), static_cast<std::size_t>(written.ptr - digits.data()));
}

bool LeaseRecord::has_finalizer() const {
  return std::find(finalizers.begin(), finalizers.end(), api::kFinalizer) != finalizers.end();
}

}  // namespace eslease::controller
