// Parsing helpers for the server side: query strings and listen addresses.
#include "common/address.h"
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
  auto parsed = parse_host_port(address);
  if (!parsed.ok()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "invalid listen address \"" + std::string(address) + "\": " + parsed.error().message);
  }
  return std::pair<std::string, std::uint16_t>{std::move(parsed->host), parsed->port};
}

}  // namespace eslease::http
