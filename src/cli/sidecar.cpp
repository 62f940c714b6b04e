#include "cli/sidecar.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/session.h"
#include "cli/child_process.h"
#include "cli/holds_book.h"
#include "cli/lease_follow.h"
#include "common/address.h"
#include "common/signals.h"
#include "common/text.h"
#include "http/server.h"
#include "kube/informer.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

const http::Headers kJson = {{"content-type", "application/json"}};
const http::Headers kText = {{"content-type", "text/plain; charset=utf-8"}};

// Replaces the file at `path` by a rename, so a reader sees the old content or the new,
// never half of it.
Status write_atomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return make_error(ErrorCode::kUnavailable, "cannot write " + temporary + ": " + std::strerror(errno));
    }
  }
  std::error_code renamed;
  std::filesystem::rename(temporary, path, renamed);
  if (!renamed) return {};
  std::error_code ignored;
  std::filesystem::remove(temporary, ignored);
  return make_error(ErrorCode::kUnavailable, "cannot replace " + path + ": " + renamed.message());
}

// Runs --on-grant and --on-loss one at a time, in the order the changes happened, on a thread
// of its own, so a slow hook never delays what the sidecar serves. What is queued when it goes
// is run first.
class HookRunner {
 public:
  HookRunner(const SidecarFlags& flags, std::string ns, Messages& messages)
      : on_grant_(flags.on_grant), on_loss_(flags.on_loss), ns_(std::move(ns)), messages_(messages) {
    if (!on_grant_.empty() || !on_loss_.empty()) thread_ = std::jthread([this] { loop(); });
  }
  ~HookRunner() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    queued_.notify_all();
  }
  HookRunner(const HookRunner&) = delete;
  HookRunner& operator=(const HookRunner&) = delete;

  void granted(const PodGrant& grant) { add("--on-grant", on_grant_, environment("grant", grant)); }
  void lost(const LostGrant& lost) {
    auto env = environment("loss", lost.grant);
    env.emplace_back("ESLEASE_LOSS_REASON", lost.why);
    add("--on-loss", on_loss_, std::move(env));
  }

 private:
  using Environment = std::vector<std::pair<std::string, std::string>>;
  struct Job {
    const char* flag;
    std::string command;
    Environment environment;
  };

  // The grant as `run` gives it to its command, and what happened to it.
  Environment environment(const char* event, const PodGrant& grant) const {
    return {{"ESLEASE_EVENT", event},
            {"ESLEASE_FENCING_TOKEN", grant.token},
            {"ESLEASE_LOCK", lock_ids(ns_, grant.locks, ",")},
            {"ESLEASE_LEASE", grant.lease},
            {"ESLEASE_VALID_UNTIL", format_rfc3339_millis(grant.valid_until)}};
  }

  void add(const char* flag, const std::string& command, Environment environment) {
    if (command.empty()) return;
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(Job{flag, command, std::move(environment)});
    }
    queued_.notify_all();
  }

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      queued_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // closing, and nothing left to run
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      run(job);
      lock.lock();
    }
  }

  void run(const Job& job) {
    ChildCommand child({"/bin/sh", "-c", job.command}, job.environment);
    const pid_t pid = child.start_in_own_group();
    if (pid < 0) {
      messages_.say("cannot start " + std::string(job.flag) + ": " + std::strerror(errno));
      return;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (const int code = exit_code_of(status); code != 0)
      messages_.say(std::string(job.flag) + " exited with " + std::to_string(code));
  }

  const std::string on_grant_;
  const std::string on_loss_;
  const std::string ns_;
  Messages& messages_;
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<Job> jobs_;
  bool closing_ = false;
  std::jthread thread_;  // last: it uses everything above
};

class Sidecar {
 public:
  Sidecar(kube::Api& api, Clock& clock, const PodIdentity& pod, const SidecarSettings& settings,
          Messages& messages)
      : api_(api),
        clock_(clock),
        pod_(pod),
        settings_(settings),
        messages_(messages),
        book_(pod.name, pod.uid, settings.safety_margin) {}

