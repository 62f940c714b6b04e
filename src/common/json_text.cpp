#include "common/json_text.h"

namespace eslease::json_text {

void append_string(std::string& out, std::string_view text) {
  // The control characters JSON names by a letter (\b \f \n \r \t); the others are \u00XX.
  static constexpr std::string_view kNamed = "\b\f\n\r\t";
  static constexpr std::string_view kLetters = "bfnrt";
  static constexpr std::string_view kHex = "0123456789abcdef";
  out += '"';
  // Bytes that need no escape (nearly all) are copied a run at a time.
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (const std::size_t named = kNamed.find(c); named != std::string_view::npos) {
      out += '\\';
      out += kLetters[named];
    } else {
      out += "\\u00";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xfU];
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

void ObjectWriter::key(std::string_view name) {
  if (out_.size() > 1) out_ += ',';
  append_string(out_, name);
  out_ += ':';
}

ObjectWriter& ObjectWriter::add(std::string_view key_name, std::string_view value) {
  key(key_name);
  append_string(out_, value);
  return *this;
}

ObjectWriter& ObjectWriter::add(std::string_view key_name, std::int64_t value) {
  key(key_name);
  out_ += std::to_string(value);
  return *this;
}

ObjectWriter& ObjectWriter::add(std::string_view key_name, const std::vector<std::string>& values) {
  key(key_name);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    append_string(out_, values[i]);
  }
  out_ += ']';
  return *this;
}

std::string ObjectWriter::finish() {
  out_ += '}';
  return std::move(out_);
}

}  // namespace eslease::json_text
