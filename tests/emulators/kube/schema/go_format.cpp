#include "emulators/kube/schema/go_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace eslease::kubeemu::schema::detail {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], 0 when invalid.
size_t utf8_sequence_length(std::string_view text, size_t i, char32_t& code_point) {
  const auto byte = static_cast<unsigned char>(text[i]);
  size_t length = 0;
  if (byte < 0x80) {
    code_point = byte;
    return 1;
  }
  if ((byte & 0xE0) == 0xC0) {
    length = 2;
    code_point = byte & 0x1F;
  } else if ((byte & 0xF0) == 0xE0) {
    length = 3;
    code_point = byte & 0x0F;
  } else if ((byte & 0xF8) == 0xF0) {
    length = 4;
    code_point = byte & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  const bool overlong = (length == 2 && code_point < 0x80) || (length == 3 && code_point < 0x800) ||
                        (length == 4 && code_point < 0x10000);
  if (overlong || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

std::string hex_escape(const char* prefix, unsigned value, int digits) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%s%0*x", prefix, digits, value);
  return buffer;
}

}  // namespace

std::string go_quote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    char32_t code_point = 0;
    const size_t length = utf8_sequence_length(text, i, code_point);
    if (length == 0) {
      out += hex_escape("\\x", static_cast<unsigned char>(text[i]), 2);
      ++i;
      continue;
    }
    if (length == 1) {
      const char c = text[i];
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (code_point < 0x20 || code_point == 0x7F) {
            out += hex_escape("\\x", code_point, 2);
          } else {
            out += c;
          }
      }
    } else if ((code_point >= 0x80 && code_point < 0xA0) || code_point == 0xAD ||
               (code_point >= 0x2028 && code_point <= 0x2029) || code_point == 0xFEFF) {
      // Go treats these as non-printable (C1 controls, soft hyphen, separators, BOM).
      out += code_point > 0xFFFF ? hex_escape("\\U", code_point, 8) : hex_escape("\\u", code_point, 4);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  out += '"';
  return out;
}

std::string go_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == 0) return std::signbit(value) ? "-0" : "0";
  // Shortest round-trip digits, then Go's %v layout: %e when exp < -4 || exp >= 21.
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string scientific(buffer, end);
  const size_t e_pos = scientific.find('e');
  std::string mantissa = scientific.substr(0, e_pos);
  const int exponent = std::stoi(scientific.substr(e_pos + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 21) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buffer[16];
    std::snprintf(exp_buffer, sizeof exp_buffer, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp_buffer;
  }
  if (exponent < 0) {
    return out + "0." + std::string(static_cast<size_t>(-exponent) - 1, '0') + digits;
  }
  const auto integer_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integer_digits) return out + digits + std::string(integer_digits - digits.size(), '0');
  return out + digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
}

std::string go_number(const nlohmann::json& number) {
  if (number.is_number_integer()) return number.dump();
  return go_float(number.get<double>());
}

std::string go_sharp_v(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "interface {}(nil)";
    case nlohmann::json::value_t::string:
      return go_quote(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::object: {
      std::string out = "map[string]interface {}{";
      bool first = true;
      for (const auto& [key, member] : value.items()) {  // nlohmann orders keys like Go's fmt
        if (!first) out += ", ";
        first = false;
        out += go_quote(key) + ":" + go_sharp_v(member);
      }
      return out + "}";
    }
    case nlohmann::json::value_t::array: {
      std::string out = "[]interface {}{";
      for (size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += ", ";
        out += go_sharp_v(value[i]);
      }
      return out + "}";
    }
    default:
      return go_number(value);
  }
}

std::string go_plain_v(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "<nil>";
    case nlohmann::json::value_t::string:
      return value.get<std::string>();
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::object: {
      std::string out = "map[";
      bool first = true;
      for (const auto& [key, member] : value.items()) {
        if (!first) out += " ";
        first = false;
        out += key + ":" + go_plain_v(member);
      }
      return out + "]";
    }
    case nlohmann::json::value_t::array:
      return go_slice_v(value);
    default:
      return go_number(value);
  }
}

std::string go_slice_v(const nlohmann::json& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += " ";
    out += go_plain_v(values[i]);
  }
  return out + "]";
}

std::string error_body_with_value(std::string_view type_text, const nlohmann::json& bad_value,
                                  std::string_view detail) {
  std::string out(type_text);
  out += ": ";
  if (bad_value.is_null()) {
    out += "\"null\"";
  } else if (bad_value.is_string()) {
    out += go_quote(bad_value.get_ref<const std::string&>());
  } else if (bad_value.is_number() || bad_value.is_boolean()) {
    out += bad_value.is_boolean() ? (bad_value.get<bool>() ? "true" : "false") : go_number(bad_value);
  } else {
    out += go_sharp_v(bad_value);
  }
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

}  // namespace eslease::kubeemu::schema::detail
