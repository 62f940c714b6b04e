// `eslease run`: runs a command for as long as a lock is held. The supervisor owns the child
// process (its own process group, signal forwarding, SIGTERM then SIGKILL); a Hold says
// whether the lock is still ours and until when that is confirmed: direct mode renews the
// lock document itself, Kubernetes mode follows its Lease and the namespace's session, whose
// renewals the controller publishes.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace eslease::cli {

class Hold {
 public:
  struct State {
    bool lost = false;  // no longer ours: stop the command now
    std::string why;    // when lost, what happened, as the user is told
    // The command must be gone by then; it is asked to stop `grace` earlier.
    MonoTime confirmed_until{};
  };
  virtual ~Hold() = default;
  // Called on the supervisor's thread on every turn of its loop (every 20 ms): it reports and
  // must not block; renewing or following happens on the hold's own thread.
  virtual State check() = 0;
  // Once the command and everything it left running in its process group have exited: give
  // the lock up if still ours.
  virtual void finish(bool lost) = 0;
};

struct SuperviseOptions {
  std::vector<std::string> command;                              // CMD ARGS...
  std::vector<std::pair<std::string, std::string>> environment;  // replaces inherited values
  Millis grace{10000};  // SIGTERM -> SIGKILL, and how early before the confirmed end to stop
  std::string lock_id;  // for messages
  // --hold-at-least: the grant is kept until this long after `granted_at` (when the tool saw it
  // granted; unset: when the command starts), also when the command ends earlier.
  std::optional<Millis> hold_at_least;
  std::optional<MonoTime> granted_at;
};

// Starts the command with `environment` added, stops it (SIGTERM, then SIGKILL `grace` later
// and at the latest when the hold's confirmation ends) when the hold is lost or cannot be
// confirmed `grace` before it ends, forwards SIGINT/SIGTERM (the command runs in its own
// process group and every signal goes to the whole group), and finishes the hold once the
// command has exited and nothing of its group runs any more: what the command left running
// is stopped the same way (SIGTERM, SIGKILL `grace` later) before the lock is let go of; with
// `hold_at_least`, not before that much time has passed since the grant (a signal, or the grant
// ending, lets go at once). Returns
// kExitLockLost when the command was stopped for the lock, else the command's exit code (128 + signal when
// killed; 127 when it cannot be started).
int supervise(Hold& hold, Clock& clock, const SuperviseOptions& options, std::ostream& err);

}  // namespace eslease::cli
