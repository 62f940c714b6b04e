#include "kube/leader_election.h"

#include <cmath>
#include <sstream>
#include <thread>

#include "common/backoff.h"
#include "common/log.h"
#include "common/text.h"
#include "common/thread_name.h"

namespace eslease::kube {
namespace {

LeaderRecord record_from(const json& lease) {
  LeaderRecord record;
  auto spec = lease.find("spec");
  if (spec == lease.end() || !spec->is_object()) return record;
  auto str = [&](const char* key) {
    auto it = spec->find(key);
    return it != spec->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto num = [&](const char* key) {
    auto it = spec->find(key);
    if (it == spec->end() || !it->is_number_integer()) return 0;
    auto v = it->get<std::int64_t>();
    return v < 0 || v > 1'000'000'000 ? 0 : static_cast<int>(v);
  };
  record.holder = str("holderIdentity");
  record.lease_duration_seconds = num("leaseDurationSeconds");
  record.acquire_time = str("acquireTime");
  record.renew_time = str("renewTime");
  record.transitions = num("leaseTransitions");
  return record;
}

json spec_from(const LeaderRecord& record) {
  json spec = {{"leaseDurationSeconds", record.lease_duration_seconds},
               {"acquireTime", record.acquire_time},
               {"renewTime", record.renew_time},
               {"leaseTransitions", record.transitions}};
  if (!record.holder.empty()) spec["holderIdentity"] = record.holder;
  return spec;
}

}  // namespace

Status validate(const LeaderElectionConfig& config) {
  auto invalid = [](const char* message) { return make_error(ErrorCode::kInvalidArgument, message); };
  if (config.lease_duration <= config.renew_deadline)
    return invalid("leaseDuration must be greater than renewDeadline");
  if (static_cast<double>(config.renew_deadline.count()) <=
      kJitterFactor * static_cast<double>(config.retry_period.count())) {
    std::ostringstream factor;
    factor << kJitterFactor;
    return make_error(ErrorCode::kInvalidArgument,
                      "renewDeadline must be greater than retryPeriod*" + factor.str());
  }
  if (config.lease_duration.count() <= 0) return invalid("leaseDuration must be greater than zero");
  if (config.renew_deadline.count() <= 0) return invalid("renewDeadline must be greater than zero");
  if (config.retry_period.count() <= 0) return invalid("retryPeriod must be greater than zero");
  if (config.identity.empty()) return invalid("identity must not be empty");
  if (config.name.empty() || config.ns.empty()) return invalid("lease name and namespace must not be empty");
  return {};
}

Result<std::unique_ptr<LeaderElector>> LeaderElector::create(Api& api, Clock& clock,
                                                             LeaderElectionConfig config) {
  if (auto valid = validate(config); !valid.ok()) return valid.error();
  return std::unique_ptr<LeaderElector>(new LeaderElector(api, clock, std::move(config)));
}

LeaderElector::LeaderElector(Api& api, Clock& clock, LeaderElectionConfig config)
    : api_(api), config_(std::move(config)), clock_(clock) {}

bool LeaderElector::holds_record() const {
  std::lock_guard lock(mutex_);
  return observed_ && observed_->holder == config_.identity;
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(mutex_);
  return observed_ ? observed_->holder : std::string();
}

void LeaderElector::observe(const LeaderRecord& record, json object) {
  std::lock_guard lock(mutex_);
  if (!observed_ || !(*observed_ == record)) {
    observed_ = record;
    observed_time_ = clock_.monotonic();
  }
  observed_object_ = std::move(object);
}

bool LeaderElector::try_acquire_or_renew(std::chrono::milliseconds request_timeout) {
  // One deadline for the whole attempt (a read, maybe a write and a re-read).
  const MonoTime deadline = clock_.monotonic() + request_timeout;
  const DeadlineCall call = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.monotonic());
    return CallOptions{std::max(left, std::chrono::milliseconds(1))};
  };
  const std::string now = format_rfc3339_micros(clock_.now());
  LeaderRecord desired;
  desired.holder = config_.identity;
  desired.lease_duration_seconds = std::max<int>(
      1, static_cast<int>(std::ceil(static_cast<double>(config_.lease_duration.count()) / 1000.0)));
  desired.acquire_time = now;
  desired.renew_time = now;

  auto current = api_.get(resources::coordination_leases(), config_.ns, config_.name, call());
  if (current.ok()) return write_record(*current, desired, call);
  if (current.error().code == ErrorCode::kNotFound) return create_record(desired, call);
  log::warn("leader election: cannot read lease",
            {{"lease", config_.name}, {"error", current.error().describe()}});
  return false;
}

bool LeaderElector::create_record(const LeaderRecord& desired, const DeadlineCall& call) {
  const Resource lease_resource = resources::coordination_leases();
  json lease = {{"apiVersion", lease_resource.api_version()},
                {"kind", "Lease"},
                {"metadata", {{"name", config_.name}, {"namespace", config_.ns}}},
                {"spec", spec_from(desired)}};
  auto created = api_.create(lease_resource, config_.ns, lease, call());
  if (!created.ok() && created.error().code == ErrorCode::kAlreadyExists) {
    // Another controller created it first (both started at once): it leads and this one
    // stands by, which is no error.
    observe_winner(call);
    return false;
  }
  if (!created.ok()) {
    log::warn("leader election: cannot create lease",
              {{"lease", config_.name}, {"error", created.error().describe()}});
    return false;
  }
  observe(record_from(*created), *created);
  return true;
}

