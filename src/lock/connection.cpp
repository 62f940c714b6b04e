#include "lock/connection.h"

#include "common/duration.h"
#include "common/text.h"
#include "es/http_document_api.h"
#include "http/ca_bundle.h"
#include "http/transport.h"
#include "lock/names.h"

namespace eslease::lock {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

using Kind = ConnectionFlag::Kind;
using Apply = std::function<Status(ConnectionSettings&, const std::string&)>;

Apply text(std::string ConnectionSettings::*field) {
  return [field](ConnectionSettings& s, const std::string& v) -> Status {
    s.*field = v;
    return {};
  };
}

Status host(ConnectionSettings& s, const std::string& v) {
  if (v.empty()) return invalid("needs a value");
  es::ClientOptions probe;
  probe.hosts = {v};
  // The Elasticsearch client's own rules (scheme, no credentials in the URL), so a URL
  // accepted here is one the client accepts.
  if (auto checked = es::validate(probe); !checked.ok()) return checked.error();
  s.hosts.push_back(v);
  return {};
}

Status index(ConnectionSettings& s, const std::string& v) {
  if (auto checked = validate_index_name(v); !checked.ok()) return checked.error();
  s.index = v;
  return {};
}

Status skip_tls_verify(ConnectionSettings& s, const std::string& v) {
  auto skip = parse_bool(v);
  if (!skip.ok()) return skip.error();
  s.insecure_skip_tls_verify = *skip;
  return {};
}

Status request_timeout(ConnectionSettings& s, const std::string& v) {
  auto d = parse_duration(v);
  if (!d.ok()) return invalid(d.error().message);
  if (*d < kMinRequestTimeout)
    return invalid("must be at least " + format_duration(kMinRequestTimeout) + ", not \"" + v + "\"");
  s.request_timeout = *d;
  return {};
}

es::ClientOptions client_options(const ConnectionSettings& s) {
  es::ClientOptions options;
  options.hosts = s.hosts;
  options.credentials =
      es::CredentialOptions{s.username, s.password_file, s.api_key_file, s.bearer_token_file};
  options.request_timeout = s.request_timeout;
  return options;
}

}  // namespace

const std::vector<ConnectionFlag>& connection_flags() {
  using S = ConnectionSettings;
  static const S defaults;
  static const std::vector<ConnectionFlag> flags = {
      {"es", Kind::kList, "URL", "",
       "an Elasticsearch URL, e.g. https://es-0:9200; repeat for several, tried in order", host},
      {"index", Kind::kText, "NAME", defaults.index,
       "the lock index, created with a strict mapping when missing", index},
      {"es-ca-file", Kind::kText, "FILE", "the system's CAs",
       "PEM bundle that verifies the servers' TLS certificates", text(&S::ca_file)},
      {"es-username", Kind::kText, "NAME", "none",
       "basic-auth user; the password comes from --es-password-file", text(&S::username)},
      {"es-password-file", Kind::kText, "FILE", "none",
       "file holding the basic-auth password (re-read when it changes)", text(&S::password_file)},
      {"es-api-key-file", Kind::kText, "FILE", "none", "file holding an API key (id:key or its encoded form)",
       text(&S::api_key_file)},
      {"es-bearer-token-file", Kind::kText, "FILE", "none", "file holding a bearer token",
       text(&S::bearer_token_file)},
      {"es-insecure-skip-tls-verify", Kind::kBool, "", defaults.insecure_skip_tls_verify ? "true" : "false",
       "do not verify TLS certificates (tests only, never in production)", skip_tls_verify},
      {"es-timeout", Kind::kDuration, "D", format_duration(defaults.request_timeout),
       "timeout of one Elasticsearch request", request_timeout},
  };
  return flags;
}

const ConnectionFlag* find_connection_flag(std::string_view name) {
  for (const ConnectionFlag& flag : connection_flags())
    if (name == flag.name) return &flag;
  return nullptr;
}

Status validate(const ConnectionSettings& s) {
  const bool basic = !s.username.empty() || !s.password_file.empty();
  if (!s.username.empty() && s.password_file.empty())
    return invalid("--es-username needs --es-password-file (the password is only read from a file)");
  if (s.username.empty() && !s.password_file.empty())
    return invalid("--es-password-file needs --es-username");
  if (int(basic) + int(!s.api_key_file.empty()) + int(!s.bearer_token_file.empty()) > 1)
    return invalid(
        "choose one kind of Elasticsearch credentials: --es-username with --es-password-file, "
        "--es-api-key-file or --es-bearer-token-file");
  // The Elasticsearch client's remaining rules (a host at all, a username without ':', ...).
  if (auto checked = es::validate(client_options(s)); !checked.ok())
    return invalid("Elasticsearch settings: " + checked.error().message);
  return {};
}

Result<std::unique_ptr<LockStore>> open_lock_store(const ConnectionSettings& settings, Clock& clock,
                                                   OpenOptions options) {
  if (auto checked = validate(settings); !checked.ok()) return checked.error();
  es::ClientOptions client = client_options(settings);
  client.on_request = std::move(options.on_request);
  http::TransportOptions transport;
  transport.tls.verify = !settings.insecure_skip_tls_verify;
  // No --es-ca-file: SSL_CERT_FILE, else the usual places a distribution keeps its CAs.
  transport.tls.ca_file = settings.ca_file.empty() ? http::system_ca_bundle() : settings.ca_file;
  auto api = es::make_http_document_api(http::make_transport(transport), std::move(client), clock);
  if (!api.ok()) return api.error();
  StoreOptions store;
  store.index = settings.index;
  store.writer = std::move(options.writer);
  store.on_fencing = std::move(options.on_fencing);
  store.awaits_token_history = options.awaits_token_history;
  return make_es_lock_store(std::move(*api), clock, std::move(store));
}

}  // namespace eslease::lock
