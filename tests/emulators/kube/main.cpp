// kube-emulator --listen 127.0.0.1:PORT --kubeconfig-out FILE [--token-file F]
//               [--tls-cert F --tls-key F]
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/text.h"
#include "emulators/kube/kube_emulator.h"
#include "http/server.h"

namespace {

int usage() {
  std::cerr << "usage: kube-emulator --listen HOST:PORT --kubeconfig-out FILE [--token-file FILE]\n"
               "                     [--tls-cert FILE --tls-key FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using eslease::kubeemu::KubeEmulator;
  eslease::kubeemu::KubeEmulatorOptions options;
  std::string listen, kubeconfig, token_file;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string value = argv[++i];
    if (flag == "--listen") {
      listen = value;
    } else if (flag == "--kubeconfig-out") {
      kubeconfig = value;
    } else if (flag == "--token-file") {
      token_file = value;
    } else if (flag == "--tls-cert") {
      options.tls_cert_file = value;
    } else if (flag == "--tls-key") {
      options.tls_key_file = value;
    } else {
      return usage();
    }
  }
  if (listen.empty() || kubeconfig.empty()) return usage();
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) return usage();
  auto address = eslease::http::parse_listen_address(listen);
  if (!address) {
    std::cerr << "kube-emulator: " << address.error().message << "\n";
    return usage();
  }
  options.host = address->first;
  options.port = address->second;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::stringstream content;
    content << in.rdbuf();
    const std::string token = eslease::trim(content.str());
    if (!in || token.empty()) {
      std::cerr << "kube-emulator: cannot read a token from " << token_file << "\n";
      return 2;
    }
    options.bearer_token = token;
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // server threads inherit the mask

  KubeEmulator emulator(options);
  if (auto started = emulator.start(); !started) {
    std::cerr << "kube-emulator: " << started.error().describe() << "\n";
    return 1;
  }
  if (auto written = emulator.write_kubeconfig(kubeconfig); !written) {
    std::cerr << "kube-emulator: " << written.error().describe() << "\n";
    return 1;
  }
  std::cout << "kube-emulator listening on " << emulator.url() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  emulator.stop();
  return 0;
}
