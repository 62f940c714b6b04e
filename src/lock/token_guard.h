// Fencing tokens never go backwards, also across a lock index that was deleted and
// re-created, or restored from a snapshot.
//
// Within one index, tokens grow with its sequence numbers (document.h). A re-created or
// restored index starts those low again, so a token could come out smaller than one already
// issued: a protected store that keeps the largest token would refuse every new holder, or
// accept a superseded holder's late write. Three things prevent it:
//
// 1. The epoch. The lock index records a token epoch in its mapping (lock_index.h), and a
//    token carries its epoch in its top bits, so every token of a higher epoch is larger than
//    every token of a lower one, whatever their pairs.
// 2. What was issued before. The guard knows the largest token its store has read or
//    written, and what the caller reports (the controller: the largest token any Lease
//    status shows, and the longest lease duration of a grant shown Held).
// 3. The check. Before the first grant, and again whenever the index may have changed, the
//    store reads the index and the guard `plan`s its epoch: raised above the epoch of the
//    largest known token when the index is missing, was created without knowing what was
//    issued before, shows another UUID than the one recorded with its epoch (restored into a
//    new index, or copied), or records an epoch below a token issued. After that, a grant is
//    kept only if its token is larger than every token known before it was written
//    (`accept`): one that is not proves the index went back although the check passed (a
//    restore over the same index, a delete the store did not see). That grant, which
//    nobody has been told of, is undone, and the next check raises the epoch.
//
// When the index changed, grants made on the old one may still be valid while their
// documents are gone, so grants also pause until every validity this store handed out, and
// the longest lease duration the caller reports, has passed. "When in doubt, refuse to
// grant": the reason is reported (`refusal`) for the Leases' conditions and the logs.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/result.h"

namespace eslease::lock {

// Grants made before this store's, as far as the caller can tell.
struct IssuedBefore {
  std::int64_t largest_token = 0;  // the largest fencing token shown
  Millis longest_validity{0};      // the longest lease duration of a grant shown held
};
using IssuedBeforeSource = std::function<IssuedBefore()>;

// What the lock index says about its tokens now.
struct IndexTokens {
  bool exists = false;
  bool recorded = false;      // an epoch is recorded (an index set up by an eslease with epochs)
  bool foreign = false;       // its mapping was not eslease's: auto-created by a write, or another's
  std::int64_t epoch = 0;     // the recorded epoch (0 when none)
  std::string recorded_uuid;  // the UUID the epoch was recorded for ("" when none yet)
  std::string uuid;           // the index's own UUID ("" when missing)
};

// The check's outcome: the epoch grants use from now on, and what to do about it.
struct EpochPlan {
  std::int64_t epoch = 0;
  bool record = false;                  // write the epoch, with the index's UUID, into the index
  bool raised = false;                  // above what the index recorded
  std::optional<MonoTime> pause_until;  // the index changed: no grant before this
  std::string why;                      // for logs: what was found
};

// For metrics: the epoch grants use, and whether a grant was just refused.
struct FencingReport {
  std::int64_t epoch = 0;
  bool refused = false;
};

class TokenGuard {
 public:
  explicit TokenGuard(Clock& clock, std::function<void(const FencingReport&)> on_report = {});

  // Where grants made before this store's are learnt; the index is checked again.
  void set_source(IssuedBeforeSource source);

  // A token read or written by the store.
  void saw(std::int64_t token);
  // The holder of a grant made or renewed by the store may believe it holds until then.
  void handed_out(MonoTime valid_until);

  bool needs_check() const;
  // Decides on the index as read. kTokensExhausted when no epoch can be proven large enough.
  Result<EpochPlan> plan(const IndexTokens& index);
  // The plan was carried out: grants use its epoch (after its pause, if any).
  void checked(const EpochPlan& plan);
  void check_failed(const Error& error);

  // kGrantsPaused while grants are paused.
  Status may_grant();
  // The epoch new grants are written in (document.h).
  std::int64_t epoch() const;
  // The largest token known now; a grant written after this call must exceed it.
  std::int64_t floor() const;
  // True when `token`, of a grant written after `floor` was taken, is larger. Otherwise the
  // index went back: grants pause and the next check raises the epoch.
  bool accept(std::int64_t token, std::int64_t floor);
  // A grant this store renewed lost its document without anyone replacing it (the index, or
  // the document, was deleted; a restore): grants pause as above, and the next check raises
  // the epoch.
  void grant_vanished();

  // Why grants are refused now, if they are.
  std::optional<std::string> refusal() const;

 private:
  std::int64_t known_locked() const;
  void pause_locked(MonoTime until, const std::string& why);
  void report(bool refused) const;

  Clock& clock_;
  std::function<void(const FencingReport&)> on_report_;
  mutable std::mutex mutex_;
  IssuedBeforeSource source_;
  IssuedBefore reported_;  // by the source, at the last check
  std::int64_t largest_seen_ = 0;
  MonoTime latest_validity_{};
  std::int64_t epoch_ = 0;
  bool checked_ = false;
  bool raise_ = false;
  MonoTime paused_until_{};
  std::string pause_reason_;
  std::string check_error_;
};

}  // namespace eslease::lock
