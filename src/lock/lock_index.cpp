#include "lock/lock_index.h"

#include <utility>

#include "common/log.h"
#include "lock/document.h"

namespace eslease::lock {
namespace {

using nlohmann::json;

constexpr const char* kMetaKey = "eslease";
// A check whose index keeps changing under it (created or re-recorded by another process
// between our read and our write) gives up after this many rounds; the next grant tries again.
constexpr int kMaxRounds = 3;

json meta_of(const json& mappings) {
  if (mappings.is_object() && mappings.contains("_meta") && mappings["_meta"].is_object())
    return mappings["_meta"];
  return json::object();
}

json definition_in_epoch(std::int64_t epoch) {
  json definition = index_definition();
  definition["mappings"]["_meta"] = {{kMetaKey, {{"tokenEpoch", epoch}}}};
  return definition;
}

Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

// The _meta.eslease of an index as read: what it records about tokens. kProtocol when the
// record is there but malformed (a tokenEpoch that is not a non-negative integer).
Result<IndexTokens> tokens_of(const es::IndexDescription& described) {
  IndexTokens tokens;
  tokens.exists = true;
  tokens.uuid = described.uuid;
  const json meta = meta_of(described.mappings);
  auto record = meta.find(kMetaKey);
  if (record == meta.end() || !record->is_object() || !record->contains("tokenEpoch")) return tokens;
  const json& epoch = (*record)["tokenEpoch"];
  const bool valid = epoch.is_number_unsigned()
                         ? epoch.get<std::uint64_t>() <= std::uint64_t(kMaxEpoch)
                         : epoch.is_number_integer() && epoch.get<std::int64_t>() >= 0 &&
                               epoch.get<std::int64_t>() <= kMaxEpoch;
  if (!valid) {
    return make_error(ErrorCode::kProtocol, "the lock index's _meta." + std::string(kMetaKey) +
                                                ".tokenEpoch is not an integer from 0 to " +
                                                std::to_string(kMaxEpoch) + ": " +
                                                epoch.dump().substr(0, 100));
  }
  tokens.recorded = true;
  tokens.epoch = epoch.get<std::int64_t>();
  if (record->contains("indexUUID") && (*record)["indexUUID"].is_string())
    tokens.recorded_uuid = (*record)["indexUUID"].get<std::string>();
  return tokens;
}

}  // namespace

LockIndex::LockIndex(es::DocumentApi& api, std::string name, TokenGuard& guard)
    : api_(api), name_(std::move(name)), guard_(guard) {}

Status LockIndex::prepare(bool check_tokens) {
  // Read first and create only a missing index: a restart against an existing index then
  // sends no create that Elasticsearch would answer with a 400 (resource_already_exists).
  auto described = api_.describe_index(name_);
  if (!described.ok()) return with_context(described.error(), "cannot read lock index " + name_);
  // Which server answers, for the controller's log (the tool logs warnings only, and saves the
  // request): eslease relies on nothing that differs between them.
  if (log::enabled(log::Level::kInfo)) {
    if (auto server = api_.describe_server(); server.ok()) {
      log::info("connected to Elasticsearch",
                {{"engine", server->distribution}, {"version", server->version}, {"index", name_}});
    }
  }
  if (!*described) {
    auto created = api_.ensure_index(name_, definition_in_epoch(0));
    if (!created.ok()) return with_context(created.error(), "cannot create lock index " + name_);
    if (*created) log::info("created lock index", {{"index", name_}});
    described = api_.describe_index(name_);
  }
  if (!described.ok()) {
    log::warn("cannot read the lock index now; it is checked before the first grant",
              {{"index", name_}, {"error", described.error().describe()}});
    return {};
  }
  if (!*described) return {};  // deleted meanwhile: the first grant's check creates it
  bool foreign = false;
  if (Status fitted = fit_mapping(**described, foreign); !fitted.ok()) return fitted;
  std::lock_guard lock(check_mutex_);
  // Kept for the first check only (foreign: read again, its mapping just changed). A check
  // that ran meanwhile (the controller checks at the start of its leadership, maybe while
  // this is still preparing) makes it stale: a later check would take it for the index.
  if (!foreign && guard_.needs_check()) described_ = std::move(*described);
  return check_tokens ? check() : Status{};
}

Status LockIndex::ready_to_grant() {
  if (guard_.needs_check()) {
    std::lock_guard lock(check_mutex_);
    if (guard_.needs_check()) {
      if (Status checked = check(); !checked.ok()) return checked;
    }
  }
  return guard_.may_grant();
}

Status LockIndex::check_now() {
  std::lock_guard lock(check_mutex_);
  described_.reset();
  return check();
}

Status LockIndex::fit_mapping(const es::IndexDescription& described, bool& foreign) {
  const MappingCheck fit = check_mapping(described.mappings);
  if (fit.fit == MappingFit::kFits) return {};
  if (fit.fit == MappingFit::kConflicts) return make_error(ErrorCode::kInvalid, fit.problem);
  // An index a write created (after the lock index was deleted), or one created empty by
  // someone else: it gets the missing fields and becomes strict. Fields a write already
  // mapped as text stay so; lock documents fit them. An index an eslease made before lock
  // shapes existed just gets their fields: it is eslease's own.
  foreign = !fit.lacks_only_shape_fields;
  if (Status put = api_.put_mapping(name_, json{{"dynamic", "strict"}, {"properties", fit.missing}});
      !put.ok())
    return with_context(put.error(), "cannot give lock index " + name_ + " eslease's mapping");
  log::warn("gave the lock index eslease's mapping", {{"index", name_}, {"problem", fit.problem}});
  return {};
}

Status LockIndex::check() {
  auto fail = [&](Error error) -> Status {
    guard_.check_failed(error);
    // An Elasticsearch that cannot be reached is said as such: the check is made again once
    // it answers, and nothing is known yet to be wrong with the tokens.
    if (error.unavailable())
      log::warn("cannot reach Elasticsearch to check the lock index's fencing tokens; grants wait for it",
                {{"index", name_}, {"error", error.describe()}});
    else
      log::error("cannot prove the next fencing tokens larger than those issued before; grants are refused",
                 {{"index", name_}, {"error", error.describe()}});
    return with_context(std::move(error), "fencing tokens of lock index " + name_ + " unproven");
  };
  std::optional<es::IndexDescription> described = std::exchange(described_, std::nullopt);
  for (int round = 0; round < kMaxRounds; ++round) {
    if (!described) {
      auto read_now = api_.describe_index(name_);
      if (!read_now.ok()) return fail(read_now.error());
      if (!*read_now) {
        auto plan = guard_.plan(IndexTokens{});
        if (!plan.ok()) return fail(plan.error());
        auto made = api_.ensure_index(name_, definition_in_epoch(plan->epoch));
        if (!made.ok()) return fail(made.error());
        if (*made) log::warn("created the missing lock index", {{"index", name_}, {"epoch", plan->epoch}});
        continue;  // read it (ours, or one created meanwhile) and decide on what it says
      }
      described = std::move(*read_now);
    }
    bool foreign = false;
    if (Status fitted = fit_mapping(*described, foreign); !fitted.ok()) return fail(fitted.error());
    auto tokens = tokens_of(*described);
    if (!tokens.ok()) return fail(tokens.error());
    tokens->foreign = foreign;
    auto plan = guard_.plan(*tokens);
    if (!plan.ok()) return fail(plan.error());
    if (plan->record) {
      auto recorded = record(*described, plan->epoch);
      if (!recorded.ok()) return fail(recorded.error());
      plan->epoch = *recorded;
    }
    guard_.checked(*plan);
    if (plan->raised || plan->pause_until) {
      log::warn("raised the lock index's fencing token epoch",
                {{"index", name_},
                 {"epoch", plan->epoch},
                 {"recorded", tokens->epoch},
                 {"why", plan->why},
                 {"grants_paused", guard_.refusal() ? "yes" : "no"}});
    } else {
      log::info("checked the lock index's fencing tokens", {{"index", name_}, {"epoch", plan->epoch}});
    }
    return {};
  }
  return fail(make_error(ErrorCode::kConflict, "the lock index kept changing during the check"));
}

Result<std::int64_t> LockIndex::record(const es::IndexDescription& described, std::int64_t epoch) {
  json meta = meta_of(described.mappings);
  for (int round = 0; round < kMaxRounds; ++round) {
    meta[kMetaKey] = {{"tokenEpoch", epoch}, {"indexUUID", described.uuid}};
    if (Status put = api_.put_mapping(name_, json{{"_meta", meta}}); !put.ok()) return put.error();
    auto back = api_.describe_index(name_);
    if (!back.ok()) return back.error();
    if (!*back || (*back)->uuid != described.uuid)
      return make_error(ErrorCode::kConflict,
                        "the lock index was replaced while its token epoch was recorded");
    auto tokens = tokens_of(**back);
    if (!tokens.ok()) return tokens.error();
    if (tokens->recorded && tokens->recorded_uuid == described.uuid && tokens->epoch >= epoch)
      return tokens->epoch;
    // Another process recorded a lower epoch over ours: record ours again, keeping its other keys.
    meta = meta_of((*back)->mappings);
    if (tokens->recorded) epoch = std::max(epoch, tokens->epoch);
  }
  return make_error(ErrorCode::kConflict, "the lock index's token epoch kept changing while it was recorded");
}

}  // namespace eslease::lock
