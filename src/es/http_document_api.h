// The DocumentApi over HTTP: several hosts with failover, credentials from files, bounded
// retries with jittered backoff for failures that are safe to retry.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/backoff.h"
#include "common/clock.h"
#include "es/credentials.h"
#include "es/document_api.h"
#include "http/transport.h"

namespace eslease::es {

struct ClientOptions {
  // Base URLs, e.g. https://es-0:9200 (a path prefix behind a proxy is kept). Credentials
  // in the URL are refused: they would end up in logs.
  std::vector<std::string> hosts;
  CredentialOptions credentials;
  std::chrono::milliseconds request_timeout{5000};
  // Retries apply to connection errors and 429/502/503/504 only, within both bounds.
  int max_attempts = 4;
  std::chrono::milliseconds max_retry_time{15000};
  BackoffPolicy backoff{Millis(50), Millis(2000), 2.0};
  // A host that failed is skipped for this long while another host is available.
  std::chrono::milliseconds host_cooldown{5000};
  // Observes every HTTP exchange (op, status or 0 without an answer, duration): metrics.
  std::function<void(std::string_view op, int status, std::chrono::milliseconds duration)> on_request;
};

// Checks the host list and credential options without contacting anything.
Status validate(const ClientOptions& options);

// `transport` must outlive the returned object.
Result<std::unique_ptr<DocumentApi>> make_http_document_api(http::Transport& transport, ClientOptions options,
                                                            Clock& clock);
// Owns the transport.
Result<std::unique_ptr<DocumentApi>> make_http_document_api(std::unique_ptr<http::Transport> transport,
                                                            ClientOptions options, Clock& clock);

}  // namespace eslease::es
