// SessionKeeper's account of one tick: which grants its renewal covers, waits for or must
// list. Shared by the files that make up the keeper (session_keeper.cpp, session_renewal.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "controller/session_keeper.h"

namespace eslease::controller {

// What one tick learned about the grants of its namespace.
struct SessionKeeper::Coverage {
  // By grant, the id of a document of it (lock::slot_document_id):
  std::map<api::GrantRef, std::string> covered;  // documents renewed to the tick's moment, or later
  std::map<api::GrantRef, std::string> failed;   // ours, renewal not confirmed
  std::map<api::GrantRef, std::string> pending;  // shown Held, not yet adopted or decided
  std::map<api::GrantRef, std::string> stale;    // shown Held but not a grant we hold: list now
  std::map<api::GrantRef, Millis> durations;     // every grant seen, its lease duration
  std::optional<Millis> shortest;                // shortest lease duration held in the namespace
  bool any_answer = false;
  bool any_unavailable = false;
  bool renewed = false;  // the session now shows the tick's renewal
  void saw(const api::GrantRef& grant, Millis duration) {
    durations[grant] = duration;
    if (!shortest || duration < *shortest) shortest = duration;
  }
};

}  // namespace eslease::controller
