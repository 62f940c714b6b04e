#include "cli/cli.h"

#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/direct_shapes.h"
#include "cli/flags.h"
#include "cli/store_hold.h"
#include "cli/supervisor.h"
#include "common/duration.h"
#include "common/text.h"
#include "lock/acquirer.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

// Messages name what failed in words; the error's code is for the program, not for people.
int fail(Environment& env, const Error& error, int exit_code = kExitFailed) {
  env.err << "eslease: " << error.message << "\n";
  return exit_code;
}

// Acquiring in direct mode, with the same default as Kubernetes mode: without --wait it
// waits as long as it takes. A lock still held when the wait runs out exits 3, as in
// Kubernetes mode; a backend that cannot be reached stays a failure (1).
Result<lock::Grant> acquire_direct(const Options& options, const lock::LockKey& key, lock::LockStore& store,
                                   Environment& env, const std::string& holder) {
  lock::WaitOptions wait;
  wait.wait = options.wait_given ? options.wait : lock::kWaitForever;
  wait.on_wait = [&](const lock::LockState& current) {
    env.err << "eslease: waiting for lock " << key.id() << ", held by " << current.doc.holder << " (token "
            << current.token << ")\n";
    env.err.flush();
  };
  return lock::acquire_waiting(store, env.clock, key, lock::direct_grantee(holder, options.ttl), wait);
}

json state_json(const lock::LockState& state) {
  json out = holder_fields_json(state);
  out["lock"] = state.doc.lock;
  out["held"] = true;
  out["transitions"] = state.doc.transitions;
  out["lease"] = state.doc.lease;
  return out;
}

void print_table(std::ostream& out, const std::vector<lock::LockState>& states) {
  std::vector<std::vector<std::string>> rows{{"LOCK", "HOLDER", "TOKEN", "EXPIRES", "TRANSITIONS"}};
  for (const lock::LockState& s : states) {
    rows.push_back({s.doc.lock, s.doc.holder, std::to_string(s.token),
                    format_rfc3339_millis(s.doc.expires_at), std::to_string(s.doc.transitions)});
  }
  out << format_columns(rows);
}

// Reads the lock and checks that `holder` has it: the grant renew and release act on.
Result<lock::Grant> held_by(lock::LockStore& store, Clock& clock, const lock::LockKey& key,
                            const std::string& holder) {
  auto current = store.get(key);
  if (!current.ok()) return current.error();
  if (!*current) return make_error(ErrorCode::kNotFound, "lock " + key.id() + " is not held");
  if ((*current)->doc.holder != holder) {
    return make_error(ErrorCode::kLost,
                      "lock " + key.id() + " is held by " + (*current)->doc.holder + ", not " + holder);
  }
  // The deadline of a grant we did not write ourselves is unknown: treat it as now.
  return lock::Grant{std::move(**current), clock.monotonic()};
}

int command_acquire(const Options& options, const lock::LockKey& key, lock::LockStore& store,
                    Environment& env, const std::string& holder) {
  auto grant = acquire_direct(options, key, store, env, holder);
  if (!grant.ok()) return fail(env, grant.error(), acquire_exit_code(grant.error()));
  env.out << grant->state.token << "\n";
  env.err << "eslease: acquired " << key.id() << " as " << holder << " (token " << grant->state.token
          << ", ttl " << format_duration(options.ttl) << ")\n";
  return kExitOk;
}

int command_renew(const Options& options, const lock::LockKey& key, lock::LockStore& store,
                  Environment& env) {
  auto held = held_by(store, env.clock, key, options.holder);
  if (!held.ok()) return fail(env, held.error());
  auto renewed = store.renew(key, *held, options.ttl_given ? options.ttl : Millis(0));
  if (!renewed.ok()) return fail(env, renewed.error());
  if (!renewed->grant || !renewed->renewed) {
    return fail(env, make_error(renewed->grant ? ErrorCode::kConflict : ErrorCode::kLost,
                                "lock " + key.id() + " changed while renewing; not renewed"));
  }
  env.out << renewed->grant->state.token << "\n";
  return kExitOk;
}

int command_release(const Options& options, const lock::LockKey& key, lock::LockStore& store,
                    Environment& env) {
  auto held = held_by(store, env.clock, key, options.holder);
  if (!held.ok()) {
    if (held.error().code == ErrorCode::kNotFound) {
      env.err << "eslease: lock " << key.id() << " is not held; nothing to release\n";
      return kExitOk;
    }
    return fail(env, held.error());
  }
  auto released = store.release(key, *held, lock::ReleaseScope::kGrant);
  if (!released.ok()) return fail(env, released.error());
  if (*released == lock::ReleaseOutcome::kNotHeld) {
    return fail(env,
                make_error(ErrorCode::kLost, "lock " + key.id() + " changed hands; nothing was released"));
  }
  env.err << "eslease: released " << key.id() << "\n";
  return kExitOk;
}

