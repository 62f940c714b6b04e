#include "kube/http_api.h"

#include "common/text.h"
#include "kube/answer_json.h"
#include "kube/status.h"
#include "kube/watch_decoder.h"

#ifndef ESLEASE_VERSION
#define ESLEASE_VERSION "dev"
#endif

namespace eslease::kube {
namespace {

void add_query(std::string& url, const char* key, const std::string& value) {
  if (value.empty()) return;
  url += url.find('?') == std::string::npos ? '?' : '&';
  url += key;
  url += '=';
  url += percent_encode(value);
}

Result<json> parse_body(const http::Response& response, bool metadata_only = false) {
  json parsed = metadata_only ? parse_answer_metadata(response.body) : parse_answer(response.body);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return make_error(ErrorCode::kProtocol, "API server answered with a body that is not a JSON object",
                      response.status);
  }
  return parsed;
}

Status require_name(const std::string& name, const char* what) {
  if (name.empty())
    return make_error(ErrorCode::kInvalidArgument, std::string(what) + ": object has no name");
  return {};
}

}  // namespace

HttpApi::HttpApi(RestConfig config, http::Transport& transport, HttpApiOptions options)
    : config_(std::move(config)), transport_(transport), options_(std::move(options)) {
  if (options_.user_agent.empty()) options_.user_agent = std::string("eslease/") + ESLEASE_VERSION;
  if (!config_.token_file.empty()) {
    token_source_.emplace(TokenSource::from_file(config_.token_file));
  } else if (!config_.token.empty()) {
    token_source_.emplace(TokenSource::fixed(config_.token));
  }
}

HttpApi::HttpApi(RestConfig config, std::unique_ptr<http::Transport> owned, HttpApiOptions options)
    : HttpApi(std::move(config), *owned, std::move(options)) {
  owned_transport_ = std::move(owned);
}

std::unique_ptr<HttpApi> HttpApi::connect(RestConfig config, HttpApiOptions options) {
  http::TransportOptions transport_options;
  transport_options.tls = config.tls;
  auto transport = http::make_transport(std::move(transport_options));
  return std::unique_ptr<HttpApi>(new HttpApi(std::move(config), std::move(transport), std::move(options)));
}

std::string HttpApi::url(const Resource& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) const {
  std::string out = config_.server;
  out += r.group.empty() ? "/api/" + percent_encode(r.version)
                         : "/apis/" + percent_encode(r.group) + "/" + percent_encode(r.version);
  if (r.namespaced && !ns.empty()) out += "/namespaces/" + percent_encode(ns);
  out += "/" + percent_encode(r.plural);
  if (!name.empty()) out += "/" + percent_encode(name);
  if (!subresource.empty()) out += "/" + subresource;
  return out;
}

Result<http::Request> HttpApi::request(std::string method, std::string url, const CallOptions& call) {
  http::Request req;
  req.method = std::move(method);
  req.url = std::move(url);
  req.timeout = call.timeout.value_or(options_.request_timeout);
  req.headers.emplace_back("Accept", "application/json");
  req.headers.emplace_back("User-Agent", options_.user_agent);
  if (token_source_) {
    auto token = token_source_->token();
    if (!token.ok()) return token.error();
    req.headers.emplace_back("Authorization", "Bearer " + *token);
  } else if (!config_.username.empty()) {
    std::string plain = config_.username + ":" + config_.password;
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string encoded;
    for (std::size_t i = 0; i < plain.size(); i += 3) {
      std::uint32_t n = static_cast<unsigned char>(plain[i]) << 16;
      if (i + 1 < plain.size()) n |= static_cast<unsigned char>(plain[i + 1]) << 8;
      if (i + 2 < plain.size()) n |= static_cast<unsigned char>(plain[i + 2]);
      encoded.push_back(kAlphabet[(n >> 18) & 63]);
      encoded.push_back(kAlphabet[(n >> 12) & 63]);
      encoded.push_back(i + 1 < plain.size() ? kAlphabet[(n >> 6) & 63] : '=');
      encoded.push_back(i + 2 < plain.size() ? kAlphabet[n & 63] : '=');
    }
    req.headers.emplace_back("Authorization", "Basic " + encoded);
  }
  return req;
}

Result<json> HttpApi::call_json(const http::Request& req, bool metadata_only) {
  auto response = transport_.send(req);
  if (!response.ok()) return response.error();
  if (response->status / 100 != 2) return error_from_response(*response);
  return parse_body(*response, metadata_only);
}

Result<json> HttpApi::get(const Resource& r, const std::string& ns, const std::string& name,
                          const CallOptions& call) {
  if (auto ok = require_name(name, "get"); !ok.ok()) return ok.error();
  auto req = request("GET", url(r, ns, name), call);
  if (!req.ok()) return req.error();
  return call_json(std::move(req).value());
}