bool LeaderElector::write_record(const json& current, LeaderRecord desired, const DeadlineCall& call) {
  const LeaderRecord existing = record_from(current);
  observe(existing, current);
  {
    std::lock_guard lock(mutex_);
    const bool held_by_other = !existing.holder.empty() && existing.holder != config_.identity;
    const auto expiry = observed_time_ + std::chrono::seconds(existing.lease_duration_seconds);
    if (held_by_other && expiry > clock_.monotonic()) return false;
  }
  if (existing.holder == config_.identity) {
    desired.acquire_time = existing.acquire_time;
    desired.transitions = existing.transitions;
  } else {
    desired.transitions = existing.transitions + 1;
  }
  json updated = current;  // keeps metadata.resourceVersion: the write is conditional
  updated["spec"] = spec_from(desired);
  auto written = api_.update(resources::coordination_leases(), updated, call());
  if (!written.ok()) {
    if (written.error().code == ErrorCode::kConflict) {
      observe_winner(call);  // someone wrote in between
    } else {
      log::warn("leader election: cannot update lease",
                {{"lease", config_.name}, {"error", written.error().describe()}});
    }
    return false;
  }
  observe(record_from(*written), *written);
  return true;
}

void LeaderElector::observe_winner(const DeadlineCall& call) {
  if (auto reread = api_.get(resources::coordination_leases(), config_.ns, config_.name, call());
      reread.ok()) {
    observe(record_from(*reread), *reread);
  }
}

bool LeaderElector::release() {
  json object;
  LeaderRecord record;
  {
    std::lock_guard lock(mutex_);
    if (!observed_ || observed_->holder != config_.identity) return true;
    object = observed_object_;
    record.transitions = observed_->transitions;
  }
  const std::string now = format_rfc3339_micros(clock_.now());
  record.lease_duration_seconds = 1;
  record.acquire_time = now;
  record.renew_time = now;
  object["spec"] = spec_from(record);
  auto written = api_.update(resources::coordination_leases(), object, CallOptions{config_.renew_deadline});
  if (!written.ok()) {
    log::warn("leader election: release failed",
              {{"lease", config_.name}, {"error", written.error().describe()}});
    return false;
  }
  observe(record_from(*written), *written);
  return true;
}

void LeaderElector::maybe_report_transition() {
  std::string current;
  {
    std::lock_guard lock(mutex_);
    if (!observed_ || observed_->holder == reported_leader_) return;
    reported_leader_ = observed_->holder;
    current = reported_leader_;
  }
  if (config_.callbacks.on_new_leader && !current.empty()) config_.callbacks.on_new_leader(current);
}

std::chrono::milliseconds LeaderElector::jittered_retry() {
  return std::chrono::milliseconds(static_cast<std::int64_t>(
      static_cast<double>(config_.retry_period.count()) * (1.0 + jitter(0.0, kJitterFactor))));
}

std::optional<MonoTime> LeaderElector::acquire(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const MonoTime attempt = clock_.monotonic();
    bool acquired = try_acquire_or_renew(config_.renew_deadline);
    maybe_report_transition();
    if (acquired) {
      log::info("leader election: became leader", {{"lease", config_.name}, {"identity", config_.identity}});
      return attempt;
    }
    if (!clock_.sleep_for(jittered_retry(), stop)) break;
  }
  return std::nullopt;
}

void LeaderElector::renew(std::stop_token stop, MonoTime acquired_at) {
  // Measured from when the request that (re)wrote the record was sent: the record cannot
  // have been written, nor seen by others, before that.
  MonoTime last_renew_started = acquired_at;
  while (clock_.sleep_for(config_.retry_period, stop)) {
    const MonoTime deadline = last_renew_started + config_.renew_deadline;
    bool renewed = false;
    while (!stop.stop_requested()) {
      const MonoTime attempt = clock_.monotonic();
      if (attempt >= deadline) break;
      auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - attempt);
      renewed = try_acquire_or_renew(remaining);
      maybe_report_transition();
      if (renewed) {
        last_renew_started = attempt;
        break;
      }
      if (!holds_record() && !leader().empty()) break;  // someone else holds it now
      auto wait = std::min<std::chrono::milliseconds>(
          config_.retry_period,
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.monotonic()));
      if (wait.count() <= 0 || !clock_.sleep_for(wait, stop)) break;
    }
    if (!renewed) {
      if (!stop.stop_requested()) {
        log::warn("leader election: failed to renew within the deadline, stepping down",
                  {{"lease", config_.name}});
      }
      return;
    }
  }
}

void LeaderElector::run(std::stop_token stop) {
  const std::optional<MonoTime> acquired_at = acquire(stop);
  if (!acquired_at) return;
  leading_.store(true);
  {
    std::stop_source leading;
    std::jthread work;
    if (config_.callbacks.on_started_leading) {
      work = std::jthread([this, token = leading.get_token()] {
        name_this_thread("leading");
        config_.callbacks.on_started_leading(token);
      });
    }
    renew(stop, *acquired_at);
    leading.request_stop();
    if (work.joinable()) work.join();
  }
  leading_.store(false);
  if (config_.release_on_cancel) release();
  if (config_.callbacks.on_stopped_leading) config_.callbacks.on_stopped_leading();
}

}  // namespace eslease::kube
