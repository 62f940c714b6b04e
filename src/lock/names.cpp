#include "lock/names.h"

#include <iomanip>
#include <random>
#include <sstream>

#include "common/text.h"

namespace eslease::lock {
namespace {

// C0 controls, DEL, and the C1 controls (U+0080..U+009F, encoded as C2 80..C2 9F).
bool has_control_characters(std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < value.size()) {
      const auto next = static_cast<unsigned char>(value[i + 1]);
      if (next >= 0x80 && next <= 0x9F) return true;
    }
  }
  return false;
}

}  // namespace

Result<LockKey> make_lock_key(std::string_view ns, std::string_view name) {
  if (auto status = validate_namespace(ns); !status.ok()) return status.error();
  if (auto status = validate_lock_name(name); !status.ok()) return status.error();
  LockKey key;
  key.ns_ = std::string(ns);
  key.name_ = std::string(name);
  return key;
}

Result<LockKey> parse_lock_id(std::string_view id) {
  const auto slash = id.find('/');
  if (slash == std::string_view::npos) {
    return make_error(ErrorCode::kInvalidArgument, "lock id has no '<namespace>/' prefix");
  }
  return make_lock_key(id.substr(0, slash), id.substr(slash + 1));
}

Status validate_identity(std::string_view what, std::string_view value, bool allow_empty) {
  if (value.empty()) {
    if (allow_empty) return {};
    return make_error(ErrorCode::kInvalidArgument, std::string(what) + " must not be empty");
  }
  if (value.size() > kMaxIdentityBytes) {
    return make_error(ErrorCode::kInvalidArgument, std::string(what) + " is " + std::to_string(value.size()) +
                                                       " bytes long; at most " +
                                                       std::to_string(kMaxIdentityBytes) + " are allowed");
  }
  if (!is_valid_utf8(value)) {
    return make_error(ErrorCode::kInvalidArgument, std::string(what) + " is not valid UTF-8");
  }
  if (has_control_characters(value)) {
    return make_error(ErrorCode::kInvalidArgument, std::string(what) + " contains control characters");
  }
  return {};
}

Status validate_index_name(std::string_view index) {
  if (index.empty() || index.size() > 255) {
    return make_error(ErrorCode::kInvalidArgument, "index name must be 1 to 255 bytes long");
  }
  if (index == "." || index == "..")
    return make_error(ErrorCode::kInvalidArgument, "index name cannot be . or ..");
  if (index.front() == '-' || index.front() == '_' || index.front() == '+') {
    return make_error(ErrorCode::kInvalidArgument, "index name must not start with -, _ or +");
  }
  for (unsigned char c : index) {
    if (c < 0x20 || c == 0x7F || (c >= 'A' && c <= 'Z') ||
        std::string_view("\\/*?\"<>| ,#:").find(static_cast<char>(c)) != std::string_view::npos) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "index name must be lowercase without \\ / * ? \" < > | space , # : or control characters");
    }
  }
  if (!is_valid_utf8(index)) return make_error(ErrorCode::kInvalidArgument, "index name is not valid UTF-8");
  return {};
}

std::string random_id(std::string_view prefix, int words) {
  std::random_device device;
  std::ostringstream out;
  out << prefix << std::hex << std::setfill('0');
  for (int i = 0; i < words; ++i) out << std::setw(8) << device();
  return out.str();
}

}  // namespace eslease::lock
