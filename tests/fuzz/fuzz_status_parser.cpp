// Fuzzes the Status parser and the error mapping built on it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kube/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  auto status = eslease::kube::parse_status(body);
  eslease::http::Response response;
  response.status = size > 0 ? 400 + data[0] % 200 : 500;
  response.body = body;
  response.headers.emplace_back("Retry-After", body.substr(0, 8));
  eslease::Error error = eslease::kube::error_from_response(response);
  if (error.message.empty()) __builtin_trap();
  if (status) (void)eslease::kube::error_from_status(*status, response.status).describe();
  return 0;
}
