#include "controller/model.h"

#include <algorithm>

namespace eslease::controller {

const char* to_string(Priority priority) {
  return priority == Priority::kBackground ? "Background" : "Foreground";
}

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::kNone:
      return "";
    case Phase::kPending:
      return "Pending";
    case Phase::kHeld:
      return "Held";
    case Phase::kReleased:
      return "Released";
    case Phase::kTimedOut:
      return "TimedOut";
    case Phase::kInvalid:
      return "Invalid";
  }
  return "";
}

const Condition* LeaseStatus::condition(const std::string& type) const {
  for (const Condition& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool LeaseRecord::has_finalizer() const {
  return std::find(finalizers.begin(), finalizers.end(), api::kFinalizer) != finalizers.end();
}

}  // namespace eslease::controller
