#include "cli/direct_shapes.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/grant_hold.h"
#include "cli/supervisor.h"
#include "common/duration.h"
#include "common/text.h"
#include "lock/shape_acquirer.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

int fail(Environment& env, const Error& error, int exit_code = kExitFailed) {
  env.err << "eslease: " << error.describe() << "\n";
  return exit_code;
}

lock::ClaimShape shape_of(const Options& options) {
  return lock::ClaimShape{options.capacity,
                          options.shared ? lock::Access::kShared : lock::Access::kExclusive};
}

// "default/a,default/b": ESLEASE_LOCK for a set.
std::string joined(const std::vector<lock::LockKey>& keys, const char* separator) {
  std::vector<std::string> ids;
  ids.reserve(keys.size());
  for (const lock::LockKey& key : keys) ids.push_back(key.id());
  return join(ids, separator);
}

std::string describe(const lock::HeldGrant& grant, const Options& options) {
  std::string out = "token " + std::to_string(grant.token) + ", ttl " + format_duration(options.ttl);
  if (options.capacity > 1 || options.shared) {
    out +=
        ", capacity " + std::to_string(options.capacity) + ", " + (options.shared ? "Shared" : "Exclusive");
    if (options.shared && grant.docs.size() == 1)
      out += ", slot " + std::to_string(grant.docs.front().grant.state.doc.slot);
  }
  return out;
}

Result<lock::HeldGrant> acquire(const Options& options, const std::vector<lock::LockKey>& keys,
                                lock::LockStore& store, Environment& env, const std::string& holder) {
  lock::ShapedClaim claim{keys, shape_of(options), lock::direct_grantee(holder, options.ttl)};
  // The same default as one lock and as Kubernetes mode: without --wait, as long as it takes.
  lock::WaitOptions wait;
  wait.wait = options.wait_given ? options.wait : lock::kWaitForever;
  return lock::acquire_shaped(store, env.clock, claim, wait);
}

// The capacity to read the locks with: --capacity, else the largest a slot-0 document states,
// else the largest any of the locks' documents states in search (about a second behind).
Result<std::int64_t> capacity_of(const Options& options, const std::vector<lock::LockKey>& keys,
                                 lock::LockStore& store) {
  if (options.capacity_given) return options.capacity;
  auto first = store.read_slots(keys, 1);
  if (!first.ok()) return first.error();
  std::int64_t capacity = 0;
  for (const auto& slots : *first)
    if (slots.front()) capacity = std::max(capacity, slots.front()->doc.capacity);
  if (capacity > 0) return capacity;
  auto all = store.list();
  if (!all.ok()) return all.error();
  for (const lock::LockState& s : *all)
    for (const lock::LockKey& key : keys)
      if (s.doc.lock == key.id()) capacity = std::max(capacity, s.doc.capacity);
  return std::max<std::int64_t>(capacity, 1);
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

// Every grant `holder` has on the locks, each with all of its documents (also those on locks of
// its set not named). Their deadlines are unknown here: now.
Result<std::vector<lock::HeldGrant>> grants_of(const Options& options, const std::vector<lock::LockKey>& keys,
                                               lock::LockStore& store, Clock& clock) {
  auto capacity = capacity_of(options, keys, store);
  if (!capacity.ok()) return capacity.error();
  auto read = store.read_slots(keys, *capacity);
  if (!read.ok()) return read.error();
  std::map<std::string, lock::HeldGrant> by_grant;
  std::map<std::string, lock::LockKey> keys_by_id;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    keys_by_id.emplace(keys[i].id(), keys[i]);
    for (auto& slot : (*read)[i]) {
      if (!slot || slot->doc.holder != options.holder) continue;
      const lock::LockDocument& d = slot->doc;
      const std::string group =
          d.grant.empty() ? d.lease_uid + "@" + format_rfc3339_millis(d.acquired_at) : d.grant;
      lock::HeldGrant& g = by_grant[group];
      g.id = d.grant;
      g.docs.push_back(
          lock::HeldLock{keys[i], lock::Grant{*slot, clock.monotonic()}, Millis(0), std::nullopt});
    }
  }
  std::vector<lock::HeldGrant> out;
  for (auto& [group, g] : by_grant) {
    const lock::LockDocument first = g.docs.front().grant.state.doc;
    for (const std::string& id : first.grant_docs) {
      const auto found = std::find_if(g.docs.begin(), g.docs.end(), [&](const lock::HeldLock& h) {
        return lock::document_id(h.grant.state.doc) == id;
      });
      const auto slot = slot_of(id);
      if (found != g.docs.end() || !slot) continue;
      auto other = store.read_slots({slot->first}, first.capacity);  // a lock of the set not named
      if (!other.ok()) return other.error();
      const auto& state = (*other)[0][std::size_t(slot->second)];
      if (state && state->doc.grant == first.grant)
        g.docs.push_back(
            lock::HeldLock{slot->first, lock::Grant{*state, clock.monotonic()}, Millis(0), std::nullopt});
    }
    for (const lock::HeldLock& h : g.docs) g.token = std::max(g.token, h.grant.state.token);
    for (lock::HeldLock& h : g.docs) h.grant.state.token = g.token;
    g.valid_until = clock.monotonic();
    out.push_back(std::move(g));
  }
  return out;
}

