// es-emulator: a faithful single-node stand-in for Elasticsearch 8's document, index and
// search APIs, used by tests, benchmarks and the demo. See README.md in this folder for
// what is emulated, the admin endpoints (/_emulator/...) and the decisions taken where
// the real server's behaviour could not be reproduced exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/result.h"

namespace eslease::esemu {

struct EsEmulatorOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0 = pick a free port
  std::string tls_cert_file, tls_key_file;
  std::optional<std::pair<std::string, std::string>> basic_auth;  // user, password
  std::optional<std::string> api_key;  // "id:key"; clients send Authorization: ApiKey base64(id:key)
  // The fault proxy: when set (http://HOST:PORT of a real Elasticsearch or OpenSearch), every
  // request is passed to that engine and its answer back, under the same fault rules and
  // request counters as the emulator's own answers (README.md, "The fault proxy").
  std::string upstream;
};

class EsEmulator {
 public:
  // `clock` times everything the emulator does: timestamps, the refresh schedule, injected delays.
  explicit EsEmulator(EsEmulatorOptions options = {}, Clock& clock = SystemClock::instance());
  ~EsEmulator();
  EsEmulator(const EsEmulator&) = delete;
  EsEmulator& operator=(const EsEmulator&) = delete;

  Status start();
  void stop();
  std::string url() const;  // e.g. http://127.0.0.1:40123

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace eslease::esemu
