// kube-emulator --listen 127.0.0.1:PORT --kubeconfig-out FILE [--token-file F]
//               [--tls-cert F --tls-key F] [--simulate-kubelet [kubelet options]]
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "common/duration.h"
#include "common/text.h"
#include "emulators/kube/kube_emulator.h"
#include "http/server.h"

namespace {

constexpr const char* kUsage =
    "usage: kube-emulator --listen HOST:PORT --kubeconfig-out FILE [--token-file FILE]\n"
    "                     [--tls-cert FILE --tls-key FILE]\n"
    "                     [--simulate-kubelet [--kubelet-nodes N] [--kubelet-schedule-delay D]\n"
    "                      [--kubelet-start-delay D] [--kubelet-grace-scale X] [--kubelet-max-grace D]\n"
    "                      [--node-lease-renew-interval D] [--node-monitor-grace-period D]\n"
    "                      [--node-monitor-period D]]\n"
    "durations D: 250ms, 2s, 1m, 1m30s\n"
    "It serves a Kubernetes API server stand-in on HOST:PORT (port 0: any free port), writes a\n"
    "kubeconfig for it to FILE, prints \"kube-emulator listening on URL\" and serves until SIGINT or\n"
    "SIGTERM. --simulate-kubelet schedules and runs pods on simulated nodes, whose kubelets renew\n"
    "their node Leases every --node-lease-renew-interval (default 10s); a node not heard from for\n"
    "--node-monitor-grace-period (default 50s, checked every --node-monitor-period, default 5s)\n"
    "is marked Unknown, as kube-controller-manager does.\n";

int usage() {
  std::cerr << kUsage;
  return 2;
}

// The kubelet's tuning flags; false when `flag` is not one of them or its value is bad.
bool parse_kubelet_flag(const std::string& flag, const std::string& value,
                        eslease::kubeemu::KubeletOptions& kubelet, bool& known) {
  known = true;
  auto duration = [&](std::chrono::milliseconds& out) {
    auto parsed = eslease::parse_duration(value);
    if (!parsed) {
      std::cerr << "kube-emulator: " << flag << ": " << parsed.error().message << "\n";
      return false;
    }
    out = *parsed;
    return true;
  };
  // Periods the kubelet thread waits on: zero would never let it rest.
  auto period = [&](std::chrono::milliseconds& out) {
    if (!duration(out)) return false;
    if (out.count() > 0) return true;
    std::cerr << "kube-emulator: " << flag << ": must be longer than 0\n";
    return false;
  };
  if (flag == "--node-lease-renew-interval") return period(kubelet.node_lease_renew_interval);
  if (flag == "--node-monitor-grace-period") return period(kubelet.node_monitor_grace_period);
  if (flag == "--node-monitor-period") return period(kubelet.node_monitor_period);
  if (flag == "--kubelet-schedule-delay") return duration(kubelet.schedule_delay);
  if (flag == "--kubelet-start-delay") return duration(kubelet.start_delay);
  if (flag == "--kubelet-max-grace") {
    std::chrono::milliseconds cap{};
    if (!duration(cap)) return false;
    kubelet.max_grace = cap;
    return true;
  }
  if (flag == "--kubelet-nodes" || flag == "--kubelet-grace-scale") {
    std::size_t used = 0;
    double number = 0;
    try {
      number = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const bool nodes = flag == "--kubelet-nodes";
    const bool ok = used == value.size() && !value.empty() &&
                    (nodes ? number >= 1 && number <= 250 && number == static_cast<int>(number)
                           : number >= 0 && number <= 1000);
    if (!ok) {
      std::cerr << "kube-emulator: " << flag << ": "
                << (nodes ? "expected a whole number from 1 to 250" : "expected a number from 0 to 1000")
                << "\n";
      return false;
    }
    if (nodes) {
      kubelet.nodes = static_cast<int>(number);
    } else {
      kubelet.grace_scale = number;
    }
    return true;
  }
  known = false;
  return false;
}

// What the command line asks for.
struct CommandLine {
  eslease::kubeemu::KubeEmulatorOptions options;
  std::string listen, kubeconfig, token_file;
  bool kubelet_tuned = false;
};

const std::set<std::string> kValued = {"--listen",
                                       "--kubeconfig-out",
                                       "--token-file",
                                       "--tls-cert",
                                       "--tls-key",
                                       "--kubelet-nodes",
                                       "--kubelet-schedule-delay",
                                       "--kubelet-start-delay",
                                       "--kubelet-grace-scale",
                                       "--kubelet-max-grace",
                                       "--node-lease-renew-interval",
                                       "--node-monitor-grace-period",
                                       "--node-monitor-period"};

// Reads the flags: nullopt to go on, else the exit code (--help, or a usage error printed).
std::optional<int> read_flags(int argc, char** argv, CommandLine& line) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (flag == "--simulate-kubelet") {
      line.options.simulate_kubelet = true;
      continue;
    }
    if (!kValued.contains(flag)) {
      std::cerr << "kube-emulator: unknown flag " << flag << "\n";
      return usage();
    }
    if (i + 1 >= argc) {
      std::cerr << "kube-emulator: missing value for " << flag << "\n";
      return usage();
    }
    const std::string value = argv[++i];
    bool kubelet_flag = false;
    const bool parsed = parse_kubelet_flag(flag, value, line.options.kubelet, kubelet_flag);
    if (kubelet_flag) {
      if (!parsed) return usage();
      line.kubelet_tuned = true;
    } else if (flag == "--listen") {
      line.listen = value;
    } else if (flag == "--kubeconfig-out") {
      line.kubeconfig = value;
    } else if (flag == "--token-file") {
      line.token_file = value;
    } else if (flag == "--tls-cert") {
      line.options.tls_cert_file = value;
    } else if (flag == "--tls-key") {
      line.options.tls_key_file = value;
    }
  }
  return std::nullopt;
}

// Checks the flags together and reads the listen address and the token file into the
// options: nullopt to go on, else the exit code.
std::optional<int> complete_options(CommandLine& line) {
  auto& options = line.options;
  if (line.listen.empty() || line.kubeconfig.empty()) return usage();
  if (line.kubelet_tuned && !options.simulate_kubelet) {
    std::cerr << "kube-emulator: --kubelet-* and --node-* options need --simulate-kubelet\n";
    return usage();
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) return usage();
  auto address = eslease::http::parse_listen_address(line.listen);
  if (!address) {
    std::cerr << "kube-emulator: " << address.error().message << "\n";
    return usage();
  }
  options.host = address->first;
  options.port = address->second;
  if (!line.token_file.empty()) {
    std::ifstream in(line.token_file);
    std::stringstream content;
    content << in.rdbuf();
    const std::string token = eslease::trim(content.str());
    if (!in || token.empty()) {
      std::cerr << "kube-emulator: cannot read a token from " << line.token_file << "\n";
      return 2;
    }
    options.bearer_token = token;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  using eslease::kubeemu::KubeEmulator;
  CommandLine line;
  if (auto exit_code = read_flags(argc, argv, line)) return *exit_code;
  if (auto exit_code = complete_options(line)) return *exit_code;

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // server threads inherit the mask

  KubeEmulator emulator(line.options);
  if (auto started = emulator.start(); !started) {
    std::cerr << "kube-emulator: " << started.error().describe() << "\n";
    return 1;
  }
  if (auto written = emulator.write_kubeconfig(line.kubeconfig); !written) {
    std::cerr << "kube-emulator: " << written.error().describe() << "\n";
    return 1;
  }
  std::cout << "kube-emulator listening on " << emulator.url() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  emulator.stop();
  return 0;
}
