#include "cli/direct_status.h"

#include <algorithm>
#include <ostream>
#include <tuple>

#include "cli/status_report.h"
#include "common/text.h"
#include "lock/names.h"

namespace eslease::cli {
namespace {

using nlohmann::json;

// What the documents of one grant share: its id (a grant of several documents) or its
// grantee and the moment it was granted (a grant of one).
bool same_grant_as(const lock::LockDocument& doc, const lock::LockDocument& first) {
  return std::tie(doc.grant, doc.lease_uid, doc.acquired_at) ==
         std::tie(first.grant, first.lease_uid, first.acquired_at);
}

std::string name_of(const std::string& lock_id) {
  auto key = lock::parse_lock_id(lock_id);
  return key.ok() ? key->name() : lock_id;
}

std::vector<std::string> names_of(const std::vector<std::string>& lock_ids) {
  std::vector<std::string> names;
  names.reserve(lock_ids.size());
  for (const std::string& id : lock_ids) names.push_back(name_of(id));
  return names;
}

std::vector<std::int64_t> slots_of(const std::vector<lock::LockState>& grant) {
  std::vector<std::int64_t> slots;
  slots.reserve(grant.size());
  for (const lock::LockState& s : grant) slots.push_back(s.doc.slot);
  return slots;
}

std::int64_t token_of(const std::vector<lock::LockState>& grant) {
  std::int64_t token = 0;
  for (const lock::LockState& s : grant) token = std::max(token, s.token);
  return token;
}

// The lock ids a grant's documents name: its set, or its one lock.
std::vector<std::string> grant_locks(const lock::LockDocument& doc) {
  if (doc.grant_docs.empty()) return {doc.lock};
  std::vector<std::string> locks;
  for (const std::string& id : doc.grant_docs) {
    std::string lock = id.substr(0, id.find('#'));
    if (std::find(locks.begin(), locks.end(), lock) == locks.end()) locks.push_back(std::move(lock));
  }
  return locks;
}

// The SET column: a set's locks by name, "-" for a grant on one lock.
std::string set_of(const lock::LockDocument& doc) {
  const std::vector<std::string> locks = grant_locks(doc);
  return locks.size() > 1 ? join(names_of(locks), "+") : "-";
}

json holder_json(const std::vector<lock::LockState>& grant) {
  const lock::LockDocument& d = grant.front().doc;
  return json{{"holder", d.holder},
              {"fencingToken", std::to_string(token_of(grant))},
              {"acquiredAt", format_rfc3339_millis(d.acquired_at)},
              {"renewedAt", format_rfc3339_millis(d.renewed_at)},
              {"expiresAt", format_rfc3339_millis(d.expires_at)},
              {"ttlMillis", d.ttl_millis},
              {"writer", d.writer},
              {"transitions", d.transitions},
              {"lease", d.lease},
              {"access", lock::to_string(d.access)},
              {"slots", slots_of(grant)},
              {"locks", names_of(grant_locks(d))}};
}

}  // namespace

std::vector<std::vector<lock::LockState>> by_grant(const std::vector<lock::LockState>& docs) {
  std::vector<std::vector<lock::LockState>> grants;
  for (const lock::LockState& s : docs) {
    auto it = std::find_if(grants.begin(), grants.end(),
                           [&](const auto& grant) { return same_grant_as(s.doc, grant.front().doc); });
    if (it == grants.end()) {
      grants.push_back({s});
    } else {
      it->push_back(s);
    }
  }
  return grants;
}

std::vector<LockHolders> lock_holders(const std::vector<lock::LockState>& docs) {
  std::vector<LockHolders> locks;
  for (auto first = docs.begin(); first != docs.end();) {
    const auto last =
        std::find_if(first, docs.end(), [&](const auto& s) { return s.doc.lock != first->doc.lock; });
    LockHolders lock{first->doc.lock, 1, by_grant({first, last})};
    for (auto s = first; s != last; ++s) lock.capacity = std::max(lock.capacity, s->doc.capacity);
    locks.push_back(std::move(lock));
    first = last;
  }
  return locks;
}

void print_lock_holders(std::ostream& out, const std::vector<LockHolders>& locks) {
  std::vector<std::vector<std::string>> rows{
      {"LOCK", "HOLDER", "ACCESS", "SLOTS", "TOKEN", "EXPIRES", "TRANSITIONS", "SET"}};
  for (const LockHolders& l : locks) {
    std::int64_t taken = 0;
    for (const auto& grant : l.holders) taken += static_cast<std::int64_t>(grant.size());
    const std::string lock = lock_cell(l.lock, taken, l.capacity);
    for (const auto& grant : l.holders) {
      const lock::LockDocument& d = grant.front().doc;
      std::vector<std::string> slots;
      for (std::int64_t slot : slots_of(grant)) slots.push_back(std::to_string(slot));
      rows.push_back({lock, d.holder, lock::to_string(d.access), join(slots, ","),
                      std::to_string(token_of(grant)), format_rfc3339_millis(d.expires_at),
                      std::to_string(d.transitions), set_of(d)});
    }
  }
  out << format_columns(rows);
}

json lock_holders_json(const std::vector<LockHolders>& locks) {
  json out = json::array();
  for (const LockHolders& l : locks) {
    json holders = json::array();
    for (const auto& grant : l.holders) holders.push_back(holder_json(grant));
    auto key = lock::parse_lock_id(l.lock);
    out.push_back(json{{"namespace", key.ok() ? key->ns() : ""},
                       {"lock", name_of(l.lock)},
                       {"capacity", l.capacity},
                       {"holders", std::move(holders)}});
  }
  return json{{"locks", std::move(out)}};
}

}  // namespace eslease::cli
