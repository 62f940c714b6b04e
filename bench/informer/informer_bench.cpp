// informer-bench: how fast informers list and sync 10,000 Leases and 10,000 pods from the
// in-process Kubernetes emulator, what their caches cost in memory, and how many watch
// events per second reach the handlers. Prints one JSON object.
//
//   informer-bench [--objects N] [--updates N] [--writers N]
#include <malloc.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "emulators/kube/kube_emulator.h"
#include "kube/config.h"
#include "kube/http_api.h"
#include "kube/informer.h"

namespace {

using namespace eslease;
using namespace eslease::kube;
using Steady = std::chrono::steady_clock;

long vm_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

double seconds_since(Steady::time_point start) {
  return std::chrono::duration<double>(Steady::now() - start).count();
}

json yaml_to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& entry : node) out[entry.first.as<std::string>()] = yaml_to_json(entry.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() == "!") return text;  // quoted
      if (text == "true" || text == "false") return text == "true";
      if (text == "null" || text == "~") return nullptr;
      char* end = nullptr;
      long long integer = std::strtoll(text.c_str(), &end, 10);
      if (!text.empty() && *end == '\0') return integer;
      double real = std::strtod(text.c_str(), &end);
      if (!text.empty() && *end == '\0') return real;
      return text;
    }
    default:
      return nullptr;
  }
}

// Registers the eslease Lease CRD from crds/ and waits until it is served. False when the
// CRD file is missing or not accepted.
bool register_lease_crd(Api& api) {
  const std::filesystem::path path =
      std::filesystem::path(ESLEASE_SOURCE_DIR) / "crds" / "leases.eslease.io.yaml";
  if (!std::filesystem::exists(path)) return false;
  try {
    json crd = yaml_to_json(YAML::LoadFile(path.string()));
    auto created = api.create(resources::crds(), "", crd);
    if (!created.ok()) {
      std::cerr << "CRD not accepted: " << created.error().describe() << "\n";
      return false;
    }
  } catch (const YAML::Exception& e) {
    std::cerr << "CRD unreadable: " << e.what() << "\n";
    return false;
  }
  for (int i = 0; i < 200; ++i) {
    if (api.list(resources::eslease_leases(), "bench", {}).ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

json lease_object(bool custom, int i) {
  const std::string name = "lease-" + std::to_string(i);
  if (custom) {
    return {{"apiVersion", "eslease.io/v1alpha1"},
            {"kind", "Lease"},
            {"metadata", {{"name", name}, {"namespace", "bench"}}},
            {"spec",
             {{"lockName", "lock-" + std::to_string(i % 2000)},
              {"holder", {{"podName", "pod-" + std::to_string(i)}}},
              {"priority", i % 3 == 0 ? "Background" : "Foreground"},
              {"leaseDurationSeconds", 30}}}};
  }
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}, {"namespace", "bench"}}},
          {"spec", {{"holderIdentity", "pod-" + std::to_string(i)}, {"leaseDurationSeconds", 30}}}};
}

json pod_object(int i) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", "pod-" + std::to_string(i)},
            {"namespace", "bench"},
            {"labels", {{"app", "reporter"}, {"shard", std::to_string(i % 50)}}},
            {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", std::string(600, 'x')}}}}},
          {"spec",
           {{"nodeName", "node-" + std::to_string(i % 20)},
            {"containers",
             json::array({{{"name", "app"},
                           {"image", "registry.example/reporter:1.2.3"},
                           {"args", json::array({"--serve", "--port=8080"})},
                           {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}}}}})}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", "10.0.0.1"},
            {"conditions", json::array({{{"type", "Initialized"}, {"status", "True"}},
                                        {{"type", "Ready"}, {"status", "True"}},
                                        {{"type", "ContainersReady"}, {"status", "True"}},
                                        {{"type", "PodScheduled"}, {"status", "True"}}})}}}};
}

