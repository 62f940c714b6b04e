// Standard base64 (RFC 4648, padded), for continue tokens and protobuf bytes fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace eslease::kubeemu {

std::string base64_encode(std::string_view in);
// nullopt on characters outside the alphabet.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace eslease::kubeemu
