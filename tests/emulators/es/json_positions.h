// Where a key or a byte sits in raw JSON text, as "[line:col] ": the prefix Elasticsearch's
// parser puts before its messages. Found by searching the text, which is exact for the
// simple bodies clients send.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace eslease::esemu {

// "[line:col] " of the value following the first occurrence of "key": in raw JSON text,
// the position Elasticsearch's parser reports; empty when not found.
std::string locate_value(std::string_view raw, std::string_view key);
// "[line:col] " of a byte offset in raw text, as Elasticsearch's parser counts them.
std::string locate_offset(std::string_view raw, std::size_t offset);
// "[line:col] " of that "key" itself (its opening quote), where an unknown field is reported.
std::string locate_key(std::string_view raw, std::string_view key);

}  // namespace eslease::esemu
