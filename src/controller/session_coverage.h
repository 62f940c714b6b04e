// SessionKeeper's account of one tick: which grants its renewal covers, waits for or must
// list. Shared by the files that make up the keeper (session_keeper.cpp, session_renewal.cpp).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "controller/session_keeper.h"

namespace eslease::controller {

// What one tick learned about the grants of its namespace.
struct SessionKeeper::Coverage {
  // Hashed: a tick of a namespace that holds tens of thousands of grants fills them.
  template <typename Value>
  using ByGrant = std::unordered_map<api::GrantRef, Value, api::GrantRefHash>;
  // By grant, the id of a document of it (lock::slot_document_id):
  ByGrant<std::string> covered;    // documents renewed to the tick's moment, or later
  ByGrant<std::string> failed;     // ours, renewal not confirmed
  ByGrant<std::string> pending;    // shown Held, not yet adopted or decided
  ByGrant<std::string> stale;      // shown Held but not a grant we hold: list now
  ByGrant<Millis> durations;       // every grant seen, its lease duration
  std::optional<Millis> shortest;  // shortest lease duration held in the namespace
  bool any_answer = false;
  bool any_unavailable = false;
  bool renewed = false;  // the session now shows the tick's renewal
  void saw(const api::GrantRef& grant, Millis duration) {
    durations[grant] = duration;
    if (!shortest || duration < *shortest) shortest = duration;
  }
};

}  // namespace eslease::controller
