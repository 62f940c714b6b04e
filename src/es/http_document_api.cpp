#include "es/http_document_api.h"

#include <algorithm>
#include <mutex>

#include "common/json_text.h"
#include "common/log.h"
#include "common/text.h"
#include "es/responses.h"

namespace eslease::es {
namespace {

using nlohmann::json;

// A _bulk action line and the newline after its source, at their longest, less the document
// id: {"create":{"_id":,"if_seq_no":<19 digits>,"if_primary_term":<19 digits>}}\n plus \n.
constexpr std::size_t kActionLineBytes = 100;

struct Host {
  std::string base_url;  // no trailing slash
  MonoTime skip_until{};
};

// One logical call; `write` marks calls whose repetition may find their own earlier effect.
struct Call {
  std::string op;
  std::string method;
  std::string path;  // starts with '/', already percent-encoded
  std::string body;
  std::string content_type = "application/json";
  bool write = false;
};

struct Answer {
  http::Response response;
  bool earlier_attempt_may_have_applied = false;
};

// One path segment. percent_encode keeps '.', so a whole "." or ".." (a dot segment that
// URL normalisation would resolve to another path) is escaped as well.
std::string segment(const std::string& value) {
  if (value == "." || value == "..") return value == "." ? "%2E" : "%2E%2E";
  return percent_encode(value);
}

// Elasticsearch's error type in an error body ("index_not_found_exception"), or "".
std::string error_type(const http::Response& response) {
  auto body = json::parse(response.body, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return "";
  return body["error"].value("type", "");
}

bool retryable_status(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

std::string if_match_query(const std::optional<Version>& if_match) {
  if (!if_match) return {};
  return "?if_seq_no=" + std::to_string(if_match->seq_no) +
         "&if_primary_term=" + std::to_string(if_match->primary_term);
}

class HttpDocumentApi final : public DocumentApi {
 public:
  HttpDocumentApi(std::unique_ptr<http::Transport> owned, http::Transport& transport, ClientOptions options,
                  Clock& clock)
      : owned_(std::move(owned)),
        transport_(transport),
        options_(std::move(options)),
        clock_(clock),
        credentials_(options_.credentials) {
    for (const std::string& url : options_.hosts) {
      std::string base = url;
      while (!base.empty() && base.back() == '/') base.pop_back();
      hosts_.push_back(Host{base});
    }
  }

  Result<bool> ensure_index(const std::string& index, const json& definition) override {
    auto answer = execute(
        Call{"indices.create", "PUT", "/" + segment(index), definition.dump(), "application/json", false});
    if (!answer.ok()) return answer.error();
    const http::Response& response = answer->response;
    if (response.status == 200) return true;
    if (response.status == 400 && error_type(response) == "resource_already_exists_exception") return false;
    return error_from_response(response, "indices.create");
  }

  Result<ServerInfo> describe_server() override {
    auto answer = execute(Call{"info", "GET", "/", ""});
    if (!answer.ok()) return answer.error();
    if (answer->response.status != 200) return error_from_response(answer->response, "info");
    auto body = parse_object(answer->response.body, "info");
    if (!body.ok()) return body.error();
    ServerInfo info{"elasticsearch", ""};
    auto version = body->find("version");
    if (version != body->end() && version->is_object()) {
      auto text = [&](const char* key, std::string& out) {
        auto it = version->find(key);
        if (it != version->end() && it->is_string()) out = it->get<std::string>();
      };
      text("distribution", info.distribution);
      text("number", info.version);
    }
    return info;
  }

  Result<std::optional<IndexDescription>> describe_index(const std::string& index) override {
    auto answer = execute(Call{"indices.get", "GET", "/" + segment(index), ""});
    if (!answer.ok()) return answer.error();
    const http::Response& response = answer->response;
    if (response.status == 404 && error_type(response) == "index_not_found_exception")
      return std::optional<IndexDescription>();
    if (response.status != 200) return error_from_response(response, "indices.get");
    auto body = parse_object(response.body, "indices.get");
    if (!body.ok()) return body.error();
    // Keyed by the concrete index name, which differs from `index` behind an alias.
    if (body->size() != 1 || !body->begin()->is_object()) {
      return make_error(ErrorCode::kProtocol, "Elasticsearch described " + std::to_string(body->size()) +
                                                  " indices for " + index + "; expected one");
    }
    const json& described = *body->begin();
    IndexDescription out;
    out.mappings = described.value("mappings", json::object());
    const json* settings = described.contains("settings") ? &described["settings"] : nullptr;
    if (settings && settings->is_object() && settings->contains("index") && (*settings)["index"].is_object())
      out.uuid = (*settings)["index"].value("uuid", "");
    if (!out.mappings.is_object() || out.uuid.empty())
      return make_error(ErrorCode::kProtocol,
                        "Elasticsearch described index " + index + " without mappings or uuid");
    return std::optional<IndexDescription>(std::move(out));
  }

  Status put_mapping(const std::string& index, const json& mapping) override {
    auto answer =
        execute(Call{"indices.put_mapping", "PUT", "/" + segment(index) + "/_mapping", mapping.dump()});
    if (!answer.ok()) return answer.error();
    if (answer->response.status != 200) return error_from_response(answer->response, "indices.put_mapping");
    return {};
  }

  Result<WriteResult> create(const std::string& index, const std::string& id, const Source& source) override {
    return write(Call{"create", "PUT", "/" + segment(index) + "/_create/" + segment(id), source.text,
                      "application/json", true});
  }

  Result<WriteResult> index(const std::string& index, const std::string& id, const Source& source,
                            std::optional<Version> if_match) override {
    return write(Call{"index", "PUT",
                      "/" + segment(index) + "/_doc/" + segment(id) + if_match_query(if_match), source.text,
                      "application/json", true});
  }

  Result<GetResult> get(const std::string& index, const std::string& id) override {
    auto answer = execute(Call{"get", "GET", "/" + segment(index) + "/_doc/" + segment(id), ""});
    if (!answer.ok()) return answer.error();
    return parse_get(answer->response);
  }

  Result<std::vector<GetResult>> mget(const std::string& index,
                                      const std::vector<std::string>& ids) override {
    if (ids.empty()) return std::vector<GetResult>{};
    auto answer = execute(Call{"mget", "POST", "/" + segment(index) + "/_mget", json{{"ids", ids}}.dump()});
    if (!answer.ok()) return answer.error();
    const http::Response& response = answer->response;
    if (response.status == 404) return std::vector<GetResult>(ids.size());  // no index: nothing found
    if (response.status != 200) return error_from_response(response, "mget");
    json body = json::parse(response.body, nullptr, false);
    if (!body.is_object() || !body.contains("docs") || !body["docs"].is_array() ||
        body["docs"].size() != ids.size())
      return make_error(ErrorCode::kProtocol, "mget: Elasticsearch answered without one doc per id");
    std::vector<GetResult> out;
    for (const json& doc : body["docs"]) {
      if (doc.contains("error")) {
        http::Response failed{500, {}, json{{"error", doc["error"]}, {"status", 500}}.dump()};
        return error_from_response(failed, "mget");
      }
      // Each doc has the shape of a GET answer.
      http::Response one{doc.value("found", false) ? 200 : 404, {}, doc.dump()};
      auto parsed = parse_get(one);
      if (!parsed.ok()) return parsed.error();
      out.push_back(std::move(*parsed));
    }
    return out;
  }

  Result<WriteResult> remove(const std::string& index, const std::string& id,
                             std::optional<Version> if_match) override {
    return write(Call{"delete", "DELETE",
                      "/" + segment(index) + "/_doc/" + segment(id) + if_match_query(if_match), "",
                      "application/json", true});
  }

  Result<BulkResult> bulk(const std::string& index, const std::vector<BulkOperation>& operations) override {
    if (operations.empty()) return BulkResult{};
    std::string body;
    // Sized once, so a renewal tick's body is not copied through every doubling as it grows.
    std::size_t size = 0;
    for (const BulkOperation& op : operations)
      size += kActionLineBytes + op.id.size() + op.source.text.size();
    body.reserve(size);
    for (const BulkOperation& op : operations) {
      // The action line, written out: one per document of every renewal tick.
      const char* action = op.type == BulkOperation::Type::kIndex    ? "{\"index\":{\"_id\":"
                           : op.type == BulkOperation::Type::kCreate ? "{\"create\":{\"_id\":"
                                                                     : "{\"delete\":{\"_id\":";
      body += action;
      json_text::append_string(body, op.id);
      if (op.if_match) {
        body += ",\"if_seq_no\":";
        body += std::to_string(op.if_match->seq_no);
        body += ",\"if_primary_term\":";
        body += std::to_string(op.if_match->primary_term);
      }
      body += "}}\n";
      if (op.type != BulkOperation::Type::kDelete) {
        body += op.source.text;
        body += '\n';
      }
    }
    auto answer = execute(
        Call{"bulk", "POST", "/" + segment(index) + "/_bulk", std::move(body), "application/x-ndjson", true});
    if (!answer.ok()) return answer.error();
    auto result = parse_bulk(answer->response, operations.size());
    if (!result.ok()) return result.error();
    result->earlier_attempt_may_have_applied = answer->earlier_attempt_may_have_applied;
    return result;
  }

  Result<std::vector<SearchHit>> search(const std::string& index, const json& query, int size) override {
    json body{{"query", query}, {"size", size}, {"seq_no_primary_term", true}};
    auto answer = execute(Call{"search", "POST", "/" + segment(index) + "/_search", body.dump()});
    if (!answer.ok()) return answer.error();
    return parse_search(answer->response);
  }

  Status refresh(const std::string& index) override {
    auto answer = execute(Call{"indices.refresh", "POST", "/" + segment(index) + "/_refresh", ""});
    if (!answer.ok()) return answer.error();
    if (answer->response.status != 200) return error_from_response(answer->response, "indices.refresh");
    return {};
  }

 private:
  Result<WriteResult> write(Call call) {
    const std::string op = call.op;
    auto answer = execute(std::move(call));
    if (!answer.ok()) return answer.error();
    auto result = parse_write(answer->response, op);
    if (!result.ok()) return result.error();
    result->earlier_attempt_may_have_applied = answer->earlier_attempt_may_have_applied;
    return result;
  }

  std::size_t pick_host() {
    std::lock_guard lock(hosts_mutex_);
    const MonoTime now = clock_.monotonic();
    const std::size_t n = hosts_.size();
    const std::size_t start = next_host_++ % n;
    std::size_t soonest = start;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t candidate = (start + i) % n;
      if (hosts_[candidate].skip_until <= now) return candidate;
      if (hosts_[candidate].skip_until < hosts_[soonest].skip_until) soonest = candidate;
    }
    return soonest;  // every host failed recently: try the one that failed longest ago
  }

  void mark_failed(std::size_t host) {
    std::lock_guard lock(hosts_mutex_);
    hosts_[host].skip_until = clock_.monotonic() + options_.host_cooldown;
  }

  std::string base_url(std::size_t host) {
    std::lock_guard lock(hosts_mutex_);
    return hosts_[host].base_url;
  }

  void observe(const std::string& op, int status, MonoTime started) {
    if (!options_.on_request) return;
    options_.on_request(op, status,
                        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.monotonic() - started));
  }

  // `call` as a request, its body moved in: a renewal tick's _bulk is hundreds of kilobytes,
  // and every attempt sends the same body. The host and the Authorization header are set per attempt.
  http::Request make_request(Call& call) {
    http::Request request;
    request.method = call.method;
    request.timeout = options_.request_timeout;
    request.headers.emplace_back("Accept", "application/json");
    if (!call.body.empty()) request.headers.emplace_back("Content-Type", call.content_type);
    request.body = std::move(call.body);
    return request;
  }

  // Points `request` at `host` and sets its Authorization header (none without credentials).
  void address(http::Request& request, const Call& call, std::size_t host,
               const std::optional<std::string>& authorization) {
    request.url = base_url(host) + call.path;
    std::erase_if(request.headers, [](const auto& header) { return header.first == "Authorization"; });
    if (authorization) request.headers.emplace_back("Authorization", *authorization);
  }

  // Sends `call`, retrying connection errors and 429/502/503/504 within the attempt and
  // time bounds, each retry on the next healthy host. A timeout is never retried: the
  // outcome is unknown and the caller decides how to resolve it.
  Result<Answer> execute(Call call) {
    Backoff backoff(options_.backoff);
    const MonoTime started = clock_.monotonic();
    bool may_have_applied = false;
    bool reread_credentials = false;
    http::Request request = make_request(call);
    for (int attempt = 1;; ++attempt) {
      auto authorization = credentials_.authorization();
      if (!authorization.ok()) return authorization.error();
      const std::size_t host = pick_host();
      address(request, call, host, *authorization);
      const MonoTime sent = clock_.monotonic();
      auto result = transport_.send(request);
      Error failure;
      if (!result.ok()) {
        observe(call.op, 0, sent);
        failure = result.error();
        if (failure.code == ErrorCode::kTimeout) {
          failure.message = "no answer from Elasticsearch for " + call.op + " in time (" + failure.message +
                            ")" + (call.write ? "; the outcome of the write is unknown" : "");
          return failure;
        }
        if (failure.code != ErrorCode::kUnavailable) return failure;
        mark_failed(host);
        // A connection lost after the request went out may have been applied.
        may_have_applied = may_have_applied || call.write;
        failure.message = "cannot reach Elasticsearch for " + call.op + ": " + failure.message;
      } else {
        http::Response& response = *result;
        observe(call.op, response.status, sent);
        if (response.status == 401 && !reread_credentials) {
          // The secret may have rotated between our read and the server's: read it again once.
          reread_credentials = true;
          credentials_.invalidate();
          auto fresh = credentials_.authorization();
          if (fresh.ok() && *fresh != *authorization) continue;
        }
        if (!retryable_status(response.status)) return Answer{std::move(response), may_have_applied};
        failure = error_from_response(response, call.op);
        if (response.status != 429) mark_failed(host);
        // A gateway (502/504) may have forwarded the request before failing.
        if (response.status == 502 || response.status == 504)
          may_have_applied = may_have_applied || call.write;
      }

      const auto elapsed = clock_.monotonic() - started;
      Millis delay = backoff.next();
      if (failure.retry_after) delay = std::max(delay, std::min(*failure.retry_after, options_.backoff.max));
      if (attempt >= options_.max_attempts || elapsed + delay > options_.max_retry_time) {
        failure.message +=
            " (gave up after " + std::to_string(attempt) + " attempt" + (attempt == 1 ? "" : "s") + ")";
        return failure;
      }
      log::debug("retrying Elasticsearch request", {{"op", call.op},
                                                    {"attempt", attempt},
                                                    {"error", to_string(failure.code)},
                                                    {"delay_ms", delay.count()}});
      if (!clock_.sleep_for(delay, {}))
        return make_error(ErrorCode::kCancelled, "stopped while retrying " + call.op);
    }
  }

  std::unique_ptr<http::Transport> owned_;
  http::Transport& transport_;
  ClientOptions options_;
  Clock& clock_;
  CredentialProvider credentials_;
  std::mutex hosts_mutex_;
  std::vector<Host> hosts_;
  std::size_t next_host_ = 0;
};

}  // namespace

Status validate(const ClientOptions& options) {
  if (options.hosts.empty()) return make_error(ErrorCode::kInvalidArgument, "no Elasticsearch URL given");
  for (const std::string& url : options.hosts) {
    const bool http_scheme = url.rfind("http://", 0) == 0;
    const bool https_scheme = url.rfind("https://", 0) == 0;
    if (!http_scheme && !https_scheme) {
      return make_error(ErrorCode::kInvalidArgument,
                        "Elasticsearch URL must start with http:// or https://: " + url.substr(0, 200));
    }
    const std::string rest = url.substr(http_scheme ? 7 : 8);
    const std::string authority = rest.substr(0, rest.find('/'));
    if (authority.empty()) return make_error(ErrorCode::kInvalidArgument, "Elasticsearch URL lacks a host");
    if (authority.find('@') != std::string::npos) {
      // Do not echo the URL: it holds a secret.
      return make_error(ErrorCode::kInvalidArgument,
                        "credentials in an Elasticsearch URL are not accepted; use a password, API key or "
                        "token file");
    }
    if (url.find_first_of("?# \t\r\n") != std::string::npos) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "Elasticsearch URL must not hold a query, fragment or whitespace: " + url.substr(0, 200));
    }
  }
  if (options.max_attempts < 1)
    return make_error(ErrorCode::kInvalidArgument, "max_attempts must be at least 1");
  return es::validate(options.credentials);
}

Result<std::unique_ptr<DocumentApi>> make_http_document_api(http::Transport& transport, ClientOptions options,
                                                            Clock& clock) {
  if (auto status = validate(options); !status.ok()) return status.error();
  return std::unique_ptr<DocumentApi>(
      std::make_unique<HttpDocumentApi>(nullptr, transport, std::move(options), clock));
}

Result<std::unique_ptr<DocumentApi>> make_http_document_api(std::unique_ptr<http::Transport> transport,
                                                            ClientOptions options, Clock& clock) {
  if (auto status = validate(options); !status.ok()) return status.error();
  http::Transport& ref = *transport;
  return std::unique_ptr<DocumentApi>(
      std::make_unique<HttpDocumentApi>(std::move(transport), ref, std::move(options), clock));
}

}  // namespace eslease::es
