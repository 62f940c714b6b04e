// Api over HTTP: the REST paths, auth headers and status mapping of the Kubernetes API.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "http/transport.h"
#include "kube/api.h"
#include "kube/config.h"
#include "kube/token_source.h"

namespace eslease::kube {

struct HttpApiOptions {
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  std::string user_agent;  // default "eslease/<version>"
};

class HttpApi final : public Api {
 public:
  // `transport` must outlive the HttpApi.
  HttpApi(RestConfig config, http::Transport& transport, HttpApiOptions options = {});
  // Owns an HTTP transport configured with the config's TLS settings.
  static std::unique_ptr<HttpApi> connect(RestConfig config, HttpApiOptions options = {});

  Result<json> get(const Resource& r, const std::string& ns, const std::string& name,
                   const CallOptions& call = {}) override;
  Result<ListPage> list(const Resource& r, const std::string& ns, const ListOptions& options = {}) override;
  Result<json> create(const Resource& r, const std::string& ns, const json& object,
                      const CallOptions& call = {}) override;
  Result<json> update(const Resource& r, const json& object, const CallOptions& call = {}) override;
  Result<json> update_status(const Resource& r, const json& object, const CallOptions& call = {}) override;
  Result<json> patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
                     const json& patch, bool status_subresource = false,
                     const CallOptions& call = {}) override;
  Status remove(const Resource& r, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {}) override;
  Status watch(const Resource& r, const std::string& ns, const WatchOptions& options,
               const WatchHandler& on_event, std::stop_token stop) override;

  const RestConfig& config() const { return config_; }

 private:
  HttpApi(RestConfig config, std::unique_ptr<http::Transport> owned, HttpApiOptions options);

  // /api/v1/namespaces/ns/pods[/name[/subresource]], every segment percent-encoded.
  std::string url(const Resource& r, const std::string& ns, const std::string& name = "",
                  const std::string& subresource = "") const;
  Result<http::Request> request(std::string method, std::string url, const CallOptions& call);
  // The answer decoded; only its metadata when `metadata_only` (CallOptions).
  Result<json> call_json(const http::Request& request, bool metadata_only = false);
  Result<json> write(const std::string& method, const Resource& r, const json& object,
                     const std::string& subresource, const CallOptions& call);

  RestConfig config_;
  std::unique_ptr<http::Transport> owned_transport_;
  http::Transport& transport_;
  HttpApiOptions options_;
  std::optional<TokenSource> token_source_;
};

}  // namespace eslease::kube
