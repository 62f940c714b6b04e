#include "http/target.h"

#include <algorithm>
#include <cctype>

namespace eslease::http {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

Error invalid(std::string_view url, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument, "invalid URL " + std::string(url) + ": " + why);
}

}  // namespace

Result<Target> parse_target(std::string_view url) {
  if (std::any_of(url.begin(), url.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f; }))
    return make_error(ErrorCode::kInvalidArgument, "invalid URL: it contains spaces or control characters");
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return invalid(url, "no scheme");
  Target target;
  const std::string_view scheme = url.substr(0, scheme_end);
  if (equals_ignoring_case(scheme, "https")) {
    target.https = true;
  } else if (!equals_ignoring_case(scheme, "http")) {
    return make_error(ErrorCode::kInvalidArgument, "unsupported URL scheme in " + std::string(url));
  }
  std::string_view rest = url.substr(scheme_end + 3);
  const auto path_start = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, path_start);
  std::string_view resource = path_start == std::string_view::npos ? "" : rest.substr(path_start);
  if (const auto fragment = resource.find('#'); fragment != std::string_view::npos)
    resource = resource.substr(0, fragment);
  // Not echoed: the text before '@' is a password.
  if (authority.find('@') != std::string_view::npos)
    return make_error(ErrorCode::kInvalidArgument,
                      "invalid URL: credentials belong in a file, not in the URL");
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return invalid(url, "unclosed IPv6 address");
    target.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return invalid(url, "unexpected text after the IPv6 address");
      port = after.substr(1);
    }
  } else {
    const auto colon = authority.find(':');
    target.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (target.host.empty())
    return make_error(ErrorCode::kInvalidArgument, "URL has no host: " + std::string(url));
  if (!port.empty()) {
    if (port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(std::string(port)) > 65535 || std::stoi(std::string(port)) == 0)
      return invalid(url, "bad port");
    target.port = std::string(port);
  } else {
    target.port = target.https ? "443" : "80";
  }
  const std::string bracketed =
      target.host.find(':') != std::string::npos ? "[" + target.host + "]" : target.host;
  target.authority = (target.https ? "https://" : "http://") + bracketed + ":" + target.port;
  target.host_header = bracketed + (port.empty() ? "" : ":" + target.port);
  target.resource =
      resource.empty() || resource.front() != '/' ? "/" + std::string(resource) : std::string(resource);
  target.display = target.authority + target.resource.substr(0, target.resource.find('?'));
  return target;
}

bool is_framing_header(std::string_view name) {
  for (std::string_view framing : {"content-length", "transfer-encoding", "connection", "host"}) {
    if (equals_ignoring_case(name, framing)) return true;
  }
  return false;
}

}  // namespace eslease::http
