#include "cli/direct_mode.h"

#include <algorithm>
#include <map>
#include <ostream>

#include "cli/direct_status.h"
#include "cli/lease_view.h"
#include "cli/store_hold.h"
#include "cli/supervisor.h"
#include "common/duration.h"
#include "common/text.h"
#include "lock/acquirer.h"

namespace eslease::cli {
namespace {

using Documents = std::vector<std::vector<lock::LockState>>;  // each lock's documents

// Messages name what failed in words; the error's code is for the program, not for people.
int fail(Environment& env, const Error& error, int exit_code = kExitFailed) {
  env.err << "eslease: " << error.message << "\n";
  return exit_code;
}

std::vector<std::string> ids_of(const std::vector<lock::LockKey>& keys) {
  std::vector<std::string> ids;
  ids.reserve(keys.size());
  for (const lock::LockKey& key : keys) ids.push_back(key.id());
  return ids;
}

// "token T, ttl D", and on a lock of capacity N the access (and a Shared holder's slot).
std::string describe(const lock::HeldGrant& grant, const Options& options) {
  std::string out = "token " + std::to_string(grant.token) + ", ttl " + format_duration(options.ttl);
  if (options.capacity == 1) return out;
  const lock::LockDocument& first = grant.docs.front().state.doc;
  out += ", capacity " + std::to_string(options.capacity) + ", " + lock::to_string(first.access);
  if (first.access == lock::Access::kShared && grant.docs.size() == 1)
    out += ", slot " + std::to_string(first.slot);
  return out;
}

// Without --wait, as long as it takes, as in Kubernetes mode.
Result<lock::HeldGrant> acquire(const Options& options, const std::vector<lock::LockKey>& keys,
                                lock::LockStore& store, Environment& env, const std::string& holder) {
  lock::WaitOptions wait;
  wait.wait = options.wait_given ? options.wait : lock::kWaitForever;
  wait.on_wait = [&env](const lock::LockState& current) {
    env.err << "eslease: waiting for lock " << current.doc.lock << ", held by " << current.doc.holder
            << " (token " << current.token << ")\n";
    env.err.flush();
  };
  const lock::ClaimShape shape{options.capacity, api::effective_access(options.capacity, options.access)};
  return lock::acquire(store, env.clock, lock::Claim{keys, shape, lock::direct_grantee(holder, options.ttl)},
                       wait);
}

int command_acquire(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                    Environment& env, const std::string& holder) {
  auto grant = acquire(options, keys, store, env, holder);
  if (!grant.ok()) return fail(env, grant.error(), acquire_exit_code(grant.error()));
  env.out << grant->token << "\n";
  env.err << "eslease: acquired " << join(ids_of(keys), ", ") << " as " << holder << " ("
          << describe(*grant, options) << ")\n";
  return kExitOk;
}

int command_run(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                Environment& env, const std::string& holder) {
  auto grant = acquire(options, keys, store, env, holder);
  if (!grant.ok()) return fail(env, grant.error(), acquire_exit_code(grant.error()));
  const MonoTime granted_at = env.clock.monotonic();
  SuperviseOptions supervise_options;
  supervise_options.command = options.child;
  supervise_options.environment = {{"ESLEASE_FENCING_TOKEN", std::to_string(grant->token)},
                                   {"ESLEASE_LOCK", join(ids_of(keys), ",")}};
  supervise_options.grace = options.grace.value_or(std::min(Millis(10000), options.ttl / 3));
  supervise_options.lock_id = join(ids_of(keys), ", ");
  supervise_options.hold_at_least = options.hold_at_least;
  supervise_options.granted_at = granted_at;
  auto hold = make_store_hold(store, env.clock, std::move(*grant), options.ttl, env.err);
  return supervise(*hold, env.clock, supervise_options, env.err);
}

// The slots of each range, realtime: the documents there. A malformed one is an error.
Result<Documents> read_ranges(lock::LockStore& store, const std::vector<lock::SlotRange>& ranges) {
  auto read = store.read_slots(ranges);
  if (!read.ok()) return read.error();
  Documents out;
  for (auto& slots : *read) {
    out.emplace_back();
    for (auto& slot : slots) {
      if (!slot.ok()) return slot.error();
      if (*slot) out.back().push_back(std::move(**slot));
    }
  }
  return out;
}

// Slots [0, capacity) of each lock.
Result<Documents> read_slots(lock::LockStore& store, const std::vector<lock::LockKey>& keys,
                             std::int64_t capacity) {
  std::vector<lock::SlotRange> ranges;
  ranges.reserve(keys.size());
  for (const lock::LockKey& key : keys) ranges.push_back(lock::SlotRange{key, capacity});
  return read_ranges(store, ranges);
}

// Each lock's documents as they are now. The slots read are --capacity, else the largest
// capacity a slot-0 document states, else the largest any of the locks' documents states in
// search (about a second behind: a semaphore whose first slot is free).
Result<Documents> read_locks(const Options& options, const std::vector<lock::LockKey>& keys,
                             lock::LockStore& store) {
  if (options.capacity_given) return read_slots(store, keys, options.capacity);
  auto first = read_slots(store, keys, 1);
  if (!first.ok()) return first.error();
  std::int64_t capacity = 0;
  for (const auto& docs : *first)
    for (const lock::LockState& s : docs) capacity = std::max(capacity, s.doc.capacity);
  if (capacity == 0) {
    auto all = store.list();
    if (!all.ok()) return all.error();
    const std::vector<std::string> ids = ids_of(keys);
    for (const lock::LockState& s : *all)
      if (std::find(ids.begin(), ids.end(), s.doc.lock) != ids.end())
        capacity = std::max(capacity, s.doc.capacity);
  }
  if (capacity <= 1) return first;
  return read_slots(store, keys, capacity);
}

// "ns/lock#3" -> (ns/lock, 3).
std::optional<std::pair<lock::LockKey, std::int64_t>> slot_of(const std::string& id) {
  const auto hash = id.rfind('#');
  auto key = lock::parse_lock_id(id.substr(0, hash));
  if (!key.ok()) return std::nullopt;
  if (hash == std::string::npos) return std::pair(*key, std::int64_t(0));
  const std::string digits = id.substr(hash + 1);
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::pair(*key, std::stoll(digits));
}

// Every document read, and those of the grants' sets on locks that were not read (not
// named), read in one request.
Result<std::map<std::string, lock::LockState>> with_sets(const Documents& grants, const Documents& read,
                                                         lock::LockStore& store) {
  std::map<std::string, lock::LockState> out;
  for (const auto& docs : read)
    for (const lock::LockState& s : docs) out.emplace(lock::document_id(s.doc), s);
  std::map<std::string, lock::SlotRange> missing;  // by lock id: the slots up to the last one missing
  for (const auto& grant : grants) {
    for (const std::string& id : grant.front().doc.grant_docs) {
      const auto slot = slot_of(id);
      if (out.count(id) || !slot) continue;
      auto& range = missing.try_emplace(slot->first.id(), lock::SlotRange{slot->first, 0}).first->second;
      range.slots = std::max(range.slots, slot->second + 1);
    }
  }
  if (missing.empty()) return out;
  std::vector<lock::SlotRange> ranges;
  ranges.reserve(missing.size());
  for (const auto& [id, range] : missing) ranges.push_back(range);
  auto more = read_ranges(store, ranges);
  if (!more.ok()) return more.error();
  for (const auto& docs : *more)
    for (const lock::LockState& s : docs) out.emplace(lock::document_id(s.doc), s);
  return out;
}

// `holder`'s grants among the documents read, each with every document of its set (also on
// locks not named). Their deadlines are unknown here: now.
Result<std::vector<lock::HeldGrant>> grants_of(const Documents& read, const std::string& holder,
                                               lock::LockStore& store, Clock& clock) {
  std::vector<lock::LockState> mine;
  for (const auto& docs : read)
    for (const lock::LockState& s : docs)
      if (s.doc.holder == holder) mine.push_back(s);
  const Documents grants = by_grant(mine);
  auto known = with_sets(grants, read, store);
  if (!known.ok()) return known.error();
  std::vector<lock::HeldGrant> out;
  for (const auto& grant : grants) {
    std::vector<lock::LockState> docs = grant;
    for (const std::string& id : grant.front().doc.grant_docs) {
      const auto found = known->find(id);
      const bool read_already = std::any_of(
          docs.begin(), docs.end(), [&](const lock::LockState& s) { return lock::document_id(s.doc) == id; });
      if (found != known->end() && !read_already && found->second.doc.grant == grant.front().doc.grant)
        docs.push_back(found->second);
    }
    std::vector<lock::HeldDocument> held;
    for (lock::LockState& s : docs) {
      auto key = lock::parse_lock_id(s.doc.lock);
      if (!key.ok()) return key.error();
      held.push_back(lock::HeldDocument{std::move(*key), std::move(s), clock.monotonic()});
    }
    out.push_back(lock::grant_of(std::move(held)));
  }
  return out;
}

// --holder's grants on the locks, or why there is none: kNotFound when nobody holds them,
// kLost naming who does.
Result<std::vector<lock::HeldGrant>> holder_grants(const Options& options,
                                                   const std::vector<lock::LockKey>& keys,
                                                   lock::LockStore& store, Clock& clock) {
  auto read = read_locks(options, keys, store);
  if (!read.ok()) return read.error();
  auto grants = grants_of(*read, options.holder, store, clock);
  if (!grants.ok() || !grants->empty()) return grants;
  std::vector<std::string> holders;
  for (const auto& docs : *read)
    for (const lock::LockState& s : docs)
      if (std::find(holders.begin(), holders.end(), s.doc.holder) == holders.end())
        holders.push_back(s.doc.holder);
  const std::string locks = describe_locks(ids_of(keys));
  if (holders.empty()) return make_error(ErrorCode::kNotFound, locks + " is not held");
  return make_error(ErrorCode::kLost,
                    locks + " is held by " + join(holders, ", ") + ", not " + options.holder);
}

int command_renew(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                  Environment& env) {
  auto grants = holder_grants(options, keys, store, env.clock);
  if (!grants.ok()) return fail(env, grants.error());
  for (const lock::HeldGrant& grant : *grants) {
    lock::GrantRenewal renewed = lock::renew_grant(store, grant, options.ttl_given ? options.ttl : Millis(0));
    if (renewed.result == lock::RenewalResult::kLost)
      return fail(env, make_error(ErrorCode::kLost, "lost while renewing: " + renewed.why));
    if (renewed.result == lock::RenewalResult::kFailed) return fail(env, *renewed.error);
    env.out << renewed.grant->token << "\n";
  }
  return kExitOk;
}

int command_release(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                    Environment& env) {
  auto grants = holder_grants(options, keys, store, env.clock);
  if (!grants.ok() && grants.error().code == ErrorCode::kNotFound) {
    env.err << "eslease: " << grants.error().message << "; nothing to release\n";
    return kExitOk;
  }
  if (!grants.ok()) return fail(env, grants.error());
  for (const lock::HeldGrant& grant : *grants) {
    auto released = store.release(grant, lock::ReleaseScope::kGrant);
    if (!released.ok()) return fail(env, released.error());
    if (*released == lock::ReleaseOutcome::kNotHeld)
      return fail(env, make_error(ErrorCode::kLost,
                                  describe_locks(lock_ids_of(grant)) +
                                      " changed hands; the new holder's documents were left alone"));
    env.err << "eslease: released " << join(lock_ids_of(grant), ", ") << "\n";
  }
  return kExitOk;
}

int command_status(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                   Environment& env) {
  std::vector<lock::LockState> docs;
  if (keys.empty()) {
    auto all = store.list();
    if (!all.ok()) return fail(env, all.error());
    docs = std::move(*all);
  } else {
    auto read = read_locks(options, keys, store);
    if (!read.ok()) return fail(env, read.error());
    docs = std::move(read->front());
  }
  std::vector<LockHolders> locks = lock_holders(docs);
  if (!keys.empty() && locks.empty()) {
    if (options.output == OutputFormat::kTable) {
      env.out << "lock " << keys.front().id() << " is free\n";
      return kExitOk;
    }
    locks.push_back(LockHolders{keys.front().id(), options.capacity, {}});
  }
  if (options.output == OutputFormat::kJson) {
    env.out << lock_holders_json(locks).dump() << "\n";
  } else {
    print_lock_holders(env.out, locks);
  }
  return kExitOk;
}

int run_command(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                Environment& env, const std::string& holder) {
  switch (options.command) {
    case Command::kAcquire:
      return command_acquire(options, keys, store, env, holder);
    case Command::kRun:
      return command_run(options, keys, store, env, holder);
    case Command::kRenew:
      return command_renew(options, keys, store, env);
    case Command::kRelease:
      return command_release(options, keys, store, env);
    case Command::kStatus:
      return command_status(options, keys, store, env);
    case Command::kHelp:
    case Command::kVersion:
    case Command::kSidecar:  // Kubernetes mode only (parse_options refuses it with --es)
      break;
  }
  return kExitOk;
}

}  // namespace

int run_direct_mode(const Options& options, Environment& env) {
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
  return run_command(options, keys, **store, env, holder);
}

int acquire_exit_code(const Error& error) {
  return error.code == ErrorCode::kBusy || error.code == ErrorCode::kConflict ||
                 error.code == ErrorCode::kGrantsPaused
             ? kExitWaitTimedOut
             : kExitFailed;
}

}  // namespace eslease::cli
