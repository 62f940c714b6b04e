// Runs the tool in Kubernetes mode against an in-memory API, with the controller's answers
// scripted on the next watch: the fixture of the Kubernetes-mode command tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/session.h"
#include "cli/cli.h"
#include "common/text.h"
#include "support/memory_api.h"

namespace eslease::cli {

// KubeConnection owns its Api; the tests keep theirs.
class ForwardingApi final : public kube::Api {
 public:
  using json = nlohmann::json;
  explicit ForwardingApi(kube::Api& target) : t_(target) {}
  Result<json> get(const kube::Resource& r, const std::string& ns, const std::string& name,
                   const kube::CallOptions& call) override {
    return t_.get(r, ns, name, call);
  }
  Result<kube::ListPage> list(const kube::Resource& r, const std::string& ns,
                              const kube::ListOptions& o) override {
    return t_.list(r, ns, o);
  }
  Result<json> create(const kube::Resource& r, const std::string& ns, const json& object,
                      const kube::CallOptions& call) override {
    return t_.create(r, ns, object, call);
  }
  Result<json> update(const kube::Resource& r, const json& object, const kube::CallOptions& call) override {
    return t_.update(r, object, call);
  }
  Result<json> update_status(const kube::Resource& r, const json& object,
                             const kube::CallOptions& call) override {
    return t_.update_status(r, object, call);
  }
  Result<json> patch(const kube::Resource& r, const std::string& ns, const std::string& name,
                     kube::PatchType type, const json& patch, bool status,
                     const kube::CallOptions& call) override {
    return t_.patch(r, ns, name, type, patch, status, call);
  }
  Status remove(const kube::Resource& r, const std::string& ns, const std::string& name,
                const kube::DeleteOptions& options) override {
    return t_.remove(r, ns, name, options);
  }
  Status watch(const kube::Resource& r, const std::string& ns, const kube::WatchOptions& options,
               const kube::WatchHandler& on_event, std::stop_token stop) override {
    return t_.watch(r, ns, options, on_event, stop);
  }

 private:
  kube::Api& t_;
};

inline const kube::Resource kLeases = kube::resources::eslease_leases();
inline const kube::Resource kSessions = kube::resources::coordination_leases();
inline constexpr const char* kToken = "4294967299";

class KubeModeTest : public ::testing::Test {
 protected:
  using json = nlohmann::json;
  struct Run {
    int code;
    std::string out;
    std::string err;
  };

  Run cli(std::vector<std::string> args,
          std::map<std::string, std::string> env_vars = {
              {"POD_NAME", "p1"}, {"POD_NAMESPACE", "batch"}, {"POD_UID", "pod-uid"}}) {
    args.insert(args.begin(), {"--kubeconfig", "/unused"});
    std::ostringstream out;
    std::ostringstream err;
    Environment env{out,
                    err,
                    SystemClock::instance(),
                    [](const lock::ConnectionSettings&) -> Result<std::unique_ptr<lock::LockStore>> {
                      return make_error(ErrorCode::kInternal, "direct mode is not used here");
                    },
                    "host",
                    42,
                    [this](const KubeOptions&) -> Result<KubeConnection> {
                      ++connections_;
                      return KubeConnection{std::make_unique<ForwardingApi>(api_), "from-kubeconfig"};
                    },
                    [env_vars](const std::string& name) -> std::optional<std::string> {
                      auto it = env_vars.find(name);
                      return it == env_vars.end() ? std::nullopt : std::optional<std::string>(it->second);
                    },
                    [](const std::string&) -> std::optional<std::string> { return std::nullopt; },
                    /*catch_signals=*/false};
    const int code = run_cli(args, env);
    return Run{code, out.str(), err.str()};
  }

  std::optional<json> lease(const std::string& name) {
    auto got = api_.get(kLeases, "batch", name, {});
    return got.ok() ? std::optional<json>(*got) : std::nullopt;
  }

  // The controller's answer, as the next watch of the Lease delivers it.
  void grant_on_next_watch(const std::string& name, std::string pod_uid = "pod-uid") {
    api_.push_watch(
        kLeases, [this, name, pod_uid](const kube::WatchOptions&, const kube::WatchHandler& handler) {
          json held = *lease(name);
          held["status"] = {{"phase", "Held"},
                            {"holder", {{"podName", "p1"}, {"podUID", pod_uid}}},
                            {"fencingToken", kToken},
                            {"acquireTime", format_rfc3339_millis(std::chrono::system_clock::now())}};
          held = api_.put_object(kLeases, held);
          handler({kube::WatchEvent::Type::kModified, held});
          return Status();
        });
  }

  // The namespace's session as the controller last renewed it, `ago` before now.
  json session_renewed(Millis ago = Millis(0), std::set<api::GrantRef> revoked = {}) {
    api::Session session;
    session.ns = "batch";
    session.holder_identity = "controller-1";
    session.renew_time = std::chrono::system_clock::now() - ago;
    session.revoked = std::move(revoked);
    return api_.put_object(kSessions, api::session_object(session));
  }

  void revoke_on_next_watch(const std::string& name, Millis after) {
    api_.push_watch(kLeases, [this, name, after](const kube::WatchOptions&,
                                                 const kube::WatchHandler& handler) {
      std::this_thread::sleep_for(after);
      json revoked = *lease(name);
      revoked["status"]["phase"] = "Pending";
      revoked["status"]["conditions"] = json::array({json{{"type", "Held"},
                                                          {"status", "False"},
                                                          {"reason", "PodNotReady"},
                                                          {"message", "pod p1 is not Ready"},
                                                          {"lastTransitionTime", "2026-01-01T00:00:00Z"}}});
      revoked = api_.put_object(kLeases, revoked);
      handler({kube::WatchEvent::Type::kModified, revoked});
      return Status();
    });
  }

  // Whether the tool wrote its token into eslease.io/released before deleting the Lease.
  bool marked_released() {
    for (const auto& [verb, body] : api_.writes()) {
      if (verb.find("patch") != std::string::npos &&
          body.value(json::json_pointer("/metadata/annotations/eslease.io~1released"), "") == kToken) {
        return true;
      }
    }
    return false;
  }

  kube::testing::MemoryApi api_;
  int connections_ = 0;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace eslease::cli
