// JSON text written directly, for documents written so often that building a JSON value
// first would cost more than the rest of the write (the lock store's renewals: one document
// per held lock every tick).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace eslease::json_text {

// Appends `text` as a JSON string: quoted, '"', '\' and control characters escaped as
// nlohmann::json's dump() escapes them, every other byte as it is.
void append_string(std::string& out, std::string_view text);

// A JSON object's members, in the order they are added.
class ObjectWriter {
 public:
  ObjectWriter() { out_.reserve(512); }  // a lock document's size: written without regrowing
  ObjectWriter& add(std::string_view key, std::string_view value);
  ObjectWriter& add(std::string_view key, std::int64_t value);
  ObjectWriter& add(std::string_view key, const std::vector<std::string>& values);
  // Closes the object and hands over its text: call once, last.
  std::string finish();

 private:
  void key(std::string_view name);
  std::string out_ = "{";
};

}  // namespace eslease::json_text
