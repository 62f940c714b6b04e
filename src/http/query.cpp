// Parsing helpers for the server side: query strings and listen addresses.
#include <charconv>

#include "common/text.h"
#include "http/server.h"

namespace eslease::http {

std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  auto decode = [](std::string_view raw) {
    auto decoded = percent_decode(raw, /*form_encoding=*/true);
    return decoded ? std::move(*decoded) : std::string(raw);
  };
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    std::string_view piece = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (piece.empty()) continue;
    const std::size_t eq = piece.find('=');
    if (eq == std::string_view::npos) {
      out.emplace_back(decode(piece), std::string{});
    } else {
      out.emplace_back(decode(piece.substr(0, eq)), decode(piece.substr(eq + 1)));
    }
  }
  return out;
}

Result<std::pair<std::string, std::uint16_t>> parse_listen_address(std::string_view address) {
  auto invalid = [&](std::string_view why) {
    return make_error(ErrorCode::kInvalidArgument,
                      "invalid listen address \"" + std::string(address) + "\": " + std::string(why));
  };
  std::string_view host;
  std::string_view port_text;
  if (!address.empty() && address.front() == '[') {
    const std::size_t close = address.find(']');
    if (close == std::string_view::npos) return invalid("missing ']'");
    host = address.substr(1, close - 1);
    if (host.empty()) return invalid("empty host");
    if (close + 1 >= address.size() || address[close + 1] != ':') return invalid("expected host:port");
    port_text = address.substr(close + 2);
  } else {
    const std::size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return invalid("expected host:port");
    host = address.substr(0, colon);
    if (host.find(':') != std::string_view::npos) return invalid("IPv6 addresses need brackets: [::1]:8080");
    port_text = address.substr(colon + 1);
  }
  for (char c : host) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '/' || c == '[' || c == ']') {
      return invalid("bad character in host");
    }
  }
  if (port_text.empty() || port_text.size() > 5) return invalid("port must be a number from 0 to 65535");
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535) {
    return invalid("port must be a number from 0 to 65535");
  }
  // ":8080" means every interface, as in most listen flags.
  std::string host_string = host.empty() ? std::string("0.0.0.0") : std::string(host);
  return std::pair<std::string, std::uint16_t>{std::move(host_string), static_cast<std::uint16_t>(port)};
}

}  // namespace eslease::http