int command_status(const Options& options, lock::LockStore& store, Environment& env) {
  std::vector<lock::LockState> states;
  if (!options.lock.empty()) {
    auto key = lock::make_lock_key(options.ns, options.lock);
    if (!key.ok()) return fail(env, key.error());
    if (auto shaped = shaped_status(options, *key, store, env)) return *shaped;
    auto current = store.get(*key);
    if (!current.ok()) return fail(env, current.error());
    if (!*current) {
      if (options.output == OutputFormat::kJson) {
        env.out << json{{"lock", key->id()}, {"held", false}}.dump() << "\n";
      } else {
        env.out << "lock " << key->id() << " is free\n";
      }
      return kExitOk;
    }
    states.push_back(std::move(**current));
  } else {
    auto all = store.list();
    if (!all.ok()) return fail(env, all.error());
    states = std::move(*all);
  }
  if (options.output == OutputFormat::kJson) {
    if (!options.lock.empty()) {
      env.out << state_json(states[0]).dump() << "\n";
    } else {
      json locks = json::array();
      for (const auto& s : states) locks.push_back(state_json(s));
      env.out << json{{"locks", locks}}.dump() << "\n";
    }
  } else {
    print_table(env.out, states);
  }
  return kExitOk;
}

int command_run(const Options& options, const lock::LockKey& key, lock::LockStore& store, Environment& env,
                const std::string& holder) {
  auto grant = acquire_direct(options, key, store, env, holder);
  if (!grant.ok()) return fail(env, grant.error(), acquire_exit_code(grant.error()));
  const MonoTime granted_at = env.clock.monotonic();
  SuperviseOptions supervise_options;
  supervise_options.command = options.child;
  supervise_options.environment = {{"ESLEASE_FENCING_TOKEN", std::to_string(grant->state.token)},
                                   {"ESLEASE_LOCK", key.id()}};
  supervise_options.grace = options.grace.value_or(std::min(Millis(10000), options.ttl / 3));
  supervise_options.lock_id = key.id();
  supervise_options.hold_at_least = options.hold_at_least;
  supervise_options.granted_at = granted_at;
  auto hold = make_store_hold(store, env.clock, key, std::move(*grant), options.ttl, env.err);
  return supervise(*hold, env.clock, supervise_options, env.err);
}

// The command on the store: a lock set, a shape or a shaped grant goes to direct_shapes.
int run_direct_command(const Options& options, const std::optional<lock::LockKey>& key,
                       const std::vector<lock::LockKey>& keys, lock::LockStore& store, Environment& env,
                       const std::string& holder) {
  if (has_lock_shape(options) || holds_shaped_grant(options, keys, store)) {
    switch (options.command) {
      case Command::kAcquire:
        return shaped_acquire(options, keys, store, env, holder);
      case Command::kRun:
        return shaped_run(options, keys, store, env, holder);
      case Command::kRenew:
        return shaped_renew(options, keys, store, env);
      case Command::kRelease:
        return shaped_release(options, keys, store, env);
      default:
        break;
    }
  }
  switch (options.command) {
    case Command::kAcquire:
      return command_acquire(options, *key, store, env, holder);
    case Command::kRenew:
      return command_renew(options, *key, store, env);
    case Command::kRelease:
      return command_release(options, *key, store, env);
    case Command::kStatus:
      return command_status(options, store, env);
    case Command::kRun:
      return command_run(options, *key, store, env, holder);
    case Command::kHelp:
    case Command::kVersion:
    case Command::kSidecar:  // Kubernetes mode only (parse_options refuses it with --es)
      break;
  }
  return kExitOk;
}

// Direct mode: names are checked before anything is contacted.
int run_direct_mode(const Options& options, Environment& env) {
  std::optional<lock::LockKey> key;
  if (!options.lock.empty()) {
    auto made = lock::make_lock_key(options.ns, options.lock);
    if (!made.ok()) return fail(env, made.error(), kExitUsage);
    key = *made;
  }
  std::vector<lock::LockKey> keys;
  for (const std::string& name : options.locks) {
    auto made = lock::make_lock_key(options.ns, name);
    if (!made.ok()) return fail(env, made.error(), kExitUsage);
    keys.push_back(*made);
  }
  const std::string holder =
      options.holder.empty() ? env.hostname + "/" + std::to_string(env.pid) : options.holder;
  if (auto s = lock::validate_identity("holder", holder, false); !s.ok())
    return fail(env, s.error(), kExitUsage);
  auto store = env.open_store(options.connection);
  if (!store.ok())
    return fail(env, store.error(),
                store.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailed);
  if (options.command == Command::kAcquire || options.command == Command::kRun) {
    if (auto s = (*store)->prepare(); !s.ok()) return fail(env, s.error());
  }
  return run_direct_command(options, key, keys, **store, env, holder);
}

}  // namespace

StoreFactory elasticsearch_store_factory(Clock& clock) {
  return [&clock](const lock::ConnectionSettings& connection) {
    return lock::open_lock_store(connection, clock);
  };
}

int run_cli(const std::vector<std::string>& args, Environment& env) {
  auto parsed = parse_options(args);
  if (!parsed.ok()) {
    env.err << "eslease: " << parsed.error().message << "\nRun 'eslease --help' for usage.\n";
    return kExitUsage;
  }
  const Options& options = *parsed;
  if (options.command == Command::kHelp) {
    env.out << usage();
    return kExitOk;
  }
  if (options.command == Command::kVersion) {
    env.out << "eslease " << ESLEASE_VERSION << "\n";
    return kExitOk;
  }
  if (options.mode == Mode::kKubernetes) {
    KubeEnvironment kube_env{env.out,    env.err,       env.clock,        env.connect_kube,
                             env.getenv, env.read_file, env.catch_signals};
    return run_kubernetes_mode(options, kube_env);
  }
  return run_direct_mode(options, env);
}

}  // namespace eslease::cli
