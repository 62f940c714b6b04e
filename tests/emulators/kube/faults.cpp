#include "emulators/kube/faults.h"

namespace eslease::kubeemu {

using nlohmann::json;

std::variant<Fault, ApiError> FaultInjector::parse(const json& body) {
  auto bad = [](const std::string& m) { return bad_request(m); };
  if (!body.is_object()) return bad("fault must be a JSON object");
  Fault fault;
  try {
    fault.verb = body.value("verb", std::string("*"));
    fault.resource = body.value("resource", std::string("*"));
    fault.status = body.value("status", 0);
    fault.count = body.value("count", -1);
    fault.latency = std::chrono::milliseconds(body.value("latency_ms", 0));
    fault.drop = body.value("drop", false);
    fault.retry_after_seconds = body.value("retry_after_seconds", 0);
    const std::string phase = body.value("phase", std::string("before"));
    if (phase != "before" && phase != "after_apply") return bad(R"(phase must be "before" or "after_apply")");
    fault.phase = phase == "after_apply" ? FaultPhase::kAfterApply : FaultPhase::kBefore;
  } catch (const json::exception& e) {
    return bad(std::string("malformed fault: ") + e.what());
  }
  static const char* kVerbs[] = {"get", "list", "watch", "create", "update", "patch", "delete", "*"};
  bool known = false;
  for (const char* v : kVerbs) known = known || fault.verb == v;
  if (!known) return bad("unknown verb: " + fault.verb);
  if (fault.status != 0 && (fault.status < 400 || fault.status > 599))
    return bad("status must be 4xx or 5xx");
  if (fault.latency.count() < 0) return bad("latency_ms must not be negative");
  if (fault.status == 0 && !fault.drop && fault.latency.count() == 0) return bad("fault does nothing");
  if (fault.phase == FaultPhase::kAfterApply) {
    if (fault.verb != "*" && !is_write(fault.verb))
      return bad("phase after_apply is for writes: verb must be create, update, patch, delete or *");
    if (fault.status != 0)
      return bad("a fault after the write is applied loses its answer: it has no status");
  }
  return fault;
}

bool FaultInjector::is_write(const std::string& verb) {
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete";
}

void FaultInjector::add(Fault fault) {
  std::lock_guard lock(mutex_);
  faults_.push_back(std::move(fault));
}

void FaultInjector::clear() {
  std::lock_guard lock(mutex_);
  faults_.clear();
}

std::optional<FaultAction> FaultInjector::take(const std::string& verb, const std::string& resource,
                                               FaultPhase phase) {
  std::lock_guard lock(mutex_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    // "leases" strikes the leases of every group; "leases.eslease.io" only those.
    const bool resource_matches =
        it->resource == "*" || it->resource == resource || resource.starts_with(it->resource + ".");
    if (it->phase != phase || (it->verb != "*" && it->verb != verb) || !resource_matches) {
      continue;
    }
    FaultAction action{it->latency, it->status, it->drop, it->retry_after_seconds};
    if (it->count > 0 && --it->count == 0) faults_.erase(it);
    return action;
  }
  return std::nullopt;
}

namespace {

// Keeps a handler's answer until the write's fate is decided; everything else passes through.
class HeldAnswer final : public http::ServerResponse {
 public:
  explicit HeldAnswer(http::ServerResponse& out) : out_(out) {}
  void send(int status, http::Headers headers, std::string body) override {
    answer_.emplace(Answer{status, std::move(headers), std::move(body)});
  }
  bool begin_chunked(int status, http::Headers headers) override {
    return out_.begin_chunked(status, std::move(headers));
  }
  bool write_chunk(std::string_view data) override { return out_.write_chunk(data); }
  void end_chunked() override { out_.end_chunked(); }
  void drop_connection() override { out_.drop_connection(); }
  bool closing() const override { return out_.closing(); }
  bool wait_closing(std::chrono::milliseconds timeout) override { return out_.wait_closing(timeout); }

  bool succeeded() const { return answer_ && answer_->status >= 200 && answer_->status < 300; }
  void release() {
    if (answer_) out_.send(answer_->status, std::move(answer_->headers), std::move(answer_->body));
  }

 private:
  struct Answer {
    int status;
    http::Headers headers;
    std::string body;
  };
  http::ServerResponse& out_;
  std::optional<Answer> answer_;
};

}  // namespace

void FaultInjector::answer_write(const std::string& verb, const std::string& resource, bool client_left,
                                 http::ServerResponse& response,
                                 const std::function<void(http::ServerResponse&)>& serve) {
  HeldAnswer held(response);
  serve(held);
  if (!held.succeeded()) return held.release();
  if (!client_left) {
    const auto fault = take(verb, resource, FaultPhase::kAfterApply);
    if (!fault) return held.release();
    if (fault->latency.count() > 0) client_left = response.wait_closing(fault->latency);
    if (!client_left && !fault->drop) return held.release();
  }
  ++applied_unanswered_;
  response.drop_connection();
}

void RequestCounters::count(const std::string& verb, const std::string& resource) {
  std::lock_guard lock(mutex_);
  ++counts_[verb + " " + resource];
}

json RequestCounters::snapshot() const {
  std::lock_guard lock(mutex_);
  json out = json::object();
  for (const auto& [key, n] : counts_) out[key] = n;
  return out;
}

}  // namespace eslease::kubeemu