  int run(std::stop_token outer) {
    if (Status ready = preflight(); !ready.ok()) {
      messages_.say(ready.error().message);
      return 1;
    }
    auto address = parse_host_port(settings_.flags.listen);
    if (!address.ok()) {
      messages_.say("--listen: " + address.error().message);
      return 2;
    }
    create_leases_informer();  // before the server, whose threads read it
    http::ServerOptions server_options;
    server_options.host = address->host;
    server_options.port = address->port;
    auto server = http::make_server(
        server_options, [this](const http::ServerRequest& request, http::ServerResponse& response) {
          serve(request, response);
        });
    if (Status listening = server->start(); !listening.ok()) {
      messages_.say(listening.error().message);
      return 1;
    }
    std::stop_source stopping;
    std::stop_callback outer_stop(outer, [&] { stopping.request_stop(); });
    Result<std::unique_ptr<SignalCatcher>> signals = std::unique_ptr<SignalCatcher>();
    if (settings_.catch_signals) signals = SignalCatcher::start([&](int) { stopping.request_stop(); });
    if (!signals.ok()) {
      messages_.say(signals.error().message);
      server->stop();
      return 1;
    }
    messages_.say("sidecar of pod " + pod_.name + " in namespace " + pod_.ns + ": serving /holds on " +
                  HostPort{address->host, server->port()}.to_string());
    write_file({});
    {
      HookRunner hooks(settings_.flags, pod_.ns, messages_);
      std::jthread session([this, &stopping](std::stop_token stop) { follow_session(stop, stopping); });
      leases_->start();
      report(hooks, stopping.get_token());
      server->stop();  // what it would answer from now on no longer follows the Leases
      leases_->stop();
      session.request_stop();
      session.join();
      // It can no longer vouch for anything: every grant it reported is lost to its pod.
      for (const PodGrant& grant : reported_) {
        messages_.say("no longer reporting " + describe(grant) + ": the sidecar is stopping");
        hooks.lost(LostGrant{grant, "eslease sidecar is stopping"});
      }
      write_file({});
    }  // the hooks queued are run before this returns
    return exit_code_;
  }

 private:
  // The rights and the resource it needs, checked once so a missing one is said at start.
  Status preflight() {
    kube::ListOptions one;
    one.limit = 1;
    auto leases = api_.list(kube::resources::eslease_leases(), pod_.ns, one);
    if (!leases.ok() && (is_permanent(leases.error()) || leases.error().code == ErrorCode::kNotFound))
      return explain(leases.error(), "list Leases in namespace " + pod_.ns);
    auto session = api_.get(kube::resources::coordination_leases(), pod_.ns, api::kSessionName);
    if (!session.ok() && is_permanent(session.error()))
      return explain(session.error(),
                     "read session " + std::string(api::kSessionName) + " in namespace " + pod_.ns);
    return {};
  }

  Error explain(const Error& error, const std::string& doing) const {
    Error out = error;
    if (error.code == ErrorCode::kForbidden) {
      out.message =
          "cannot " + doing + ": " + error.message +
          ". Access denied (403): the sidecar's service account needs list and watch on "
          "leases.eslease.io, and get and watch on leases.coordination.k8s.io named eslease-session, "
          "in namespace " +
          pod_.ns + " (examples/workloads/sidecar-election.yaml has such a Role)";
    } else {
      out.message = explain_api_error(error, doing, pod_.ns);
    }
    return out;
  }

  // One watch of every Lease of the namespace; the book keeps those that name this pod.
  void create_leases_informer() {
    kube::InformerOptions options;
    options.ns = pod_.ns;
    kube::RecordHandlers<LeaseView> handlers;
    handlers.on_add = [this](const LeaseView& lease) { lease_changed(lease); };
    handlers.on_update = [this](const LeaseView&, const LeaseView& lease) { lease_changed(lease); };
    handlers.on_delete = [this](const LeaseView& lease) {
      std::lock_guard lock(mutex_);
      book_.lease_deleted(lease.name);
      changed();
    };
    leases_ = std::make_unique<kube::TypedInformer<LeaseView>>(
        api_, clock_, kube::resources::eslease_leases(), options, std::move(handlers), &decode_lease_view);
  }

  void lease_changed(const LeaseView& lease) {
    const WallTime wall = clock_.now();
    const MonoTime mono = clock_.monotonic();
    std::lock_guard lock(mutex_);
    book_.lease_changed(lease, wall, mono);
    changed();
  }

  // The namespace's session, each version as it comes; ends the sidecar when it cannot be
  // read at all (its rights were taken away).
  void follow_session(std::stop_token stop, std::stop_source& stopping) {
    FollowOptions follow;
    follow.idle_timeout = Millis(30000);
    std::string last_error;
    const Status followed = follow_object(
        api_, clock_, kube::resources::coordination_leases(), pod_.ns, api::kSessionName, follow,
        [this](const std::optional<json>& object) {
          if (!object) return false;
          const api::Session session = api::decode_session(*object);
          const WallTime wall = clock_.now();
          const MonoTime mono = clock_.monotonic();
          std::lock_guard lock(mutex_);
          book_.session_changed(session, wall, mono);
          changed();
          return false;
        },
        [&](const Error& error) {
          if (error.message == last_error) return;
          last_error = error.message;
          messages_.say("cannot watch session " + std::string(api::kSessionName) +
                        " (retrying): " + error.message);
        },
        stop);
    if (followed.ok() || followed.error().code == ErrorCode::kCancelled) return;
    messages_.say(explain(followed.error(), "watch session " + std::string(api::kSessionName)).message +
                  "; stopping");
    exit_code_ = 1;
    stopping.request_stop();
  }

