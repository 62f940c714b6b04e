#include "controller/model.h"

#include <algorithm>

namespace eslease::controller {

const Condition* LeaseStatus::condition(const std::string& type) const {
  for (const Condition& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool LeaseRecord::has_finalizer() const {
  return std::find(finalizers.begin(), finalizers.end(), api::kFinalizer) != finalizers.end();
}

}  // namespace eslease::controller
