#include "emulators/kube/faults.h"

namespace eslease::kubeemu {

using nlohmann::json;

Result<Fault> FaultInjector::parse(const json& body) {
  auto bad = [](const std::string& m) { return make_error(ErrorCode::kInvalidArgument, m, 400); };
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
  return fault;
}

void FaultInjector::add(Fault fault) {
  std::lock_guard lock(mutex_);
  faults_.push_back(std::move(fault));
}

void FaultInjector::clear() {
  std::lock_guard lock(mutex_);
  faults_.clear();
}

std::optional<FaultAction> FaultInjector::take(const std::string& verb, const std::string& resource) {
  std::lock_guard lock(mutex_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if ((it->verb != "*" && it->verb != verb) || (it->resource != "*" && it->resource != resource)) continue;
    FaultAction action{it->latency, it->status, it->drop, it->retry_after_seconds};
    if (it->count > 0 && --it->count == 0) faults_.erase(it);
    return action;
  }
  return std::nullopt;
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
