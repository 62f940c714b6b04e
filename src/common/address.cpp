#include "common/address.h"

#include <cctype>
#include <charconv>

namespace eslease {

std::string HostPort::to_string() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<HostPort> parse_host_port(std::string_view address) {
  auto invalid = [](std::string why) { return make_error(ErrorCode::kInvalidArgument, std::move(why)); };
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
  return HostPort{host.empty() ? std::string("0.0.0.0") : std::string(host),
                  static_cast<std::uint16_t>(port)};
}

Result<std::optional<HostPort>> parse_bind_address(std::string_view address) {
  if (address == "0") return std::optional<HostPort>();
  auto parsed = parse_host_port(address);
  if (!parsed.ok()) return parsed.error();
  return std::optional<HostPort>(std::move(*parsed));
}

}  // namespace eslease
