// Listen and bind addresses, parsed in one place: the emulators' --listen, the
// controller's --metrics-bind-address and --health-probe-bind-address, and the servers
// behind them all read the same forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace eslease {

struct HostPort {
  std::string host;        // a name, an IPv4 address or an IPv6 address without brackets
  std::uint16_t port = 0;  // 0 = let the system pick a free port

  // "host:port", with brackets around an IPv6 host.
  std::string to_string() const;
};

// "host:port", "[ipv6]:port" or ":port" (every IPv4 interface, as Go's listeners read it).
// kInvalidArgument whose message says what is wrong, without repeating the address.
Result<HostPort> parse_host_port(std::string_view address);

// A server's bind address in the convention of Kubernetes controllers: an address as
// above, or "0" to turn the server off (nullopt).
Result<std::optional<HostPort>> parse_bind_address(std::string_view address);

}  // namespace eslease
