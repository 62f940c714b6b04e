#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <sstream>

namespace eslease {
namespace {

bool is_unreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string percent_encode(std::string_view in) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size() * 3);
  for (unsigned char c : in) {
    if (is_unreserved(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view in, bool form_encoding) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = hex_value(in[i + 1]);
      int lo = hex_value(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && form_encoding) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

namespace {

// The length of the valid UTF-8 sequence at `in[i]`, 0 when the bytes there are not one
// (a stray or truncated byte, an overlong form, a surrogate, beyond U+10FFFF).
std::size_t utf8_sequence_at(std::string_view in, std::size_t i, std::uint32_t& cp) {
  const auto c = static_cast<unsigned char>(in[i]);
  std::size_t len = 0;
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > in.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(in[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

void append_hex(std::string& out, const char* prefix, std::uint32_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += kDigits[(value >> shift) & 0x0F];
}

void append_hex_byte(std::string& out, unsigned char byte) {
  append_hex(out, "\\x", byte, 2);
}

// Invisible characters that reorder or hide text on a terminal (zero-width, bidirectional
// embeddings, overrides and isolates, the byte-order mark): a message shows them escaped.
bool reorders_or_hides_text(std::uint32_t cp) {
  return (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0xFEFF;
}

}  // namespace

bool is_valid_utf8(std::string_view in) {
  std::uint32_t cp = 0;
  for (std::size_t i = 0; i < in.size();) {
    const std::size_t len = utf8_sequence_at(in, i, cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string printable(std::string_view in, std::size_t max_bytes) {
  std::string out;
  std::uint32_t cp = 0;
  std::size_t i = 0;
  while (i < in.size()) {
    if (i >= max_bytes) return out + "...";
    const std::size_t len = utf8_sequence_at(in, i, cp);
    const auto byte = static_cast<unsigned char>(in[i]);
    if (len == 0) {
      append_hex_byte(out, byte);  // not UTF-8: the byte itself
      ++i;
      continue;
    }
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      append_hex_byte(out, byte);
    } else if (cp >= 0x80 && cp <= 0x9F) {  // C1 controls, two bytes each
      append_hex_byte(out, byte);
      append_hex_byte(out, static_cast<unsigned char>(in[i + 1]));
    } else if (reorders_or_hides_text(cp)) {
      append_hex(out, "\\u", cp, 4);
    } else {
      out.append(in.substr(i, len));
    }
    i += len;
  }
  return out;
}

namespace {

// `value` as `width` decimal digits at `out` (value < 10^width).
void put_digits(char* out, long long value, int width) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
}

// RFC 3339 in UTC with `digits` fractional digits (0, 3 or 6). Written digit by digit: a
// renewal tick formats three times per held document. A WallTime (nanoseconds since 1970 in
// 64 bits) lies within the years 1677 to 2262, so four digits of year always hold it.
std::string format_utc(WallTime t, int digits) {
  using namespace std::chrono;
  const auto micros_since_epoch = floor<microseconds>(t.time_since_epoch());
  const sys_days day = floor<days>(sys_time<microseconds>(micros_since_epoch));
  const year_month_day date(day);
  const hh_mm_ss<microseconds> time(micros_since_epoch - day.time_since_epoch());
  const int year = static_cast<int>(date.year());
  char buf[32];  // YYYY-MM-DDTHH:MM:SS.ffffffZ
  put_digits(buf, year, 4);
  buf[4] = '-';
  put_digits(buf + 5, static_cast<unsigned>(date.month()), 2);
  buf[7] = '-';
  put_digits(buf + 8, static_cast<unsigned>(date.day()), 2);
  buf[10] = 'T';
  put_digits(buf + 11, time.hours().count(), 2);
  buf[13] = ':';
  put_digits(buf + 14, time.minutes().count(), 2);
  buf[16] = ':';
  put_digits(buf + 17, time.seconds().count(), 2);
  std::size_t size = 19;
  if (digits > 0) {
    buf[size++] = '.';
    put_digits(buf + size, time.subseconds().count() / (digits == 3 ? 1000 : 1), digits);
    size += static_cast<std::size_t>(digits);
  }
  buf[size++] = 'Z';
  return std::string(buf, size);
}

}  // namespace

std::string format_rfc3339_millis(WallTime t) {
  return format_utc(t, 3);
}
std::string format_rfc3339_micros(WallTime t) {
  return format_utc(t, 6);
}
std::string format_rfc3339_seconds(WallTime t) {
  return format_utc(t, 0);
}

namespace {

// The `count` decimal digits of `in` at `pos` as a number; false when they are not there.
bool read_digits(std::string_view in, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > in.size()) return false;
  int v = 0;
  for (std::size_t k = 0; k < count; ++k) {
    char c = in[pos + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::optional<WallTime> parse_rfc3339(std::string_view in) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)
  auto digits = [in](std::size_t pos, std::size_t count, int& out) {
    return read_digits(in, pos, count, out);
  };
  int year, mon, day, hour, min, sec;
  if (!digits(0, 4, year) || in.size() < 20 || in[4] != '-' || !digits(5, 2, mon) || in[7] != '-' ||
      !digits(8, 2, day) || (in[10] != 'T' && in[10] != 't' && in[10] != ' ') || !digits(11, 2, hour) ||
      in[13] != ':' || !digits(14, 2, min) || in[16] != ':' || !digits(17, 2, sec)) {
    return std::nullopt;
  }
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60) return std::nullopt;
  std::size_t pos = 19;
  long long nanos = 0;
  if (pos < in.size() && in[pos] == '.') {
    ++pos;
    int count = 0;
    while (pos < in.size() && in[pos] >= '0' && in[pos] <= '9') {
      if (count < 9) {
        nanos = nanos * 10 + (in[pos] - '0');
        ++count;
      }
      ++pos;
    }
    if (count == 0) return std::nullopt;
    for (int k = count; k < 9; ++k) nanos *= 10;
  }
  if (pos >= in.size()) return std::nullopt;
  int offset_minutes = 0;
  if (in[pos] == 'Z' || in[pos] == 'z') {
    ++pos;
  } else if (in[pos] == '+' || in[pos] == '-') {
    int oh, om;
    if (!digits(pos + 1, 2, oh) || pos + 3 >= in.size() || in[pos + 3] != ':' || !digits(pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset_minutes = (oh * 60 + om) * (in[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != in.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  const std::time_t secs = timegm(&tm);
  using namespace std::chrono;
  return WallTime(
      duration_cast<WallTime::duration>(seconds(secs) - minutes(offset_minutes) + nanoseconds(nanos)));
}

std::string to_lower(std::string_view in) {
  std::string out(in);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<bool> parse_bool(std::string_view value) {
  const std::string v = to_lower(value);
  if (v == "true" || v == "t" || v == "1") return true;
  if (v == "false" || v == "f" || v == "0") return false;
  return make_error(ErrorCode::kInvalidArgument, "must be true or false, not \"" + printable(value) + "\"");
}

std::string trim(std::string_view in) {
  const char* ws = " \t\r\n";
  const auto b = in.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const auto e = in.find_last_not_of(ws);
  return std::string(in.substr(b, e - b + 1));
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty() || &part != &parts.front()) out += separator;
    out += part;
  }
  return out;
}

std::string object_key(std::string_view ns, std::string_view name) {
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  if (!ns.empty()) key.append(ns).append("/");
  return key.append(name);
}

bool is_object_key(std::string_view key, std::string_view ns, std::string_view name) {
  if (ns.empty()) return key == name;
  return key.size() == ns.size() + 1 + name.size() && key.starts_with(ns) && key[ns.size()] == '/' &&
         key.ends_with(name);
}

std::string format_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) {
      out += row[c];
      if (c + 1 < row.size()) out.append(widths[c] - row[c].size() + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

std::string wrap_words(const std::string& words, std::size_t indent, std::size_t width) {
  std::istringstream in(words);
  std::string out;
  std::string line;
  for (std::string word; in >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

}  // namespace eslease