json holder_json(const lock::LockState& s) {
  json out = holder_fields_json(s);
  out["slot"] = s.doc.slot;
  out["access"] = lock::to_string(s.doc.access);
  if (!s.doc.grant.empty()) {
    out["grant"] = s.doc.grant;
    out["grantDocs"] = s.doc.grant_docs;
  }
  return out;
}

}  // namespace

int shaped_acquire(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                   Environment& env, const std::string& holder) {
  auto grant = acquire(options, keys, store, env, holder);
  if (!grant.ok()) return fail(env, grant.error(), acquire_exit_code(grant.error()));
  env.out << grant->token << "\n";
  env.err << "eslease: acquired " << joined(keys, ", ") << " as " << holder << " ("
          << describe(*grant, options) << ")\n";
  return kExitOk;
}

int shaped_run(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
               Environment& env, const std::string& holder) {
  auto grant = acquire(options, keys, store, env, holder);
  if (!grant.ok()) return fail(env, grant.error(), acquire_exit_code(grant.error()));
  SuperviseOptions supervise_options;
  supervise_options.command = options.child;
  supervise_options.environment = {{"ESLEASE_FENCING_TOKEN", std::to_string(grant->token)},
                                   {"ESLEASE_LOCK", joined(keys, ",")}};
  supervise_options.grace = options.grace.value_or(std::min(Millis(10000), options.ttl / 3));
  supervise_options.lock_id = joined(keys, ", ");
  supervise_options.hold_at_least = options.hold_at_least;
  auto hold = make_grant_hold(store, env.clock, std::move(*grant), options.ttl, env.err);
  return supervise(*hold, env.clock, supervise_options, env.err);
}

int shaped_renew(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                 Environment& env) {
  auto grants = grants_of(options, keys, store, env.clock);
  if (!grants.ok()) return fail(env, grants.error());
  if (grants->empty())
    return fail(env, make_error(ErrorCode::kNotFound, joined(keys, ", ") + " not held by " + options.holder));
  for (const lock::HeldGrant& g : *grants) {
    lock::GrantRenewal renewed = lock::renew_grant(store, g, options.ttl_given ? options.ttl : Millis(0));
    if (renewed.result == lock::GrantRenewal::Result::kLost)
      return fail(env, make_error(ErrorCode::kLost, "grant lost while renewing: " + renewed.why));
    if (renewed.result == lock::GrantRenewal::Result::kFailed) return fail(env, *renewed.error);
    env.out << g.token << "\n";
  }
  return kExitOk;
}

