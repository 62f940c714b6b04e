// kube-emulator: a faithful stand-in for kube-apiserver used by tests, benchmarks and the
// demo (see DESIGN.md, "The two test servers"). Serves discovery, CRDs, CRUD with
// resourceVersion and generation rules, status subresources, finalizers, selectors,
// paginated LIST and WATCH, plus fault injection under /_emulator/, and optionally a
// simulated kubelet that schedules, starts and gracefully deletes pods.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "emulators/kube/kubelet.h"

namespace eslease::http {
class Server;
}

namespace eslease::kubeemu {

class ApiServer;

struct KubeEmulatorOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string tls_cert_file, tls_key_file;
  std::optional<std::string> bearer_token;
  std::size_t watch_history = 10000;  // events kept for watch resume; older resourceVersions get 410
  std::chrono::milliseconds bookmark_interval{1000};
  // --simulate-kubelet: nodes node-1..N, pods scheduled, started and gracefully deleted as
  // on a cluster (see README). Off, pods keep the status written and go at once on DELETE.
  bool simulate_kubelet = false;
  KubeletOptions kubelet;  // delays, grace scaling and node count when simulate_kubelet
};

class KubeEmulator {
 public:
  // `clock` times everything the emulator does: timestamps, watch timeouts and bookmarks, the
  // simulated kubelet's delays and grace periods.
  explicit KubeEmulator(KubeEmulatorOptions options = {}, Clock& clock = SystemClock::instance());
  ~KubeEmulator();
  KubeEmulator(const KubeEmulator&) = delete;
  KubeEmulator& operator=(const KubeEmulator&) = delete;

  Status start();
  void stop();
  std::string url() const;
  // cluster server=url (certificate-authority when TLS), user token when bearer_token is
  // set, context "kube-emulator" as current-context, namespace default.
  Status write_kubeconfig(const std::string& path) const;

 private:
  KubeEmulatorOptions options_;
  Clock& clock_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<http::Server> server_;
  std::uint16_t port_ = 0;
};

}  // namespace eslease::kubeemu