// Runs `work(i)` for i in [0, n) on `writers` threads, each with its own client.
template <typename Work>
void parallel(const RestConfig& config, int n, int writers, Work work) {
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      auto api = HttpApi::connect(config);
      for (int i = w; i < n; i += writers) work(*api, i);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  int objects = 10000;
  int updates = 5000;
  int writers = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--objects")) objects = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--updates")) updates = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--writers")) writers = std::stoi(argv[i + 1]);
  }
  eslease::log::configure(eslease::log::Format::kText, eslease::log::Level::kWarn);

  kubeemu::KubeEmulatorOptions emulator_options;
  emulator_options.watch_history = static_cast<std::size_t>(objects) * 2 + updates * 2;
  kubeemu::KubeEmulator emulator(emulator_options);
  if (!emulator.start().ok()) {
    std::cerr << "cannot start the emulator\n";
    return 1;
  }
  const auto kubeconfig =
      std::filesystem::temp_directory_path() / ("informer-bench-" + std::to_string(::getpid()));
  if (!emulator.write_kubeconfig(kubeconfig.string()).ok()) return 1;
  auto config = load_kubeconfig(kubeconfig);
  std::filesystem::remove(kubeconfig);
  if (!config.ok()) {
    std::cerr << config.error().describe() << "\n";
    return 1;
  }
  auto api = HttpApi::connect(*config);
  (void)api->create(resources::namespaces(), "", {{"metadata", {{"name", "bench"}}}});
  const bool custom = register_lease_crd(*api);
  const Resource lease_resource = custom ? resources::eslease_leases() : resources::coordination_leases();

  std::atomic<int> failures{0};
  auto fill_start = Steady::now();
  parallel(*config, objects, writers, [&](Api& a, int i) {
    if (!a.create(lease_resource, "bench", lease_object(custom, i)).ok()) ++failures;
    if (!a.create(resources::pods(), "bench", pod_object(i)).ok()) ++failures;
  });
  const double fill_seconds = seconds_since(fill_start);

  malloc_trim(0);
  const long rss_before = vm_rss_kib();
  std::atomic<int> pod_updates{0};
  InformerHandlers pod_handlers;
  pod_handlers.on_update = [&](const json&, const json&) {
    pod_updates.fetch_add(1, std::memory_order_relaxed);
  };
  InformerOptions lease_options;
  lease_options.ns = "bench";
  InformerOptions pod_options;
  pod_options.ns = "bench";
  auto lease_api = HttpApi::connect(*config);
  auto pod_api = HttpApi::connect(*config);
  JsonInformer leases(*lease_api, SystemClock::instance(), lease_resource, lease_options, {});
  JsonInformer pods(*pod_api, SystemClock::instance(), resources::pods(), pod_options, pod_handlers,
                    keep_pod_liveness_fields);
  auto sync_start = Steady::now();
  leases.start();
  pods.start();
  const bool synced =
      leases.wait_for_sync(std::chrono::minutes(2)) && pods.wait_for_sync(std::chrono::minutes(2));
  const double sync_seconds = seconds_since(sync_start);
  malloc_trim(0);
  const long rss_after = vm_rss_kib();

  // Watch throughput: flip a label on pods and time until every update reached a handler.
  auto update_start = Steady::now();
  parallel(*config, updates, writers, [&](Api& a, int i) {
    json patch = {{"metadata", {{"labels", {{"rev", std::to_string(i)}}}}}};
    if (!a.patch(resources::pods(), "bench", "pod-" + std::to_string(i % objects), PatchType::kMerge, patch)
             .ok()) {
      ++failures;
    }
  });
  const double write_seconds = seconds_since(update_start);
  const auto deadline = Steady::now() + std::chrono::seconds(60);
  while (pod_updates.load() < updates && Steady::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double delivery_seconds = seconds_since(update_start);
  leases.stop();
  pods.stop();
  emulator.stop();
  // Serialized size of what the caches hold, to put the RSS figure in proportion.
  std::size_t lease_bytes = 0, pod_bytes = 0;
  leases.cache().for_each([&](const std::string&, const json& o) { lease_bytes += o.dump().size(); });
  pods.cache().for_each([&](const std::string&, const json& o) { pod_bytes += o.dump().size(); });

  json result = {
      {"benchmark", "informer"},
      {"lease_resource", lease_resource.group + "/" + lease_resource.version + "/" + lease_resource.plural},
      {"objects_per_resource", objects},
      {"writers", writers},
      {"create_seconds", fill_seconds},
      {"write_failures", failures.load()},
      {"synced", synced},
      {"list_and_sync_seconds", sync_seconds},
      {"cached_leases", leases.cache().size()},
      {"cached_pods", pods.cache().size()},
      {"rss_kib_before_informers", rss_before},
      {"rss_kib_after_sync", rss_after},
      {"informer_caches_kib", rss_after - rss_before},
      {"cached_lease_json_bytes", lease_bytes},
      {"cached_pod_json_bytes", pod_bytes},
      {"updates", updates},
      {"updates_delivered", pod_updates.load()},
      {"update_write_seconds", write_seconds},
      {"update_delivery_seconds", delivery_seconds},
      {"watch_events_per_second", delivery_seconds > 0 ? pod_updates.load() / delivery_seconds : 0.0},
  };
  std::cout << result.dump(2) << std::endl;
  return synced && pod_updates.load() >= updates ? 0 : 1;
}
