#include "kube/watch_decoder.h"

#include "kube/answer_json.h"

namespace eslease::kube {
namespace {

std::optional<WatchEvent::Type> parse_type(const std::string& type) {
  if (type == "ADDED") return WatchEvent::Type::kAdded;
  if (type == "MODIFIED") return WatchEvent::Type::kModified;
  if (type == "DELETED") return WatchEvent::Type::kDeleted;
  if (type == "BOOKMARK") return WatchEvent::Type::kBookmark;
  if (type == "ERROR") return WatchEvent::Type::kError;
  return std::nullopt;
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

Result<WatchEvent> decode_watch_event(std::string_view line) {
  json parsed = parse_answer(line);
  if (parsed.is_discarded())
    return make_error(ErrorCode::kProtocol, "watch stream: an event is not valid JSON");
  if (!parsed.is_object())
    return make_error(ErrorCode::kProtocol, "watch stream: an event is not a JSON object");
  auto type = parsed.find("type");
  if (type == parsed.end() || !type->is_string()) {
    return make_error(ErrorCode::kProtocol, "watch stream: an event has no string \"type\"");
  }
  auto kind = parse_type(type->get<std::string>());
  if (!kind) return make_error(ErrorCode::kProtocol, "watch stream: unknown event type");
  auto object = parsed.find("object");
  if (object == parsed.end() || !object->is_object()) {
    return make_error(ErrorCode::kProtocol, "watch stream: an event has no \"object\"");
  }
  WatchEvent event;
  event.type = *kind;
  event.object = std::move(*object);
  return event;
}

Result<WatchEvent> WatchDecoder::decode_line(std::string_view line) const {
  return decode_watch_event(line);
}

Result<std::vector<WatchEvent>> WatchDecoder::feed(std::string_view bytes) {
  if (failed_) return *failed_;
  std::vector<WatchEvent> events;
  std::size_t start = 0;
  while (start < bytes.size()) {
    auto newline = bytes.find('\n', start);
    std::string_view piece =
        bytes.substr(start, newline == std::string_view::npos ? std::string_view::npos : newline - start);
    if (pending_.size() + piece.size() > max_line_) {
      failed_ = make_error(ErrorCode::kProtocol,
                           "watch stream: an event exceeds " + std::to_string(max_line_) + " bytes");
      return *failed_;
    }
    if (newline == std::string_view::npos) {
      pending_.append(piece);
      break;
    }
    // Decode in place when the whole line is in this piece; copy only split lines.
    std::string_view line = piece;
    if (!pending_.empty()) {
      pending_.append(piece);
      line = pending_;
    }
    if (!is_blank(line)) {
      auto event = decode_line(line);
      if (!event.ok()) {
        failed_ = event.error();
        return *failed_;
      }
      events.push_back(std::move(event).value());
    }
    pending_.clear();
    start = newline + 1;
  }
  return events;
}

Status WatchDecoder::finish() const {
  if (failed_) return *failed_;
  if (!is_blank(pending_)) {
    return make_error(ErrorCode::kProtocol, "watch stream ended inside an event (" +
                                                std::to_string(pending_.size()) + " bytes left over)");
  }
  return {};
}

}  // namespace eslease::kube
