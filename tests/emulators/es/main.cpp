// es-emulator --listen HOST:PORT [--tls-cert F --tls-key F] [--basic-auth-file F]
//             [--api-key-file F] [--upstream URL]
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "common/text.h"
#include "emulators/es/es_emulator.h"
#include "http/server.h"

namespace {

constexpr const char* kUsage =
    "usage: es-emulator --listen HOST:PORT [--tls-cert FILE --tls-key FILE]\n"
    "                   [--basic-auth-file FILE (one line user:password)]\n"
    "                   [--api-key-file FILE (one line id:key)] [--upstream URL]\n"
    "It serves an Elasticsearch 8 stand-in on HOST:PORT (port 0: any free port), prints\n"
    "\"es-emulator listening on URL\" and serves until SIGINT or SIGTERM.\n"
    "With --upstream it is the fault proxy instead: a real Elasticsearch or OpenSearch at URL\n"
    "answers every request, under the same fault rules and request counters.\n";

int usage(const std::string& problem) {
  std::cerr << "es-emulator: " << problem << "\n" << kUsage;
  return 2;
}

bool read_first_line(const std::string& path, std::string& out) {
  std::ifstream in(path);
  if (!in || !std::getline(in, out)) return false;
  out = eslease::trim(out);
  return !out.empty();
}

// Takes one flag's value into `options`; the problem with it, if any.
std::optional<std::string> apply_flag(const std::string& flag, const std::string& value,
                                      eslease::esemu::EsEmulatorOptions& options) {
  if (flag == "--listen") {
    auto address = eslease::http::parse_listen_address(value);
    if (!address.ok()) return "bad --listen address: " + address.error().message;
    options.host = address->first;
    options.port = address->second;
  } else if (flag == "--tls-cert") {
    options.tls_cert_file = value;
  } else if (flag == "--tls-key") {
    options.tls_key_file = value;
  } else if (flag == "--basic-auth-file") {
    std::string line;
    if (!read_first_line(value, line) || line.find(':') == std::string::npos) {
      return "--basic-auth-file must hold one line user:password";
    }
    options.basic_auth = std::make_pair(line.substr(0, line.find(':')), line.substr(line.find(':') + 1));
  } else if (flag == "--upstream") {
    if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0) {
      return "--upstream wants an http:// or https:// URL, got " + value;
    }
    options.upstream = value;
  } else if (flag == "--api-key-file") {
    std::string line;
    if (!read_first_line(value, line) || line.find(':') == std::string::npos) {
      return "--api-key-file must hold one line id:key";
    }
    options.api_key = line;
  }
  return std::nullopt;
}

// Reads the command line into `options`: nullopt to serve, else the exit code (--help, or a
// usage error already printed).
std::optional<int> parse_flags(int argc, char** argv, eslease::esemu::EsEmulatorOptions& options) {
  bool listen_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (flag != "--listen" && flag != "--tls-cert" && flag != "--tls-key" && flag != "--basic-auth-file" &&
        flag != "--api-key-file" && flag != "--upstream") {
      return usage("unknown flag " + flag);
    }
    if (i + 1 >= argc) return usage("missing value for " + flag);
    if (auto problem = apply_flag(flag, argv[++i], options)) return usage(*problem);
    listen_given = listen_given || flag == "--listen";
  }
  if (!listen_given) return usage("--listen is required");
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return usage("--tls-cert and --tls-key go together");
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  eslease::esemu::EsEmulatorOptions options;
  if (auto exit_code = parse_flags(argc, argv, options)) return *exit_code;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  // Blocked before any server thread starts, so only sigwait below receives them.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  eslease::esemu::EsEmulator emulator(options);
  auto started = emulator.start();
  if (!started.ok()) {
    std::cerr << "es-emulator: cannot start: " << started.error().describe() << "\n";
    return 1;
  }
  std::cout << "es-emulator listening on " << emulator.url() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  emulator.stop();
  return 0;
}
