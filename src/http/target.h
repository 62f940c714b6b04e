// Where a request goes, taken apart from its URL once: the connection pool's key, the
// host to connect to and check the certificate of, and the request target.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace eslease::http {

struct Target {
  bool https = false;
  std::string host;         // name or address, without IPv6 brackets
  std::string port;         // digits; the scheme's default when the URL has none
  std::string authority;    // scheme://host:port, the connection pool key
  std::string host_header;  // host[:port] as the Host header carries it
  std::string resource;     // path?query, still encoded; "/" when the URL has no path
  std::string display;      // scheme://host:port/path for messages (no query: it may carry secrets)
};

// Accepts http:// and https:// URLs with a host, an optional port and an encoded path and
// query. A URL with spaces or control characters is refused, since they would end up in the
// request line.
Result<Target> parse_target(std::string_view url);

// Headers the transport writes itself from the body and the connection; a caller's would
// duplicate or contradict them.
bool is_framing_header(std::string_view name);

}  // namespace eslease::http