  // Under mutex_.
  void changed() {
    dirty_ = true;
    changes_.notify_all();
  }

  // Tells every change of what is reported, and wakes at the next deadline, until stopped.
  void report(HookRunner& hooks, std::stop_token stop) {
    std::unique_lock lock(mutex_);
    while (!stop.stop_requested()) {
      const MonoTime now = clock_.monotonic();
      HoldsBook::Changes changes = book_.take_changes(now);
      const std::vector<PodGrant> holds = book_.holds(now);
      const std::optional<MonoTime> next = book_.next_deadline(now);
      dirty_ = false;
      lock.unlock();
      for (const LostGrant& lost : changes.lost) {
        messages_.say("no longer reporting " + describe(lost.grant) + ": " + lost.why);
        hooks.lost(lost);
      }
      for (const PodGrant& grant : changes.granted) {
        messages_.say("reporting " + describe(grant));
        hooks.granted(grant);
      }
      if (changes.any_change) write_file(holds);
      reported_ = holds;
      lock.lock();
      clock_.wait_until(lock, changes_, next.value_or(MonoTime::max()), stop, [&] { return dirty_; });
    }
  }

  std::string describe(const PodGrant& grant) const {
    return describe_locks(grant.locks) + " (Lease " + grant.lease + ", fencing token " + grant.token + ")";
  }

  void write_file(const std::vector<PodGrant>& holds) {
    if (settings_.flags.file.empty()) return;
    const Status written = write_atomically(settings_.flags.file, holds_json(holds).dump() + "\n");
    const std::string error = written.ok() ? "" : written.error().message;
    if (error != file_error_ && !error.empty()) messages_.say(error);
    file_error_ = error;
  }

  void serve(const http::ServerRequest& request, http::ServerResponse& response) {
    static const std::string kHoldsPrefix = "/holds/";
    if (request.method != "GET" && request.method != "HEAD") {
      http::Headers headers = kText;
      headers.emplace_back("allow", "GET, HEAD");
      response.send(405, headers, "method not allowed\n");
      return;
    }
    if (request.path == "/healthz") {
      if (leases_ && leases_->has_synced()) {
        response.send(200, kText, "ok\n");
      } else {
        response.send(503, kText, "waiting for the first list of the namespace's Leases\n");
      }
      return;
    }
    const MonoTime now = clock_.monotonic();
    if (request.path == "/holds") {
      std::unique_lock lock(mutex_);
      const std::vector<PodGrant> holds = book_.holds(now);
      lock.unlock();
      response.send(200, kJson, holds_json(holds).dump() + "\n");
      return;
    }
    const std::optional<std::string> lock_name =
        request.path.starts_with(kHoldsPrefix) ? percent_decode(request.path.substr(kHoldsPrefix.size()))
                                               : std::nullopt;
    if (!lock_name || lock_name->empty() || lock_name->find('/') != std::string::npos) {
      response.send(404, kText, "not found: GET /holds, /holds/LOCK or /healthz\n");
      return;
    }
    std::unique_lock lock(mutex_);
    const std::optional<PodGrant> grant = book_.hold_on(*lock_name, now);
    lock.unlock();
    if (grant) {
      response.send(200, kJson, grant_json(*grant).dump() + "\n");
    } else {
      response.send(503, kJson, json{{"lock", *lock_name}, {"held", false}}.dump() + "\n");
    }
  }

  kube::Api& api_;
  Clock& clock_;
  const PodIdentity pod_;
  const SidecarSettings settings_;
  Messages& messages_;
  std::mutex mutex_;
  std::condition_variable_any changes_;
  bool dirty_ = true;
  HoldsBook book_;
  std::vector<PodGrant> reported_;  // the report loop's alone
  std::string file_error_;          // the report loop's alone
  std::atomic<int> exit_code_{0};
  std::unique_ptr<kube::TypedInformer<LeaseView>> leases_;
};

}  // namespace

int run_sidecar(kube::Api& api, Clock& clock, const PodIdentity& pod, const SidecarSettings& settings,
                Messages& messages, std::stop_token stop) {
  Sidecar sidecar(api, clock, pod, settings, messages);
  return sidecar.run(std::move(stop));
}

}  // namespace eslease::cli