int shaped_release(const Options& options, const std::vector<lock::LockKey>& keys, lock::LockStore& store,
                   Environment& env) {
  auto grants = grants_of(options, keys, store, env.clock);
  if (!grants.ok()) return fail(env, grants.error());
  if (grants->empty()) {
    env.err << "eslease: " << joined(keys, ", ") << " not held by " << options.holder
            << "; nothing to release\n";
    return kExitOk;
  }
  for (const lock::HeldGrant& g : *grants) {
    auto released = store.release_grant(g);
    if (!released.ok()) return fail(env, released.error());
    std::vector<lock::LockKey> held;
    for (const lock::HeldLock& h : g.docs)
      if (std::find(held.begin(), held.end(), h.key) == held.end()) held.push_back(h.key);
    env.err << "eslease: released " << joined(held, ", ") << "\n";
  }
  return kExitOk;
}

bool holds_shaped_grant(const Options& options, const std::vector<lock::LockKey>& keys,
                        lock::LockStore& store) {
  if ((options.command != Command::kRenew && options.command != Command::kRelease) || keys.size() != 1)
    return false;
  auto current = store.get(keys.front());
  if (!current.ok() || !*current) return false;
  const lock::LockDocument& doc = (*current)->doc;
  return doc.capacity > 1 || doc.access == lock::Access::kShared || !doc.grant.empty();
}

std::optional<int> shaped_status(const Options& options, const lock::LockKey& key, lock::LockStore& store,
                                 Environment& env) {
  auto capacity = capacity_of(options, {key}, store);
  if (!capacity.ok()) return fail(env, capacity.error());
  auto read = store.read_slots({key}, *capacity);
  if (!read.ok()) return fail(env, read.error());
  std::vector<lock::LockState> holders;
  for (auto& slot : (*read)[0])
    if (slot) holders.push_back(std::move(*slot));
  const bool plain =
      *capacity == 1 && (holders.empty() ||
                         (holders[0].doc.access == lock::Access::kExclusive && holders[0].doc.grant.empty()));
  if (plain) return std::nullopt;
  if (options.output == OutputFormat::kJson) {
    json list = json::array();
    for (const auto& s : holders) list.push_back(holder_json(s));
    env.out
        << json{{"lock", key.id()}, {"capacity", *capacity}, {"held", list.size()}, {"holders", list}}.dump()
        << "\n";
    return kExitOk;
  }
  env.out << "lock " << key.id() << ": " << holders.size() << " of " << *capacity << " slots held\n";
  if (holders.empty()) return kExitOk;
  std::vector<std::vector<std::string>> rows{{"SLOT", "HOLDER", "ACCESS", "TOKEN", "EXPIRES", "SET"}};
  for (const lock::LockState& s : holders) {
    rows.push_back({std::to_string(s.doc.slot), s.doc.holder, lock::to_string(s.doc.access),
                    std::to_string(s.token), format_rfc3339_millis(s.doc.expires_at),
                    s.doc.grant.empty() ? "-" : std::to_string(s.doc.grant_docs.size()) + " documents"});
  }
  env.out << format_columns(rows);
  return kExitOk;
}

int acquire_exit_code(const Error& error) {
  return error.code == ErrorCode::kBusy || error.code == ErrorCode::kConflict ||
                 error.code == ErrorCode::kGrantsPaused
             ? kExitWaitTimedOut
             : kExitFailed;
}

json holder_fields_json(const lock::LockState& state) {
  return json{{"holder", state.doc.holder},
              {"fencingToken", std::to_string(state.token)},
              {"acquiredAt", format_rfc3339_millis(state.doc.acquired_at)},
              {"renewedAt", format_rfc3339_millis(state.doc.renewed_at)},
              {"expiresAt", format_rfc3339_millis(state.doc.expires_at)},
              {"ttlMillis", state.doc.ttl_millis},
              {"writer", state.doc.writer}};
}

}  // namespace eslease::cli