Result<ListPage> HttpApi::list(const Resource& r, const std::string& ns, const ListOptions& options) {
  std::string target = url(r, ns);
  add_query(target, "labelSelector", options.label_selector);
  add_query(target, "fieldSelector", options.field_selector);
  if (options.limit > 0) add_query(target, "limit", std::to_string(options.limit));
  add_query(target, "continue", options.continue_token);
  add_query(target, "resourceVersion", options.resource_version);
  auto req = request("GET", std::move(target), options.call);
  if (!req.ok()) return req.error();
  auto body = call_json(std::move(req).value());
  if (!body.ok()) return body.error();
  ListPage page;
  auto items = body->find("items");
  if (items != body->end() && items->is_array()) {
    page.items.reserve(items->size());
    for (auto& item : *items) page.items.push_back(std::move(item));
  } else if (items != body->end() && !items->is_null()) {
    return make_error(ErrorCode::kProtocol, "list answer: \"items\" is not an array");
  }
  auto meta = body->find("metadata");
  if (meta != body->end() && meta->is_object()) {
    page.resource_version = meta->value("resourceVersion", "");
    page.continue_token = meta->value("continue", "");
  }
  return page;
}

Result<json> HttpApi::create(const Resource& r, const std::string& ns, const json& object,
                             const CallOptions& call) {
  auto req = request("POST", url(r, ns), call);
  if (!req.ok()) return req.error();
  req->headers.emplace_back("Content-Type", "application/json");
  req->body = object.dump(-1, ' ', false, json::error_handler_t::replace);
  return call_json(std::move(req).value());
}

Result<json> HttpApi::write(const std::string& method, const Resource& r, const json& object,
                            const std::string& subresource, const CallOptions& call) {
  std::string name = meta_string(object, "name");
  if (auto ok = require_name(name, "update"); !ok.ok()) return ok.error();
  auto req = request(method, url(r, meta_string(object, "namespace"), name, subresource), call);
  if (!req.ok()) return req.error();
  req->headers.emplace_back("Content-Type", "application/json");
  req->body = object.dump(-1, ' ', false, json::error_handler_t::replace);
  return call_json(std::move(req).value());
}

Result<json> HttpApi::update(const Resource& r, const json& object, const CallOptions& call) {
  return write("PUT", r, object, "", call);
}

Result<json> HttpApi::update_status(const Resource& r, const json& object, const CallOptions& call) {
  return write("PUT", r, object, "status", call);
}

Result<json> HttpApi::patch(const Resource& r, const std::string& ns, const std::string& name, PatchType type,
                            const json& patch, bool status_subresource, const CallOptions& call) {
  if (auto ok = require_name(name, "patch"); !ok.ok()) return ok.error();
  auto req = request("PATCH", url(r, ns, name, status_subresource ? "status" : ""), call);
  if (!req.ok()) return req.error();
  req->headers.emplace_back("Content-Type", type == PatchType::kMerge ? "application/merge-patch+json"
                                                                      : "application/json-patch+json");
  req->body = patch.dump(-1, ' ', false, json::error_handler_t::replace);
  return call_json(std::move(req).value(), call.metadata_only);
}

Status HttpApi::remove(const Resource& r, const std::string& ns, const std::string& name,
                       const DeleteOptions& options) {
  if (auto ok = require_name(name, "delete"); !ok.ok()) return ok.error();
  auto req = request("DELETE", url(r, ns, name), options.call);
  if (!req.ok()) return req.error();
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.precondition_uid) body["preconditions"]["uid"] = *options.precondition_uid;
  if (options.precondition_resource_version) {
    body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  req->headers.emplace_back("Content-Type", "application/json");
  req->body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  auto response = transport_.send(*req);
  if (!response.ok()) return response.error();
  if (response->status / 100 != 2) return error_from_response(*response);
  return {};
}

Status HttpApi::watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                      const WatchHandler& on_event, std::stop_token stop) {
  std::string target = url(r, ns);
  add_query(target, "watch", "true");
  add_query(target, "resourceVersion", options.resource_version);
  if (options.allow_bookmarks) add_query(target, "allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0)
    add_query(target, "timeoutSeconds", std::to_string(options.timeout_seconds));
  add_query(target, "labelSelector", options.label_selector);
  add_query(target, "fieldSelector", options.field_selector);
  auto req = request("GET", std::move(target), CallOptions{options.idle_timeout});
  if (!req.ok()) return req.error();

  WatchDecoder decoder;
  std::optional<Error> failure;
  bool handler_stopped = false;
  auto on_chunk = [&](std::string_view chunk) {
    auto events = decoder.feed(chunk);
    if (!events.ok()) {
      failure = events.error();
      return false;
    }
    for (const auto& event : *events) {
      if (!on_event(event)) {
        handler_stopped = true;
        return false;
      }
    }
    return !stop.stop_requested();
  };
  auto response = transport_.stream(*req, on_chunk, stop);
  if (failure) return *failure;
  if (handler_stopped) return {};
  if (!response.ok()) return response.error();
  if (response->status / 100 != 2) return error_from_response(*response);
  if (stop.stop_requested()) return make_error(ErrorCode::kCancelled, "watch stopped");
  return decoder.finish();
}

}  // namespace eslease::kube
