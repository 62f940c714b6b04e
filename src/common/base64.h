// Standard base64 (RFC 4648, padded): HTTP basic and API-key headers, kubeconfig
// certificate data, continue tokens.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace eslease {

std::string base64_encode(std::string_view in);
// Ignores whitespace (PEM and kubeconfig data wrap lines). nullopt on a character outside
// the alphabet, data after padding, or a length that is not a multiple of four.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace eslease
